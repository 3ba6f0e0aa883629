import { describe, expect, it } from 'vitest';
import { checkLinks, MAX_LINK_LENGTH, MAX_LINK_PROBLEMS, MAX_LINKS_PER_REQUEST } from '../../../src/domain/knowledgebase/links.js';

const longUrl = (length: number): string => {
  const base = 'https://example.com/';
  return base + 'a'.repeat(length - base.length);
};

const FORMATTING = (codePoint: string): string => `must not contain control or invisible formatting characters (${codePoint}).`;

describe('checkLinks', () => {
  const accepted: Array<{ name: string; input: unknown; links: string[] }> = [
    { name: 'one https link', input: ['https://example.com/docs'], links: ['https://example.com/docs'] },
    {
      name: 'http, ports, IPs, queries and fragments',
      input: ['http://example.com:8080/a?b=c#d', 'http://127.0.0.1/x', 'https://[::1]:8443/'],
      links: ['http://example.com:8080/a?b=c#d', 'http://127.0.0.1/x', 'https://[::1]:8443/'],
    },
    {
      name: 'links are returned exactly as sent (the service stores their canonical form)',
      input: ['HTTPS://Example.COM', 'https://example.com/a/../b', 'https://bücher.example/ä ö'],
      links: ['HTTPS://Example.COM', 'https://example.com/a/../b', 'https://bücher.example/ä ö'],
    },
    {
      name: 'letters, joiners that words need (ZWNJ, ZWJ) and percent-escaped controls',
      input: ['https://fa.example/\u0645\u06cc\u200c\u0634\u0648\u062f', 'https://e.example/\ud83d\udc69\u200d\ud83d\udcbb', 'https://e.example/%E2%80%AE%09'],
      links: ['https://fa.example/\u0645\u06cc\u200c\u0634\u0648\u062f', 'https://e.example/\ud83d\udc69\u200d\ud83d\udcbb', 'https://e.example/%E2%80%AE%09'],
    },
    {
      name: 'exact duplicates are dropped, first occurrence kept',
      input: ['https://b.example', 'https://a.example', 'https://b.example', 'https://a.example/'],
      links: ['https://b.example', 'https://a.example', 'https://a.example/'],
    },
    {
      name: `${MAX_LINKS_PER_REQUEST} links`,
      input: Array.from({ length: MAX_LINKS_PER_REQUEST }, (_, i) => `https://example.com/${i}`),
      links: Array.from({ length: MAX_LINKS_PER_REQUEST }, (_, i) => `https://example.com/${i}`),
    },
    { name: `a link of exactly ${MAX_LINK_LENGTH} characters`, input: [longUrl(MAX_LINK_LENGTH)], links: [longUrl(MAX_LINK_LENGTH)] },
  ];
  it.each(accepted)('accepts $name', ({ input, links }) => {
    expect(checkLinks(input)).toEqual({ links });
  });

  const whole: Array<{ name: string; input: unknown; reason: string; index?: number }> = [
    { name: 'undefined', input: undefined, reason: 'links must be an array of URL strings.' },
    { name: 'null', input: null, reason: 'links must be an array of URL strings.' },
    { name: 'a single string', input: 'https://example.com', reason: 'links must be an array of URL strings.' },
    { name: 'an object', input: { 0: 'https://example.com', length: 1 }, reason: 'links must be an array of URL strings.' },
    { name: 'an empty array', input: [], reason: 'links must contain at least one URL.' },
    {
      name: 'too many links',
      input: Array.from({ length: MAX_LINKS_PER_REQUEST + 1 }, () => 'https://example.com'),
      reason: `links may contain at most ${MAX_LINKS_PER_REQUEST} URLs per request (got ${MAX_LINKS_PER_REQUEST + 1}).`,
      index: MAX_LINKS_PER_REQUEST,
    },
  ];
  it.each(whole)('refuses $name as a whole', ({ input, reason, index = -1 }) => {
    expect(checkLinks(input)).toEqual({ problems: [{ index, reason }] });
  });

  const HTTP_ONLY = 'must be an absolute URL starting with http:// or https://.';
  const entries: Array<{ name: string; entry: unknown; reason: string }> = [
    { name: 'a number', entry: 42, reason: 'must be a string, not a number.' },
    { name: 'null', entry: null, reason: 'must be a string, not null.' },
    { name: 'an object', entry: { url: 'https://example.com' }, reason: 'must be a string, not an object.' },
    { name: 'an array', entry: ['https://example.com'], reason: 'must be a string, not an array.' },
    { name: 'an empty string', entry: '', reason: 'must not be empty.' },
    {
      name: 'a too long link',
      entry: longUrl(MAX_LINK_LENGTH + 1),
      reason: `is ${MAX_LINK_LENGTH + 1} characters long; at most ${MAX_LINK_LENGTH} are allowed.`,
    },
    { name: 'surrounding whitespace', entry: ' https://example.com', reason: 'must not start or end with whitespace.' },
    { name: 'a trailing newline', entry: 'https://example.com\n', reason: 'must not start or end with whitespace.' },
    { name: 'an embedded tab', entry: 'https://exam\tple.com', reason: FORMATTING('U+0009') },
    { name: 'an embedded NUL', entry: 'https://example.com/\u0000', reason: FORMATTING('U+0000') },
    { name: 'a DEL', entry: 'https://example.com/a\u007f', reason: FORMATTING('U+007F') },
    { name: 'a right-to-left override', entry: 'https://e.example/\u202egnp.exe', reason: FORMATTING('U+202E') },
    { name: 'a left-to-right embedding', entry: 'https://e.example/\u202a', reason: FORMATTING('U+202A') },
    { name: 'a pop directional formatting', entry: 'https://e.example/a\u202cb', reason: FORMATTING('U+202C') },
    { name: 'a right-to-left isolate', entry: 'https://e.example/\u2067x', reason: FORMATTING('U+2067') },
    { name: 'a pop directional isolate', entry: 'https://e.example/x\u2069', reason: FORMATTING('U+2069') },
    { name: 'a left-to-right mark', entry: 'https://e.example/\u200e', reason: FORMATTING('U+200E') },
    { name: 'a right-to-left mark in the host', entry: 'https://e\u200f.example/', reason: FORMATTING('U+200F') },
    { name: 'an Arabic letter mark', entry: 'https://e.example/?q=\u061c', reason: FORMATTING('U+061C') },
    { name: 'a C1 control (NEL)', entry: 'https://e.example/\u0085', reason: FORMATTING('U+0085') },
    { name: 'a C1 control (first)', entry: 'https://e.example/\u0080', reason: FORMATTING('U+0080') },
    { name: 'a C1 control (last)', entry: 'https://e.example/\u009f', reason: FORMATTING('U+009F') },
    { name: 'a zero-width space', entry: 'https://e.example/a\u200bb', reason: FORMATTING('U+200B') },
    { name: 'a word joiner', entry: 'https://e.example/a\u2060b', reason: FORMATTING('U+2060') },
    { name: 'a byte order mark inside', entry: 'https://e.example/a\ufeffb', reason: FORMATTING('U+FEFF') },
    { name: 'a line separator inside', entry: 'https://e.example/a\u2028b', reason: FORMATTING('U+2028') },
    { name: 'a Unicode tag character', entry: 'https://e.example/a\u{E0041}b', reason: FORMATTING('U+E0041') },
    { name: 'a bidi control in the fragment', entry: 'https://e.example/a#\u202e', reason: FORMATTING('U+202E') },
    { name: 'a relative path', entry: '/docs/page', reason: HTTP_ONLY },
    { name: 'a bare host', entry: 'example.com', reason: HTTP_ONLY },
    { name: 'a scheme-relative URL', entry: '//example.com', reason: HTTP_ONLY },
    { name: 'ftp', entry: 'ftp://example.com/file', reason: HTTP_ONLY },
    { name: 'file', entry: 'file:///etc/passwd', reason: HTTP_ONLY },
    { name: 'javascript', entry: 'javascript:alert(1)', reason: HTTP_ONLY },
    { name: 'mailto', entry: 'mailto:someone@example.com', reason: HTTP_ONLY },
    { name: 'data', entry: 'data:text/html,<p>x</p>', reason: HTTP_ONLY },
    { name: 'http: without slashes', entry: 'http:example.com', reason: HTTP_ONLY },
    { name: 'three slashes', entry: 'http:///example.com', reason: 'has no host.' },
    { name: 'backslashes', entry: 'https:\\\\example.com', reason: HTTP_ONLY },
    { name: 'no host at all', entry: 'https://', reason: 'has no host.' },
    { name: 'a query where the host should be', entry: 'https://?q=1', reason: 'has no host.' },
    { name: 'only a port', entry: 'https://:443/', reason: 'is not a valid URL.' },
    { name: 'a port out of range', entry: 'https://example.com:99999/', reason: 'is not a valid URL.' },
    { name: 'a space in the host', entry: 'https://exa mple.com/', reason: 'is not a valid URL.' },
    { name: 'credentials', entry: 'https://user:secret@example.com/', reason: 'must not contain a user name or password.' },
    { name: 'a user name only', entry: 'https://user@example.com/', reason: 'must not contain a user name or password.' },
  ];
  it.each(entries)('refuses an entry that is $name', ({ entry, reason }) => {
    expect(checkLinks(['https://ok.example', entry])).toEqual({ problems: [{ index: 1, reason }] });
  });

  it('reports every offending index, and no links, when some are bad', () => {
    expect(checkLinks(['https://ok.example', 'ftp://x', 'https://ok.example/2', 7, ''])).toEqual({
      problems: [
        { index: 1, reason: HTTP_ONLY },
        { index: 3, reason: 'must be a string, not a number.' },
        { index: 4, reason: 'must not be empty.' },
      ],
    });
  });

  it(`stops after ${MAX_LINK_PROBLEMS} problems`, () => {
    const result = checkLinks(Array.from({ length: 500 }, (_, i) => (i % 2 === 0 ? `https://ok.example/${i}` : `bad ${i}`)));
    expect('problems' in result && result.problems.map((p) => p.index)).toEqual(Array.from({ length: MAX_LINK_PROBLEMS }, (_, i) => 2 * i + 1));
  });
});
