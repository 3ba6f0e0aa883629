/**
 * What a crawl may fetch (issue 16 §2), as pure functions that run where the links are read
 * (a task thread) and where a crawl starts:
 *
 * - its scope: the start URL's origin and path prefix (the path up to its last `/`, as wget's
 *   --no-parent: `https://d.example/docs/intro` → `/docs/`; `https://d.example/docs` → `/`), or
 *   for a sitemap crawl the sitemap's origin;
 * - its `include` and `exclude` patterns, in robots.txt syntax (a path prefix where `*` is any
 *   characters and a final `$` ends the URL), matched against the URL's path and query: excluded
 *   when an exclude pattern matches, else included when there is no include pattern or one
 *   matches. They are matched by robots-parser (Google's matcher: time linear in the pattern
 *   times the path, whatever the pattern, unlike a glob compiled to a regular expression);
 * - the site's robots.txt for the service's user agent (its product token,
 *   `copilot-management-service`; a group for `*` otherwise): Disallow/Allow, Crawl-delay.
 */
import robotsParserModule from 'robots-parser';
import { USER_AGENT } from '../../net/user-agent.js';
import { canonicalLink, checkLinks } from './links.js';
import { MAX_PATTERN_LENGTH, MAX_PATTERN_WILDCARD_CHARS, MAX_PATTERNS } from './crawl-limits.js';

export { MAX_PATTERN_LENGTH, MAX_PATTERN_WILDCARD_CHARS, MAX_PATTERNS };
/** The part of a robots.txt that is read (RFC 9309 asks crawlers to read at least 500 KiB). */
export const MAX_ROBOTS_CHARS = 500 * 1024;

/**
 * What a verdict costs. robots-parser's matcher, Google's, is linear in a pattern until its
 * first `*`, and from there costs each further character times the URL's length; a verdict
 * matches every rule. So a robots.txt of thousands of rules like `/*a*a*a…x` cost 1.8 s a URL
 * of 2,000 characters, on the event loop for a crawl's start URL and on a task thread for each
 * link of each page (the knowledge-base sweep). Bounded three ways:
 * - a robots.txt whose rules hold more than MAX_ROBOTS_WILDCARD_CHARS characters after a `*`
 *   fails the crawl (`robotsProblem`), and the patterns of a request are bounded alike
 *   (MAX_PATTERN_WILDCARD_CHARS, crawl-limits.ts);
 * - so a verdict costs at most `work(url)` = the rules' characters + those after a `*` × the
 *   URL's length (about 2 ns each);
 * - and the links of one page, or the URLs of one sitemap, are checked until they have cost
 *   MAX_VERDICT_WORK (a quarter of a second or so): those past it are not followed.
 */
export const MAX_ROBOTS_WILDCARD_CHARS = 16 * 1024;
export const MAX_VERDICT_WORK = 100_000_000;

/** The characters of a pattern after its first `*`: those a match costs times the URL's length. */
export function wildcardChars(pattern: string): number {
  const star = pattern.indexOf('*');
  return star < 0 ? 0 : pattern.length - star - 1;
}

const RULE = /^[ \t]*(?:dis)?allow[ \t]*:[ \t]*([^\s#]*)/gim;

/** The patterns of a robots.txt's Allow and Disallow lines (every group's: a bound, not a verdict). */
function robotsRules(robotsTxt: string | null): string[] {
  if (robotsTxt === null) return [];
  return [...robotsTxt.slice(0, MAX_ROBOTS_CHARS).matchAll(RULE)].map((m) => m[1]!);
}

/** Why a robots.txt cannot be read within the bound above, or null. */
export function robotsProblem(robotsTxt: string | null): string | null {
  let chars = 0;
  for (const rule of robotsRules(robotsTxt)) chars += wildcardChars(rule);
  if (chars <= MAX_ROBOTS_WILDCARD_CHARS) return null;
  return `The site's robots.txt holds ${chars} characters of rules after a "*", more than the ${MAX_ROBOTS_WILDCARD_CHARS} the service reads: its rules would cost too much to check.`;
}

export interface CrawlScope {
  /** `https://d.example` (the URL's origin, default port dropped). */
  origin: string;
  /** The path every page's path starts with (`/` for a sitemap crawl). */
  prefix: string;
  include: readonly string[];
  exclude: readonly string[];
  /** The site's robots.txt (null: none, everything allowed). */
  robotsTxt: string | null;
}

export type Verdict = 'ok' | 'outside' | 'excluded' | 'robots';

/** The directory of a start URL's path: everything up to and including its last `/`. */
export function pathPrefixOf(url: string): string {
  const { pathname } = new URL(url);
  return pathname.slice(0, pathname.lastIndexOf('/') + 1) || '/';
}

/** Why a pattern is not acceptable, or null. */
export function patternProblem(pattern: unknown): string | null {
  if (typeof pattern !== 'string') return 'must be a string.';
  if (pattern.length === 0) return 'must not be empty.';
  if (pattern.length > MAX_PATTERN_LENGTH) return `is ${pattern.length} characters long; at most ${MAX_PATTERN_LENGTH} are allowed.`;
  if (!pattern.startsWith('/') && !pattern.startsWith('*')) return 'must start with "/" or "*" (a path, as in robots.txt).';
  // A robots.txt line ends at white space and a comment at `#`: neither can be part of a pattern.
  if (/[\s#\u0000-\u001f\u007f]/.test(pattern)) return 'must not contain white space, control characters or "#".';
  return null;
}

// A CommonJS module whose export is the function (its types say `default`).
const robotsParser = robotsParserModule as unknown as typeof robotsParserModule.default;
type Robot = ReturnType<typeof robotsParser>;

/** A set of patterns as one robots.txt group: "disallowed" means one of them matched. */
function patternMatcher(origin: string, patterns: readonly string[]): ((url: string) => boolean) | null {
  if (patterns.length === 0) return null;
  const robot = robotsParser(`${origin}/robots.txt`, `User-agent: *\n${patterns.map((p) => `Disallow: ${p}`).join('\n')}\n`);
  return (url) => robot.isDisallowed(url, '*') === true;
}

/** The site's robots.txt as parsed, read to MAX_ROBOTS_CHARS. */
export function parseRobots(origin: string, robotsTxt: string | null): Robot | null {
  if (robotsTxt === null) return null;
  return robotsParser(`${origin}/robots.txt`, robotsTxt.slice(0, MAX_ROBOTS_CHARS));
}

/** The Crawl-delay robots.txt asks of the service, in ms (0: none). */
export function crawlDelayMs(origin: string, robotsTxt: string | null): number {
  const seconds = parseRobots(origin, robotsTxt)?.getCrawlDelay(USER_AGENT);
  return typeof seconds === 'number' && Number.isFinite(seconds) && seconds > 0 ? Math.round(seconds * 1000) : 0;
}

/** The verdict on a URL, and what it costs at most (`work`, in the units of MAX_VERDICT_WORK). */
export type ScopeChecker = ((url: string) => Verdict) & { work(url: string): number };

// Parsing a large robots.txt for every page would cost more than reading the page: the few
// scopes in use on a thread are kept.
const SCOPE_CACHE = new Map<string, ScopeChecker>();
const SCOPE_CACHE_SIZE = 8;

/** The verdict on a canonical URL for the scope. */
export function scopeChecker(scope: CrawlScope): ScopeChecker {
  const key = JSON.stringify([scope.origin, scope.prefix, scope.include, scope.exclude, scope.robotsTxt]);
  const cached = SCOPE_CACHE.get(key);
  if (cached) return cached;
  const robots = parseRobots(scope.origin, scope.robotsTxt);
  const included = patternMatcher(scope.origin, scope.include);
  const excluded = patternMatcher(scope.origin, scope.exclude);
  const verdict = (url: string): Verdict => {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      return 'outside';
    }
    if (parsed.origin !== scope.origin || !parsed.pathname.startsWith(scope.prefix)) return 'outside';
    if (excluded?.(url) || (included !== null && !included(url))) return 'excluded';
    if (robots && robots.isAllowed(url, USER_AGENT) === false) return 'robots';
    return 'ok';
  };
  let chars = 0;
  let wildcard = 0;
  for (const pattern of [...robotsRules(scope.robotsTxt), ...scope.include, ...scope.exclude]) {
    chars += pattern.length;
    wildcard += wildcardChars(pattern);
  }
  const check = Object.assign(verdict, { work: (url: string) => chars + wildcard * url.length });
  if (SCOPE_CACHE.size >= SCOPE_CACHE_SIZE) SCOPE_CACHE.delete(SCOPE_CACHE.keys().next().value!);
  SCOPE_CACHE.set(key, check);
  return check;
}

/**
 * The canonical form of `href` read on the page at `base`: an absolute http(s) URL a link may
 * be (links.ts rules), without its fragment; null for anything else (mailto:, javascript:, …).
 */
export function linkTarget(href: string, base: string): string | null {
  let url: URL;
  try {
    url = new URL(href.trim(), base);
  } catch {
    return null;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return null;
  url.hash = '';
  const checked = checkLinks([url.href]);
  if ('problems' in checked) return null;
  return canonicalLink(checked.links[0]!);
}
