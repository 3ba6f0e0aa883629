/**
 * Checks the `links` value of a knowledge-base request body (add and delete alike, so a link
 * that could be added can always be deleted by the same string).
 *
 * Links are returned exactly as sent: the stored URL is the user's string, and delete-by-URL
 * compares strings. Exact duplicates are dropped (first occurrence kept) so one request never
 * queues, deletes or reports the same link twice. No normalisation means `https://a.example`
 * and `https://a.example/` are two different links.
 */

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
// C0 controls and DEL: `URL` silently strips tabs and newlines, so the stored string and the
// fetched address would differ.
const CONTROL_CHARACTER = /[\u0000-\u001f\u007f]/;

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
  if (CONTROL_CHARACTER.test(item)) return 'must not contain control characters.';
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
  return null;
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}
