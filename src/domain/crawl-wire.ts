/**
 * The wire shapes of crawls (issue 16 §2; docs/crawling.md), beside wire.ts
 * and written the same way: TypeBox schemas that validate, serialise and feed the OpenAPI document.
 */
import { Type, type Static, type TSchema } from 'typebox';
import { DEFAULT_MAX_DEPTH, DEFAULT_MAX_PAGES, MAX_MAX_DEPTH, MAX_MAX_PAGES, MAX_PATTERN_LENGTH, MAX_PATTERNS } from './knowledgebase/crawl-limits.js';
import { MAX_LINK_LENGTH } from './knowledgebase/links.js';
import { oneOf, ref, Timestamp } from './wire.js';

const nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

export { DEFAULT_MAX_DEPTH, DEFAULT_MAX_PAGES, MAX_MAX_DEPTH, MAX_MAX_PAGES, MAX_PATTERN_LENGTH, MAX_PATTERNS };

export const CRAWL_STATES = ['queued', 'running', 'done', 'cancelled', 'failed'] as const;
export type CrawlState = (typeof CRAWL_STATES)[number];

const patterns = (what: string) =>
  Type.Optional(
    Type.Array(Type.String({ minLength: 1, maxLength: MAX_PATTERN_LENGTH }), {
      maxItems: MAX_PATTERNS,
      description: `${what}: robots.txt-style patterns on the URL's path and query (a prefix; \`*\` any characters, a final \`$\` the end), at most ${MAX_PATTERNS}`,
    }),
  );

export const CrawlRequest = Type.Object(
  {
    url: Type.Optional(
      Type.String({ maxLength: MAX_LINK_LENGTH, description: 'Start URL: links are followed within its origin and path prefix. Give this or `sitemap`' }),
    ),
    sitemap: Type.Optional(
      Type.String({ maxLength: MAX_LINK_LENGTH, description: "A sitemap's or sitemap index's URL (gzipped or not): its URLs are fetched. Give this or `url`" }),
    ),
    max_pages: Type.Optional(
      Type.Integer({ minimum: 1, maximum: MAX_MAX_PAGES, default: DEFAULT_MAX_PAGES, description: 'The budget: at most this many pages are fetched' }),
    ),
    max_depth: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: MAX_MAX_DEPTH,
        default: DEFAULT_MAX_DEPTH,
        description: 'Links followed from the start URL (0: the start URL only); not used by a sitemap crawl',
      }),
    ),
    include: patterns('Only URLs matching one of these (none: every URL in scope)'),
    exclude: patterns('No URL matching one of these'),
  },
  { $id: 'CrawlRequest', title: 'CrawlRequest', additionalProperties: false },
);
export type CrawlRequest = Static<typeof CrawlRequest>;

export const Crawl = Type.Object(
  {
    crawl_id: Type.String({ format: 'uuid' }),
    bot_id: Type.String({ format: 'uuid' }),
    url: nullable(Type.String({ description: 'The start URL (null for a sitemap crawl)' })),
    sitemap: nullable(Type.String({ description: 'The sitemap URL (null for a crawl from a start URL)' })),
    max_pages: Type.Integer(),
    max_depth: Type.Integer(),
    include: Type.Array(Type.String()),
    exclude: Type.Array(Type.String()),
    state: oneOf(CRAWL_STATES, {
      description: 'queued (robots.txt and sitemaps not read yet), running, done, cancelled (no new fetch starts), failed (`error` says why)',
    }),
    discovered: Type.Integer({ description: 'URLs in scope accepted for fetching (at most max_pages)' }),
    queued: Type.Integer({ description: 'Of those, not fetched yet (waiting, or in the queue)' }),
    fetched: Type.Integer({ description: 'Pages fetched (answered 2xx)' }),
    indexed: Type.Integer({ description: 'Pages indexed as links of the knowledge base' }),
    failed: Type.Integer({ description: 'Pages that failed (their links say why)' }),
    skipped: Type.Integer({ description: 'Pages fetched and not indexed: their canonical URL is another page, noindex, or redirected out of scope' }),
    blocked: Type.Integer({ description: 'URLs in scope that robots.txt disallows (not fetched)' }),
    crawl_delay_ms: Type.Integer({ description: "robots.txt's Crawl-delay for this service, in ms (0: none)" }),
    error: nullable(Type.String({ description: 'Why the crawl failed' })),
    created_at: Timestamp,
    started_at: nullable(Timestamp),
    finished_at: nullable(Timestamp),
    updated_at: Timestamp,
  },
  { $id: 'Crawl', title: 'Crawl' },
);
export type Crawl = Static<typeof Crawl>;

export const Crawls = Type.Object({ bot_id: Type.String({ format: 'uuid' }), crawls: Type.Array(ref(Crawl)) }, { $id: 'Crawls', title: 'Crawls' });
export type Crawls = Static<typeof Crawls>;
