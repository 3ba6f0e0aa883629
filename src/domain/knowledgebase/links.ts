/**
 * Knowledge-base links: the check of a request's `links` value (add and delete alike) and the
 * one canonical form every link is stored in, so that one page is one link (issue 13 §11).
 *
 * The canonical form of a link is the `href` of its WHATWG URL parse (which lower-cases the
 * scheme and host, turns an IDN host into punycode, writes IPv4/IPv6 hosts in their one
 * canonical spelling, drops the default port, resolves `.`/`..` segments — `%2E` spellings
 * included — gives an empty path "/" and percent-encodes what must be), then:
 *   1. the fragment is removed (it never reaches the server);
 *   2. one trailing dot of a domain host is removed (`example.com.` → `example.com`);
 *   3. in the path and the query, a percent-escape of an unreserved character (ALPHA, DIGIT,
 *      `-`, `.`, `_`, `~`) is decoded (`%7E` → `~`, `%41` → `A`) and every other escape is
 *      upper-cased (`%2f` → `%2F`);
 *   4. nothing else: the query keeps its order, empty or repeated parameters, `+` and a bare
 *      `?`; path case and a trailing slash are kept (servers may tell them apart).
 * The result parses back to itself, so canonicalising twice changes nothing. Migration
 * 006-canonical-links brought links stored before this form to it.
 *
 * `checkLinks` returns the links as sent (exact duplicates dropped) so that a delete can answer
 * in the caller's spelling; the service maps them with `canonicalLink` on add and on delete.
 * Control characters and invisible formatting characters (bidi controls, zero-width
 * characters, …) are refused here and in a copilot's URLs alike (`forbiddenCharacter`).
 */

import { AppError } from '../../errors.js';
import { INVISIBLE_CHARACTER } from '../../text/invisible.js';
import { redactSecretsAndEmails } from './redact.js';

export const MAX_LINKS_PER_REQUEST = 1000;
export const MAX_LINK_LENGTH = 2048;
/** Enough to show what is wrong without echoing a thousand-entry list back. */
export const MAX_LINK_PROBLEMS = 20;

export interface LinkProblem {
  /** Position in the `links` array; -1 when the value as a whole is wrong (not an array, empty). */
  index: number;
  reason: string;
}

// Absolute http(s) URLs only: WHATWG `URL` alone would also accept `http:example.com`,
// `http:///example.com` or `http:\\example.com`, which are not what a user means by a link.
const HTTP_PREFIX = /^https?:\/\//i;
const EMPTY_HOST = /^https?:\/\/(?:[/\\?#]|$)/i;
// Refused anywhere in a URL a user stores (links, a copilot's website and swagger_url), and in
// names shown to others: src/text/invisible.ts lists them, and why. (`URL` silently strips tabs
// and newlines, so the stored string and the fetched address would differ.)

/** The first control or invisible formatting character of `text` as "U+202E", or null when there is none. */
export function forbiddenCharacter(text: string): string | null {
  const match = INVISIBLE_CHARACTER.exec(text);
  if (match === null) return null;
  return `U+${match[0].codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;
}

/**
 * invalid_request naming `field` when `value` holds a character `forbiddenCharacter` finds:
 * for the URLs a user stores and for names shown to others (a copilot's, an API key's), where
 * `KB \u202eevil` is shown as "KB live" and turns the text around it.
 */
export function refuseForbiddenCharacters(field: string, value: string): void {
  const forbidden = forbiddenCharacter(value);
  if (forbidden !== null) {
    throw new AppError('invalid_request', `The field ${field} must not contain control or invisible formatting characters (${forbidden}).`, { field });
  }
}

const UNRESERVED = /[A-Za-z0-9\-._~]/;

/** The canonical form of a link that `checkLinks` accepted (rules at the top of this file). */
export function canonicalLink(link: string): string {
  const url = new URL(link);
  url.hash = '';
  const host = url.hostname;
  if (host.length > 1 && host.endsWith('.') && !host.startsWith('[')) url.hostname = host.slice(0, -1);
  const origin = `${url.protocol}//${url.host}`;
  if (!url.href.startsWith(origin)) throw new TypeError('A link with a user name or password has no canonical form.');
  const rest = url.href.slice(origin.length).replace(/%([0-9A-Fa-f]{2})/g, (_escape, hex: string) => {
    const char = String.fromCharCode(parseInt(hex, 16));
    return UNRESERVED.test(char) ? char : `%${hex.toUpperCase()}`;
  });
  return new URL(origin + rest).href;
}

/**
 * A link as logs and the audit log show it: without its query string and fragment, which may
 * carry tokens or personal data, and with the e-mail addresses and credentials of its path
 * (`/team/alice@example.com/`, a webhook's secret path) replaced as redaction replaces them
 * (`/team/[email]/`); the digits of a path are kept.
 */
export function loggedUrl(url: string): string {
  const cut = url.search(/[?#]/);
  return redactSecretsAndEmails(cut === -1 ? url : url.slice(0, cut));
}

/**
 * A copilot's URLs as its audit entries (and the details of a failed fetch) name them: for a
 * copilot with enhanced_privacy as logged (loggedUrl), else as given.
 */
export function asLogged(privacy: boolean): (url: string) => string {
  return privacy ? loggedUrl : (url) => url;
}

/** The canonical forms of `links`, each page once, in the order first seen. */
export function uniqueCanonicalLinks(links: readonly string[]): string[] {
  return [...new Set(links.map(canonicalLink))];
}

export function checkLinks(input: unknown): { links: string[] } | { problems: LinkProblem[] } {
  if (!Array.isArray(input)) {
    return { problems: [{ index: -1, reason: 'links must be an array of URL strings.' }] };
  }
  if (input.length === 0) {
    return { problems: [{ index: -1, reason: 'links must contain at least one URL.' }] };
  }
  if (input.length > MAX_LINKS_PER_REQUEST) {
    return {
      problems: [
        {
          index: MAX_LINKS_PER_REQUEST,
          reason: `links may contain at most ${MAX_LINKS_PER_REQUEST} URLs per request (got ${input.length}).`,
        },
      ],
    };
  }

  const problems: LinkProblem[] = [];
  const seen = new Set<string>();
  const links: string[] = [];
  for (let index = 0; index < input.length; index++) {
    const item: unknown = input[index];
    const reason = linkProblem(item);
    if (reason !== null) {
      problems.push({ index, reason });
      if (problems.length >= MAX_LINK_PROBLEMS) break;
      continue;
    }
    const link = item as string;
    if (!seen.has(link)) {
      seen.add(link);
      links.push(link);
    }
  }
  return problems.length > 0 ? { problems } : { links };
}

/** Why one entry is not acceptable, or null when it is. */
function linkProblem(item: unknown): string | null {
  if (typeof item !== 'string') return `must be a string, not ${describe(item)}.`;
  if (item.length === 0) return 'must not be empty.';
  if (item.length > MAX_LINK_LENGTH) {
    return `is ${item.length} characters long; at most ${MAX_LINK_LENGTH} are allowed.`;
  }
  if (item.trim() !== item) return 'must not start or end with whitespace.';
  const forbidden = forbiddenCharacter(item);
  if (forbidden !== null) return `must not contain control or invisible formatting characters (${forbidden}).`;
  if (!HTTP_PREFIX.test(item)) return 'must be an absolute URL starting with http:// or https://.';
  if (EMPTY_HOST.test(item)) return 'has no host.';
  let url: URL;
  try {
    url = new URL(item);
  } catch {
    return 'is not a valid URL.';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    return 'must be an absolute URL starting with http:// or https://.';
  }
  if (url.hostname === '') return 'has no host.';
  // Fetch refuses URLs with credentials, and they would sit in lists and audit logs.
  if (url.username !== '' || url.password !== '') return 'must not contain a user name or password.';
  let canonical: string;
  try {
    canonical = canonicalLink(item);
  } catch {
    return 'is not a valid URL.';
  }
  // As stored: PostgreSQL's index on (bot, url) takes no longer key, SQLite must answer alike.
  if (canonical.length > MAX_LINK_LENGTH) {
    return `is ${canonical.length} characters long once percent-encoded (each non-ASCII character takes 6 to 12); at most ${MAX_LINK_LENGTH} are allowed.`;
  }
  return null;
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}
