/** What a crawl may fetch and what it reads from pages and sitemaps (crawl-scope.ts, crawl-page.ts): pure functions, a table of cases each. */
import zlib from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { MAX_SITEMAP_URLS, readPageLinks, readSitemap } from '../../../src/domain/knowledgebase/crawl-page.js';
import {
  crawlDelayMs,
  type CrawlScope,
  linkTarget,
  MAX_ROBOTS_WILDCARD_CHARS,
  MAX_VERDICT_WORK,
  pathPrefixOf,
  patternProblem,
  robotsProblem,
  scopeChecker,
  wildcardChars,
} from '../../../src/domain/knowledgebase/crawl-scope.js';
import { ExtractError } from '../../../src/domain/knowledgebase/extract.js';
import { USER_AGENT } from '../../../src/net/guarded-fetch.js';

const scope = (over: Partial<CrawlScope> = {}): CrawlScope => ({
  origin: 'https://d.example',
  prefix: '/docs/',
  include: [],
  exclude: [],
  robotsTxt: null,
  ...over,
});

describe('path prefix (wget --no-parent)', () => {
  it.each([
    ['https://d.example/docs/intro', '/docs/'],
    ['https://d.example/docs/', '/docs/'],
    ['https://d.example/docs', '/'],
    ['https://d.example/', '/'],
    ['https://d.example/a/b/c.html?x=1', '/a/b/'],
  ])('%s → %s', (url, prefix) => expect(pathPrefixOf(url)).toBe(prefix));
});

describe('scope', () => {
  it('origin and prefix', () => {
    const check = scopeChecker(scope());
    expect(check('https://d.example/docs/a')).toBe('ok');
    expect(check('https://d.example/docs/')).toBe('ok');
    expect(check('https://d.example/docsx')).toBe('outside');
    expect(check('https://d.example/other')).toBe('outside');
    expect(check('http://d.example/docs/a')).toBe('outside');
    expect(check('https://d.example:8443/docs/a')).toBe('outside');
    expect(check('https://e.example/docs/a')).toBe('outside');
  });

  it('include and exclude in robots.txt syntax: exclude wins, `*` and `$`', () => {
    const check = scopeChecker(scope({ include: ['/docs/guide/', '*.html$'], exclude: ['/docs/guide/old', '*?print'] }));
    expect(check('https://d.example/docs/guide/a')).toBe('ok');
    expect(check('https://d.example/docs/x/y.html')).toBe('ok');
    expect(check('https://d.example/docs/x/y.html?q=1')).toBe('excluded');
    expect(check('https://d.example/docs/guide/old/a')).toBe('excluded');
    expect(check('https://d.example/docs/guide/a?print=1')).toBe('excluded');
    expect(check('https://d.example/docs/api/a')).toBe('excluded');
  });

  it('a pattern built to make a regular expression backtrack is matched in bounded time', () => {
    const check = scopeChecker(scope({ exclude: [`/docs/${'*a'.repeat(40)}b`] }));
    const url = `https://d.example/docs/${'a'.repeat(2000)}`;
    expect(check(url)).toBe('ok');
  });

  it('robots.txt: the group naming the service wins over `*`; Allow and Disallow by the longest match; Crawl-delay', () => {
    const robotsTxt = `User-agent: *\nDisallow: /\n\nUser-agent: ${USER_AGENT.split('/')[0]}\nDisallow: /docs/private\nAllow: /docs/private/open\nCrawl-delay: 2.5\n`;
    const check = scopeChecker(scope({ robotsTxt }));
    expect(check('https://d.example/docs/a')).toBe('ok');
    expect(check('https://d.example/docs/private/x')).toBe('robots');
    expect(check('https://d.example/docs/private/open/x')).toBe('ok');
    expect(crawlDelayMs('https://d.example', robotsTxt)).toBe(2500);
    expect(crawlDelayMs('https://d.example', 'User-agent: *\nCrawl-delay: 1\n')).toBe(1000);
    expect(crawlDelayMs('https://d.example', 'User-agent: other\nCrawl-delay: 9\n')).toBe(0);
    expect(crawlDelayMs('https://d.example', null)).toBe(0);
    expect(scopeChecker(scope({ robotsTxt: 'User-agent: *\nDisallow: /docs/\n' }))('https://d.example/docs/a')).toBe('robots');
  });
});

describe('patterns', () => {
  it.each([
    ['/docs/', null],
    ['*.pdf$', null],
    ['docs/', /start with/],
    ['', /empty/],
    ['/a b', /white space/],
    ['/a#b', /"#"/],
    ['/a\nDisallow: /', /white space/],
    [`/${'x'.repeat(600)}`, /at most 512/],
    [7, /string/],
  ])('%j', (pattern, problem) => {
    const found = patternProblem(pattern);
    if (problem === null) expect(found).toBeNull();
    else expect(found).toMatch(problem);
  });
});

describe('link targets', () => {
  it.each([
    ['b?x=1#frag', 'https://d.example/docs/a', 'https://d.example/docs/b?x=1'],
    ['../up', 'https://d.example/docs/a', 'https://d.example/up'],
    ['HTTPS://D.EXAMPLE/%7Ex', 'https://d.example/', 'https://d.example/~x'],
    ['mailto:x@d.example', 'https://d.example/', null],
    ['javascript:void(0)', 'https://d.example/', null],
    ['https://user:pw@d.example/', 'https://d.example/', null],
    ['#top', 'https://d.example/docs/a', 'https://d.example/docs/a'],
  ])('%s on %s', (href, base, target) => expect(linkTarget(href, base)).toBe(target));
});

describe('page links', () => {
  const html = (body: string, head = '') => Buffer.from(`<!doctype html><html><head>${head}</head><body>${body}</body></html>`);
  it('in scope, once each, robots-blocked counted; base, canonical, nofollow and noindex', () => {
    const robotsTxt = 'User-agent: *\nDisallow: /docs/no\n';
    const read = readPageLinks(
      html(
        '<a href="a">a</a><a href="a#x">again</a><area href="/docs/b"><a href="/docs/no/x">blocked</a><a href="/out">out</a><a rel="nofollow" href="/docs/c">c</a>',
        '<base href="/docs/"><link rel="canonical" href="/docs/main"><meta name="robots" content="noindex">',
      ),
      'text/html',
      'https://d.example/docs/sub/page',
      scope({ robotsTxt }),
    );
    expect(read).toEqual({
      links: ['https://d.example/docs/a', 'https://d.example/docs/b'],
      blocked: 1,
      canonical: 'https://d.example/docs/main',
      canonicalVerdict: 'ok',
      finalVerdict: 'ok',
      noindex: true,
    });
    const nofollow = readPageLinks(html('<a href="/docs/a">a</a>', '<meta name="ROBOTS" content="NOFOLLOW">'), 'text/html', 'https://d.example/docs/', scope());
    expect(nofollow.links).toEqual([]);
    expect(readPageLinks(Buffer.from('see /docs/a'), 'text/plain', 'https://d.example/docs/', scope()).links).toEqual([]);
    expect(readPageLinks(html(''), 'text/html', 'https://d.example/elsewhere', scope()).finalVerdict).toBe('outside');
  });

  it("in the page's own encoding, as its text is read: UTF-16 (by its byte order mark) and windows-1252 (by its charset)", () => {
    const markup = '<!doctype html><html><body><a href="/docs/u16">u</a></body></html>';
    const utf16 = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(markup, 'utf16le')]);
    expect(readPageLinks(utf16, 'text/html', 'https://d.example/docs/', scope()).links).toEqual(['https://d.example/docs/u16']);
    const latin = Buffer.from('<!doctype html><html><body><a href="/docs/caf\xe9">caf\xe9</a></body></html>', 'latin1');
    expect(readPageLinks(latin, 'text/html; charset=windows-1252', 'https://d.example/docs/', scope()).links).toEqual(['https://d.example/docs/caf%C3%A9']);
  });
});

describe('sitemaps', () => {
  const urlset = (locs: string[]) =>
    `<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${locs.map((l) => `<url><loc> ${l} </loc></url>`).join('')}</urlset>`;
  const site = scope({ prefix: '/', robotsTxt: 'User-agent: *\nDisallow: /private\n' });

  it('a urlset: its URLs in scope, robots-blocked counted; gzipped too', () => {
    const xml = urlset([
      'https://d.example/a',
      'https://d.example/a',
      'https://d.example/private/b',
      'https://other.example/c',
      'https://d.example/d?x=1&amp;y=2',
    ]);
    const expected = { kind: 'urlset', urls: ['https://d.example/a', 'https://d.example/d?x=1&y=2'], blocked: 1 };
    expect(readSitemap(Buffer.from(xml), site, 1 << 20)).toEqual(expected);
    expect(readSitemap(zlib.gzipSync(xml), site, 1 << 20)).toEqual(expected);
  });

  it('an index: its sitemaps on the origin; a namespace prefix; not a sitemap', () => {
    const index = `<sm:sitemapindex xmlns:sm="http://www.sitemaps.org/schemas/sitemap/0.9"><sm:sitemap><sm:loc>https://d.example/s1.xml.gz</sm:loc></sm:sitemap><sm:sitemap><sm:loc>https://other.example/s2.xml</sm:loc></sm:sitemap></sm:sitemapindex>`;
    expect(readSitemap(Buffer.from(index), site, 1 << 20)).toEqual({ kind: 'sitemapindex', urls: ['https://d.example/s1.xml.gz'], blocked: 0 });
    expect(readSitemap(Buffer.from('<html><body><loc>https://d.example/a</loc></body></html>'), site, 1 << 20).kind).toBe('unknown');
    expect(readSitemap(Buffer.from(''), site, 1 << 20)).toEqual({ kind: 'unknown', urls: [], blocked: 0 });
  });

  it('an entity is never expanded; a gzip bomb is refused; at most 50,000 URLs', () => {
    const bomb = `<?xml version="1.0"?><!DOCTYPE urlset [<!ENTITY a "https://d.example/aaaaaaaaaa">]><urlset><url><loc>&a;</loc></url></urlset>`;
    expect(readSitemap(Buffer.from(bomb), site, 1 << 20).urls).toEqual([]);
    expect(() => readSitemap(zlib.gzipSync(Buffer.alloc(4 << 20, 32)), site, 1 << 20)).toThrow(ExtractError);
    const many = urlset(Array.from({ length: MAX_SITEMAP_URLS + 10 }, (_, i) => `https://d.example/p${i}`));
    expect(readSitemap(Buffer.from(many), site, 64 << 20).urls).toHaveLength(MAX_SITEMAP_URLS);
  });
});

describe('what a verdict costs, bounded', () => {
  const bomb = (rules: number) =>
    `User-agent: *\n${Array.from({ length: rules }, (_, i) => `Disallow: /*${'a*'.repeat(24)}x${String(i).padStart(4, '0')}`).join('\n')}\n`;

  it('a robots.txt whose rules hold more than MAX_ROBOTS_WILDCARD_CHARS after a "*" is refused; an ordinary one is not', () => {
    expect(wildcardChars('/docs/*/private')).toBe(8);
    expect(wildcardChars('/docs/private')).toBe(0);
    expect(robotsProblem(null)).toBeNull();
    expect(robotsProblem('User-agent: *\nDisallow: /*/private\nAllow: /*.css$\nCrawl-delay: 1\n')).toBeNull();
    const perRule = wildcardChars(`/*${'a*'.repeat(24)}x0001`);
    const rules = Math.floor(MAX_ROBOTS_WILDCARD_CHARS / perRule);
    expect(robotsProblem(bomb(rules))).toBeNull();
    expect(robotsProblem(bomb(rules + 2))).toMatch(/^The site's robots\.txt holds \d+ characters of rules after a "\*", more than the 16384/);
  });

  it("a page's links are checked within MAX_VERDICT_WORK: those past it are not followed", () => {
    // Within the bound, the heaviest robots.txt: each check of a 2,000-character link costs about 32 million steps.
    const robotsTxt = bomb(Math.floor(MAX_ROBOTS_WILDCARD_CHARS / wildcardChars(`/*${'a*'.repeat(24)}x0001`)));
    const s = scope({ robotsTxt });
    const href = (i: number) => `/docs/${'a'.repeat(2000)}${i}`;
    const work = scopeChecker(s).work(`https://d.example${href(0)}`);
    expect(work).toBeGreaterThan(MAX_VERDICT_WORK / 10);
    const body = Buffer.from(`<html><body>${Array.from({ length: 400 }, (_, i) => `<a href="${href(i)}">x</a>`).join('')}</body></html>`);
    const read = readPageLinks(body, 'text/html', 'https://d.example/docs/', s);
    expect(read.links.length + read.blocked).toBeLessThanOrEqual(Math.floor(MAX_VERDICT_WORK / work));
    expect(read.links.length).toBeGreaterThan(0);
  });
});
