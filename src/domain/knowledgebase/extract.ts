/**
 * Readable text from a fetched page: HTML through html-to-text (boilerplate dropped by
 * selectors, `<main>`/`<article>` preferred), plain text and Markdown as they are.
 *
 * Bounded on hostile input: HTML is cut at MAX_HTML_CHARS, and a first streaming pass with
 * htmlparser2 (the parser html-to-text itself uses) refuses pages nested deeper than
 * MAX_NESTING elements, because the parser's cost grows with depth on every tag and
 * html-to-text walks the tree recursively. The same pass reads the title and tells whether
 * `<main>`/`<article>` hold enough text to be worth converting on their own.
 */
import { getBOMEncoding, labelToName, TextDecoder } from '@exodus/bytes/encoding.js';
import { getEncoding } from 'encoding-sniffer';
import { compile, type HtmlToTextOptions, type SelectorDefinition } from 'html-to-text';
import { Parser } from 'htmlparser2';
import { REORDERING_OR_HIDDEN } from '../../text/invisible.js';

export class ExtractError extends Error {
  override name = 'ExtractError';
}

export interface ExtractedPage {
  title: string | null;
  text: string;
  /** The page is HTML longer than MAX_HTML_CHARS: the text is its first MAX_HTML_CHARS characters'. */
  truncated: boolean;
}

/**
 * Longer HTML is cut here. Conversion is synchronous CPU work (about 1 s for this much on a
 * typical machine) and 4 Mi characters of markup already hold hundreds of passages of text.
 */
export const MAX_HTML_CHARS = 4 * 1024 * 1024;
/** Real pages nest a few dozen elements deep; far deeper is malformed or hostile. */
export const MAX_NESTING = 256;
/** `<main>`/`<article>` with fewer words than this is a stub, so the whole body is used. */
const MIN_MAIN_WORDS = 30;
const MAX_TITLE_LENGTH = 500;
/** How far into an HTML document a `<meta charset>` is looked for. */
const META_PRESCAN_BYTES = 4096;

type Kind = 'html' | 'plain' | 'markdown';

const KINDS: Record<string, Kind> = {
  'text/html': 'html',
  'application/xhtml+xml': 'html',
  'text/plain': 'plain',
  'text/markdown': 'markdown',
  'text/x-markdown': 'markdown',
};

const SUPPORTED = 'only HTML, plain text and Markdown pages are indexed.';

export function extractText(body: Buffer, contentType: string | null): ExtractedPage {
  const { mediaType, charset } = parseContentType(contentType);

  let kind: Kind;
  let text: string;
  if (mediaType === null) {
    ({ kind, text } = sniff(body));
  } else {
    const known = KINDS[mediaType];
    if (known === undefined) {
      // Echo the type only when it looks like one: the message is stored and shown to users.
      const shown = /^[\w.+-]{1,64}\/[\w.+-]{1,64}$/.test(mediaType) ? ` ${mediaType}` : '';
      throw new ExtractError(`Unsupported content type${shown}; ${SUPPORTED}`);
    }
    kind = known;
    text = decode(body, kind === 'html' ? htmlEncoding(body, charset) : textEncoding(body, charset));
  }
  text = text.replace(/\u0000/g, '');

  const extracted = kind === 'html' ? fromHtml(text) : fromText(text, kind);
  const page = { ...extracted, text: extracted.text.replace(REORDERING_OR_HIDDEN, ''), title: extracted.title?.replace(REORDERING_OR_HIDDEN, '') ?? null };
  if (page.text === '') throw new ExtractError('The page has no readable text to index.');
  return page;
}

/**
 * An HTML page's text as `extractText` reads it: its encoding sniffed (a byte order mark, the
 * Content-Type charset, a `<meta charset>`), cut at MAX_HTML_CHARS. A crawl reads its links from
 * this (read as UTF-8, a UTF-16 page gave no link and a windows-1252 `café` a wrong URL).
 */
export function htmlText(body: Buffer, contentType: string | null): string {
  // Four bytes a character at most (UTF-8; UTF-16 takes two): no more is decoded than is kept.
  return decode(body.subarray(0, 4 * MAX_HTML_CHARS), htmlEncoding(body, parseContentType(contentType).charset)).slice(0, MAX_HTML_CHARS);
}

// ---------------------------------------------------------------------------------------------
// Content type, sniffing and character encoding

function parseContentType(contentType: string | null): { mediaType: string | null; charset: string | null } {
  if (contentType === null || contentType.trim() === '') return { mediaType: null, charset: null };
  const [type = '', ...params] = contentType.split(';');
  let charset: string | null = null;
  for (const param of params) {
    const eq = param.indexOf('=');
    if (eq < 0 || param.slice(0, eq).trim().toLowerCase() !== 'charset') continue;
    charset = param
      .slice(eq + 1)
      .trim()
      .replace(/^"(.*)"$/, '$1');
    break;
  }
  const mediaType = type.trim().toLowerCase();
  return { mediaType: mediaType === '' ? null : mediaType, charset };
}

/**
 * HTML's encoding by the WHATWG sniffing algorithm (encoding-sniffer): a byte order mark,
 * then the Content-Type charset, then a `<meta charset>` or `http-equiv` near the top (one
 * naming UTF-16 means UTF-8), else UTF-8.
 */
function htmlEncoding(body: Buffer, charset: string | null): string {
  return getEncoding(body, { transportLayerEncodingLabel: charset ?? undefined, defaultEncoding: 'utf-8', maxBytes: META_PRESCAN_BYTES });
}

/** Plain text and Markdown: a byte order mark, else the Content-Type charset when it names an encoding, else UTF-8. */
function textEncoding(body: Buffer, charset: string | null): string {
  return getBOMEncoding(body) ?? (charset === null ? null : labelToName(charset.trim())) ?? 'utf-8';
}

/**
 * Decoded as browsers decode (WHATWG Encoding, by @exodus/bytes): Node's own TextDecoder
 * reads windows-1252, the label browsers use for latin1, iso-8859-1 and ascii too, as
 * ISO-8859-1 on some versions (nodejs/node#60888), turning curly quotes, dashes and €
 * into control characters.
 */
function decode(body: Buffer, encoding: string): string {
  return new TextDecoder(encoding).decode(body);
}

// The WHATWG MIME sniffing signatures for HTML (each followed by a space or `>`).
const HTML_SIGNATURES = [
  '<!doctype html',
  '<html',
  '<head',
  '<script',
  '<iframe',
  '<h1',
  '<div',
  '<font',
  '<table',
  '<a',
  '<style',
  '<title',
  '<b',
  '<body',
  '<br',
  '<p',
];

/** No content type: HTML if it starts like HTML, plain text if it is valid text without NULs. */
function sniff(body: Buffer): { kind: Kind; text: string } {
  const bom = getBOMEncoding(body);
  const start = new TextDecoder(bom ?? 'windows-1252')
    .decode(body.subarray(0, 1024))
    .replace(/^[\t\n\f\r ]+/, '')
    .slice(0, 16)
    .toLowerCase();
  const looksLikeHtml =
    start.startsWith('<!--') || HTML_SIGNATURES.some((sig) => start.startsWith(sig) && /^[\s>]/.test(start.slice(sig.length, sig.length + 1)));
  if (looksLikeHtml) {
    return { kind: 'html', text: decode(body, htmlEncoding(body, null)) };
  }
  let text: string;
  try {
    text = new TextDecoder(bom ?? 'utf-8', { fatal: true }).decode(body);
  } catch {
    text = '\u0000';
  }
  if (text.includes('\u0000')) {
    throw new ExtractError(`The page has no content type and does not look like text; ${SUPPORTED}`);
  }
  return { kind: 'plain', text };
}

// ---------------------------------------------------------------------------------------------
// Plain text and Markdown

function fromText(raw: string, kind: Kind): ExtractedPage {
  const text = raw.replace(/\r\n?/g, '\n').normalize('NFC').trim();
  return { title: kind === 'markdown' ? markdownTitle(text) : null, text, truncated: false };
}

/** The first level-one heading (`# Title` or `Title` over `===`), outside front matter and code fences. */
function markdownTitle(text: string): string | null {
  const lines = text.split('\n', 1000);
  let i = 0;
  if (lines[0]?.trim() === '---') {
    const end = lines.findIndex((line, n) => n > 0 && /^(---|\.\.\.)\s*$/.test(line));
    if (end > 0) i = end + 1;
  }
  let fence: string | null = null;
  for (; i < lines.length; i++) {
    const line = lines[i];
    const fenceMatch = /^ {0,3}(`{3,}|~{3,})/.exec(line);
    if (fenceMatch) {
      if (fence === null) fence = fenceMatch[1][0];
      else if (fenceMatch[1][0] === fence) fence = null;
      continue;
    }
    if (fence !== null) continue;
    const atx = /^ {0,3}#[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$/.exec(line);
    if (atx) return cleanTitle(atx[1]);
    const next = lines[i + 1];
    if (line.trim() !== '' && next !== undefined && /^ {0,3}=+[ \t]*$/.test(next) && !/^ {4}|^\t/.test(line)) {
      return cleanTitle(line);
    }
  }
  return null;
}

function cleanTitle(raw: string): string | null {
  const title = raw.replace(/\s+/g, ' ').trim().normalize('NFC');
  if (title === '') return null;
  return title.length > MAX_TITLE_LENGTH ? title.slice(0, MAX_TITLE_LENGTH).trimEnd() : title;
}

// ---------------------------------------------------------------------------------------------
// HTML

/** Elements whose content is never readable page text. */
const SKIPPED_TAGS = [
  'head',
  'title',
  'script',
  'style',
  'noscript',
  'template',
  'svg',
  'math',
  'iframe',
  'object',
  'embed',
  'canvas',
  'video',
  'audio',
  'img',
  'picture',
  'nav',
  'header',
  'footer',
  'aside',
  'form',
  'button',
  'select',
  'textarea',
  'dialog',
];
const SKIPPED_ROLES = ['navigation', 'banner', 'contentinfo', 'complementary'];

const SKIP: SelectorDefinition[] = [
  ...SKIPPED_TAGS.map((selector) => ({ selector, format: 'skip' })),
  ...SKIPPED_ROLES.map((role) => ({ selector: `[role~=${role}]`, format: 'skip' })),
  { selector: '[aria-hidden=true i]', format: 'skip' },
  { selector: 'input[type=hidden i]', format: 'skip' },
  // Not shown by a browser: the `hidden` attribute, an inline `display: none` (its two usual spellings).
  { selector: '[hidden]', format: 'skip' },
  { selector: '[style*="display:none" i]', format: 'skip' },
  { selector: '[style*="display: none" i]', format: 'skip' },
  // A header inside an article or section is its heading and byline, not the site banner
  // (ARIA gives it no banner role); more specific than `header`, so it wins.
  { selector: 'main > header', format: 'block' },
  { selector: 'article > header', format: 'block' },
  { selector: 'section > header', format: 'block' },
];

const block = (selector: string, lineBreaks = 1, leadingLineBreaks = lineBreaks): SelectorDefinition => ({
  selector,
  format: 'block',
  options: { leadingLineBreaks, trailingLineBreaks: lineBreaks },
});

const FORMAT: SelectorDefinition[] = [
  { selector: 'a', options: { ignoreHref: true, linkBrackets: false } },
  ...['h1', 'h2', 'h3', 'h4', 'h5', 'h6'].map((selector) => ({ selector, options: { uppercase: false } })),
  { selector: 'ul', options: { itemPrefix: '- ' } },
  // Quoted text is page text; the default `> ` prefix would only be noise in a passage.
  block('blockquote', 2),
  block('hr', 2),
  // A block that starts with a block takes that block's leading line breaks, so each term
  // opens a paragraph (which also separates the list from what comes before).
  block('dl', 2),
  block('dt', 1, 2),
  ...['dd', 'figure', 'figcaption', 'details', 'summary', 'address', 'fieldset', 'caption', 'center'].map((s) => block(s)),
  // Table rows as lines, cells side by side with a space rather than glued together. (Rows as
  // blocks would cost the table its blank line before, for the reason above.)
  { selector: 'tr', format: 'inlineSurround', options: { suffix: '\n' } },
  { selector: 'td', format: 'inlineSurround', options: { suffix: ' ' } },
  { selector: 'th', format: 'inlineSurround', options: { suffix: ' ' } },
];

function converter(baseSelectors: string[]): (html: string) => string {
  const options: HtmlToTextOptions = {
    wordwrap: false,
    baseElements: { selectors: baseSelectors, orderBy: 'occurrence', returnDomByDefault: baseSelectors.includes('body') },
    // The nesting guard runs first; this only keeps the recursive walk safe should it not.
    limits: { maxDepth: MAX_NESTING + 64, ellipsis: '', maxInputLength: MAX_HTML_CHARS },
    selectors: [...FORMAT, ...SKIP],
  };
  return compile(options);
}

const convertMain = converter(['main', '[role~=main]']);
const convertArticles = converter(['article']);
const convertBody = converter(['body']);

function fromHtml(raw: string): ExtractedPage {
  let html = raw;
  if (html.length > MAX_HTML_CHARS) {
    let end = MAX_HTML_CHARS;
    const code = html.charCodeAt(end - 1);
    if (code >= 0xd800 && code <= 0xdbff) end--;
    html = html.slice(0, end);
  }
  const scan = scanHtml(html);

  let text = '';
  if (scan.mainWords >= MIN_MAIN_WORDS) text = tidy(convertMain(html));
  else if (scan.articleWords >= MIN_MAIN_WORDS) text = tidy(convertArticles(html));
  // The quick count above sees text the converter drops (lists of links in a <main>, say).
  if (countWords(text, MIN_MAIN_WORDS) < MIN_MAIN_WORDS) text = tidy(convertBody(html));

  return { title: scan.title === null ? null : cleanTitle(scan.title), text, truncated: html.length < raw.length };
}

/** Whitespace collapsed inside lines, lines trimmed, at most one blank line between blocks. */
function tidy(text: string): string {
  return (
    text
      .replace(/\u0000/g, '')
      // Lone spaces are left alone: replacing each with itself is slow on megabytes.
      .replace(/[^\S\n]{2,}|[^\S\n ]/g, ' ')
      .replace(/ \n ?|\n /g, '\n')
      .replace(/\n{3,}/g, '\n\n')
      .trim()
      .normalize('NFC')
  );
}

function countWords(text: string, limit: number): number {
  let words = 0;
  const re = /\S+/g;
  while (words < limit && re.exec(text) !== null) words++;
  return words;
}

interface HtmlScan {
  title: string | null;
  /** Words of text inside `<main>`/`role=main` and inside `<article>`, counted up to MIN_MAIN_WORDS. */
  mainWords: number;
  articleWords: number;
}

const SKIPPED_TAG_SET = new Set(SKIPPED_TAGS);

/** What an open element makes of the text inside it. */
interface Region {
  main: boolean;
  article: boolean;
  skipped: boolean;
  svg: boolean;
}
type RegionCounts = { [K in keyof Region]: number };

/** One streaming pass: refuse deep nesting, read the title, measure `<main>`/`<article>`. */
function scanHtml(html: string): HtmlScan {
  const stack: Region[] = [];
  const inside: RegionCounts = { main: 0, article: 0, skipped: 0, svg: 0 };
  const count = (region: Region, by: number): void => {
    for (const key of Object.keys(inside) as Array<keyof Region>) if (region[key]) inside[key] += by;
  };
  let title: string | null = null;
  let inTitle = false;
  let mainWords = 0;
  let articleWords = 0;

  const parser = new Parser(
    {
      onopentag(name, attribs) {
        if (stack.length >= MAX_NESTING) {
          throw new ExtractError(`The page's HTML is nested more than ${MAX_NESTING} elements deep, so it was not indexed.`);
        }
        const roles = (attribs.role ?? '').toLowerCase().split(/\s+/);
        const region: Region = {
          main: name === 'main' || roles.includes('main'),
          article: name === 'article',
          skipped:
            SKIPPED_TAG_SET.has(name) ||
            roles.some((role) => SKIPPED_ROLES.includes(role)) ||
            (attribs['aria-hidden'] ?? '').toLowerCase() === 'true' ||
            'hidden' in attribs ||
            /display: ?none/i.test(attribs.style ?? ''),
          svg: name === 'svg',
        };
        stack.push(region);
        count(region, 1);
        if (name === 'title' && title === null && inside.svg === 0) {
          inTitle = true;
          title = '';
        }
      },
      onclosetag() {
        const region = stack.pop();
        if (region) count(region, -1);
        inTitle = false;
      },
      ontext(data) {
        if (inTitle) {
          if (title !== null && title.length < MAX_TITLE_LENGTH * 2) title += data;
          return;
        }
        if (inside.skipped > 0) return;
        if (inside.main > 0 && mainWords < MIN_MAIN_WORDS) mainWords += countWords(data, MIN_MAIN_WORDS);
        if (inside.article > 0 && articleWords < MIN_MAIN_WORDS) articleWords += countWords(data, MIN_MAIN_WORDS);
      },
    },
    { decodeEntities: true },
  );
  parser.end(html);
  return { title, mainWords, articleWords };
}
