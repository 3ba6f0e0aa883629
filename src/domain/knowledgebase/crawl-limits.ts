/** A crawl request's bounds and defaults (docs/crawling.md); nothing imported, so the dashboard shares them. */

/** Include and exclude patterns of a crawl, at most, each of at most MAX_PATTERN_LENGTH characters. */
export const MAX_PATTERNS = 20;
export const MAX_PATTERN_LENGTH = 512;
/**
 * Characters after the first `*` of the include and exclude patterns together, at most: a
 * pattern costs its characters after a `*` times the URL's length to match (crawl-scope.ts).
 */
export const MAX_PATTERN_WILDCARD_CHARS = 2048;
/** Pages a crawl fetches when `max_pages` is not given, and the most it may ask for. */
export const DEFAULT_MAX_PAGES = 500;
export const MAX_MAX_PAGES = 50_000;
/** Link depth from the start URL when `max_depth` is not given, and the most it may ask for. */
export const DEFAULT_MAX_DEPTH = 5;
export const MAX_MAX_DEPTH = 50;
