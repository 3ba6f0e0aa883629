import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalLink, checkLinks, uniqueCanonicalLinks } from '../../../src/domain/knowledgebase/links.js';

describe('canonicalLink', () => {
  // Each group: spellings of one page, and the one link they all become.
  const samePage: Array<{ name: string; spellings: string[]; canonical: string }> = [
    {
      name: 'scheme and host case, dot segments',
      spellings: ['HTTPS://Example.com/a/../b', 'https://EXAMPLE.COM/b', 'https://example.com/./b', 'https://example.com/a/%2E%2E/b', 'https://example.com/b'],
      canonical: 'https://example.com/b',
    },
    {
      name: 'percent-encoded unreserved characters decoded',
      spellings: ['https://example.com/%7Euser/%41%2d%5F%2E', 'https://example.com/%7euser/A-_.', 'https://example.com/~user/A-_.'],
      canonical: 'https://example.com/~user/A-_.',
    },
    {
      name: 'other percent-escapes upper-cased, reserved ones kept',
      spellings: ['https://example.com/a%2fb%3a%e2%82%ac', 'https://example.com/a%2Fb%3A%E2%82%AC', 'https://example.com/a%2fb%3A€'],
      canonical: 'https://example.com/a%2Fb%3A%E2%82%AC',
    },
    {
      name: 'default port removed, one trailing dot of the host removed',
      spellings: ['https://example.com:443/x', 'https://example.com./x', 'https://example.com.:443/x', 'https://example.com/x'],
      canonical: 'https://example.com/x',
    },
    { name: 'http default port', spellings: ['http://example.com:80/', 'http://example.com'], canonical: 'http://example.com/' },
    {
      name: 'an IDN host and its punycode',
      spellings: ['https://bücher.example/', 'https://BÜCHER.example/', 'https://xn--bcher-kva.example/', 'https://b%C3%BCcher.example'],
      canonical: 'https://xn--bcher-kva.example/',
    },
    {
      name: 'fragment removed',
      spellings: ['https://example.com/doc#intro', 'https://example.com/doc#', 'https://example.com/doc'],
      canonical: 'https://example.com/doc',
    },
    { name: 'empty path', spellings: ['https://example.com', 'https://example.com/', 'HTTPS://EXAMPLE.COM:443'], canonical: 'https://example.com/' },
    { name: 'IPv4 spellings', spellings: ['http://0x7f.1/', 'http://2130706433/', 'http://127.0.0.1./'], canonical: 'http://127.0.0.1/' },
    { name: 'IPv6 spellings', spellings: ['https://[0:0:0:0:0:0:0:1]:443/', 'https://[::1]/'], canonical: 'https://[::1]/' },
    {
      name: 'query escapes: unreserved decoded, others upper-cased',
      spellings: ['https://example.com/s?q=%7e%2f', 'https://example.com/s?q=~%2F'],
      canonical: 'https://example.com/s?q=~%2F',
    },
    { name: 'non-ASCII path', spellings: ['https://example.com/ä ö', 'https://example.com/%c3%a4%20%c3%b6'], canonical: 'https://example.com/%C3%A4%20%C3%B6' },
  ];
  it.each(samePage)('one page, one link: $name', ({ spellings, canonical }) => {
    for (const spelling of spellings) expect(canonicalLink(spelling), spelling).toBe(canonical);
  });

  // Not the same page: what the canonical form deliberately keeps apart.
  const different: Array<[string, string]> = [
    ['http://example.com/', 'https://example.com/'],
    ['https://example.com/a', 'https://example.com/a/'],
    ['https://example.com/A', 'https://example.com/a'],
    ['https://example.com:8443/', 'https://example.com/'],
    ['https://example.com/?a=1&b=2', 'https://example.com/?b=2&a=1'],
    ['https://example.com/?', 'https://example.com/'],
    ['https://example.com/?q=a+b', 'https://example.com/?q=a%20b'],
    ['https://example.com/a%2Fb', 'https://example.com/a/b'],
    ['https://example.com./', 'https://example.com../'],
  ];
  it.each(different)('keeps %s and %s apart', (a, b) => {
    expect(canonicalLink(a)).not.toBe(canonicalLink(b));
  });

  it('keeps the query as written (order, empty values, repeated keys, an empty query)', () => {
    expect(canonicalLink('https://example.com/s?b=2&a=&a=1&&c')).toBe('https://example.com/s?b=2&a=&a=1&&c');
    expect(canonicalLink('https://example.com/s?')).toBe('https://example.com/s?');
  });

  it('is idempotent and its result is what WHATWG URL parsing gives back', () => {
    fc.assert(
      fc.property(fc.webUrl({ withQueryParameters: true, withFragments: true, validSchemes: ['http', 'https'] }), (url) => {
        const once = canonicalLink(url);
        expect(canonicalLink(once)).toBe(once);
        expect(new URL(once).href).toBe(once);
        expect(once).not.toContain('#');
      }),
      { numRuns: 500 },
    );
  });
});

describe('uniqueCanonicalLinks', () => {
  it('maps links to their canonical form, one per page, in first-seen order', () => {
    expect(
      uniqueCanonicalLinks(['https://b.example/x', 'HTTPS://A.example', 'https://b.example:443/x#top', 'https://a.example/', 'https://c.example/%7e']),
    ).toEqual(['https://b.example/x', 'https://a.example/', 'https://c.example/~']);
  });

  it('checkLinks still returns the links as sent (callers answer in their own spelling)', () => {
    expect(checkLinks(['HTTPS://Example.com/a/../b', 'https://example.com/b'])).toEqual({
      links: ['HTTPS://Example.com/a/../b', 'https://example.com/b'],
    });
  });
});
