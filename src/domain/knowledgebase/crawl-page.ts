/**
 * What a crawl reads from what it fetched, on a task thread (synchronous CPU work on bytes a
 * remote server chose): a page's links, canonical URL and robots meta tag beside its passages,
 * and a sitemap's URLs. HTML and XML are read by htmlparser2's streaming tokenizer (the HTML
 * parser extraction already uses; in XML mode for sitemaps): nothing but the wanted values is
 * kept, and no DTD entity is ever expanded, so a 50 MB sitemap or a hostile one costs its
 * bytes once. (The `sitemap` package parses with sax as a Node stream, whose items arrive
 * asynchronously: a task thread answers synchronously. fast-xml-parser would build the
 * whole tree of a 50,000-URL sitemap to read one element of each.)
 */
import zlib from 'node:zlib';
import { Parser } from 'htmlparser2';
import { ExtractError, htmlText } from './extract.js';
import type { PackedPassages } from './passages.js';
import { type CrawlScope, linkTarget, MAX_VERDICT_WORK, scopeChecker, type Verdict } from './crawl-scope.js';

/** Links read from one page at most (a page listing more is read to here). */
export const MAX_PAGE_LINKS = 5000;
/** URLs read from one sitemap at most: the protocol's own limit. */
export const MAX_SITEMAP_URLS = 50_000;

/** What a crawl reads from a fetched page besides its passages. */
export interface PageLinks {
  /** The in-scope links it holds that robots.txt allows, canonical, each once, in page order (none under `nofollow`). */
  links: string[];
  /** In-scope links robots.txt disallows. */
  blocked: number;
  /** Its `<link rel="canonical">`, canonical, or null. */
  canonical: string | null;
  canonicalVerdict: Verdict | null;
  /** The verdict on the URL it was finally fetched from (after redirects). */
  finalVerdict: Verdict;
  /** `<meta name="robots">` (or the service's own name) says noindex. */
  noindex: boolean;
}

/** A fetched page of a crawl as the task thread reads it. */
export interface CrawledPage extends PageLinks {
  /** Its passages (as the `passages` task gives them), or null when `extractError` says why it has none. */
  passages: PackedPassages | null;
  extractError: string | null;
}

const HTML_TYPES = new Set(['text/html', 'application/xhtml+xml']);

function isHtml(body: Buffer, contentType: string | null): boolean {
  const type = contentType?.split(';')[0]?.trim().toLowerCase() ?? '';
  if (type !== '') return HTML_TYPES.has(type);
  return /^\s*</.test(body.subarray(0, 256).toString('latin1'));
}

/** Reads a fetched page's links and canonical URL within the crawl's scope (HTML only; other pages have none). */
export function readPageLinks(body: Buffer, contentType: string | null, finalUrl: string, scope: CrawlScope): PageLinks {
  const verdict = scopeChecker(scope);
  const finalVerdict = verdict(linkTarget(finalUrl, finalUrl) ?? finalUrl);
  const out: PageLinks = { links: [], blocked: 0, canonical: null, canonicalVerdict: null, finalVerdict, noindex: false };
  if (!isHtml(body, contentType)) return out;
  const html = readHtmlLinks(htmlText(body, contentType), finalUrl);
  out.noindex = html.noindex;
  out.canonical = html.canonical;
  out.canonicalVerdict = html.canonical === null ? null : verdict(html.canonical);
  if (html.nofollow) return out;
  const seen = new Set<string>();
  let work = 0;
  for (const href of html.hrefs) {
    const target = linkTarget(href, html.base);
    if (target === null || seen.has(target)) continue;
    seen.add(target);
    // Checked within MAX_VERDICT_WORK (crawl-scope.ts); the links past it are not followed.
    work += verdict.work(target);
    if (work > MAX_VERDICT_WORK) break;
    const v = verdict(target);
    if (v === 'ok' && out.links.length < MAX_PAGE_LINKS) out.links.push(target);
    else if (v === 'robots') out.blocked++;
  }
  return out;
}

interface HtmlLinks {
  hrefs: string[];
  base: string;
  canonical: string | null;
  noindex: boolean;
  nofollow: boolean;
}

const NAMES = new Set(['robots', 'copilot-management-service']);

function readHtmlLinks(html: string, pageUrl: string): HtmlLinks {
  const out: HtmlLinks = { hrefs: [], base: pageUrl, canonical: null, noindex: false, nofollow: false };
  let baseSeen = false;
  let canonicalHref: string | null = null;
  const parser = new Parser(
    {
      onopentag(name, attribs) {
        if ((name === 'a' || name === 'area') && attribs.href !== undefined) {
          if (out.hrefs.length < MAX_PAGE_LINKS * 2 && !/\bnofollow\b/i.test(attribs.rel ?? '')) out.hrefs.push(attribs.href);
        } else if (name === 'base' && !baseSeen && attribs.href !== undefined) {
          baseSeen = true;
          try {
            out.base = new URL(attribs.href.trim(), pageUrl).href;
          } catch {
            // an unusable <base> is ignored, as browsers do
          }
        } else if (name === 'link' && canonicalHref === null && attribs.href !== undefined && /(^|\s)canonical(\s|$)/i.test(attribs.rel ?? '')) {
          canonicalHref = attribs.href;
        } else if (name === 'meta' && NAMES.has((attribs.name ?? '').trim().toLowerCase())) {
          const content = (attribs.content ?? '').toLowerCase();
          if (/\b(noindex|none)\b/.test(content)) out.noindex = true;
          if (/\b(nofollow|none)\b/.test(content)) out.nofollow = true;
        }
      },
    },
    { decodeEntities: true, lowerCaseTags: true, lowerCaseAttributeNames: true },
  );
  parser.end(html);
  if (canonicalHref !== null) out.canonical = linkTarget(canonicalHref, out.base);
  return out;
}

export interface SitemapRead {
  /** `urlset` (a sitemap), `sitemapindex` (a list of sitemaps) or `unknown` (neither). */
  kind: 'urlset' | 'sitemapindex' | 'unknown';
  /** urlset: its URLs in scope that robots.txt allows; sitemapindex: its sitemaps on the scope's origin. Canonical, each once. */
  urls: string[];
  /** In-scope URLs robots.txt disallows. */
  blocked: number;
}

const GZIP_MAGIC = [0x1f, 0x8b];

/**
 * Reads a sitemap or sitemap index (sitemaps.org), gzipped or not: its `<loc>`s, at most
 * MAX_SITEMAP_URLS. A gzipped body may unpack to at most `maxBytes`.
 */
export function readSitemap(body: Buffer, scope: CrawlScope, maxBytes: number): SitemapRead {
  let xml = body;
  if (body[0] === GZIP_MAGIC[0] && body[1] === GZIP_MAGIC[1]) {
    try {
      xml = zlib.gunzipSync(body, { maxOutputLength: maxBytes });
    } catch (err) {
      throw new ExtractError(
        err instanceof RangeError ? `The gzipped sitemap unpacks to more than ${maxBytes} bytes.` : 'The gzipped sitemap could not be unpacked.',
      );
    }
  }
  const root: { kind: SitemapRead['kind'] | null } = { kind: null };
  const locs: string[] = [];
  let inLoc = false;
  let depth = 0;
  let text = '';
  const local = (name: string) => name.slice(name.indexOf(':') + 1).toLowerCase();
  const parser = new Parser(
    {
      onopentag(name) {
        depth++;
        const tag = local(name);
        if (root.kind === null) root.kind = tag === 'urlset' || tag === 'sitemapindex' ? tag : 'unknown';
        // <loc> of a <url> or <sitemap>, a child of the root: depth 3.
        if (tag === 'loc' && depth === 3) {
          inLoc = true;
          text = '';
        }
      },
      ontext(data) {
        if (inLoc && text.length < 4096) text += data;
      },
      onclosetag(name) {
        depth--;
        if (inLoc && local(name) === 'loc') {
          inLoc = false;
          if (locs.length < MAX_SITEMAP_URLS) locs.push(text.trim());
        }
      },
    },
    { xmlMode: true, decodeEntities: true },
  );
  parser.end(xml.toString('utf8'));
  const found: SitemapRead['kind'] = root.kind ?? 'unknown';
  const verdict = scopeChecker(scope);
  const seen = new Set<string>();
  const urls: string[] = [];
  let blocked = 0;
  let work = 0;
  for (const loc of locs) {
    // The protocol's <loc> is an absolute URL: a relative one (itself as its base) is not one.
    const target = linkTarget(loc, loc);
    if (target === null || seen.has(target)) continue;
    seen.add(target);
    if (found === 'sitemapindex') {
      if (new URL(target).origin === scope.origin) urls.push(target);
      continue;
    }
    work += verdict.work(target);
    if (work > MAX_VERDICT_WORK) break;
    const v = verdict(target);
    if (v === 'ok') urls.push(target);
    else if (v === 'robots') blocked++;
  }
  return { kind: found, urls, blocked };
}
