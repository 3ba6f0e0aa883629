/** One line of the add-links box that is not a link, named by its line number (counting from 1). */
export interface LinkLineProblem {
  line: number;
  text: string;
  reason: string;
}

export interface LinkLines {
  /** The links in the order typed, each once, with the line it came from. */
  links: Array<{ line: number; url: string }>;
  problems: LinkLineProblem[];
}

const MAX_SHOWN = 80;

/** The text of a line as a message quotes it: shortened, its invisible characters made visible. */
export function quoteLine(text: string): string {
  const visible = text.replace(/[\u0000-\u001f\u007f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  return visible.length > MAX_SHOWN ? `${visible.slice(0, MAX_SHOWN - 1)}…` : visible;
}

/**
 * The add-links box, one link per line (blank lines skipped): each line must be one absolute
 * http(s) URL. Checked here so a mistake is named by its line before anything is sent; the
 * service checks again (and its refusals name the link's index, mapped back to the line).
 */
export function parseLinkLines(text: string): LinkLines {
  const links: LinkLines['links'] = [];
  const problems: LinkLineProblem[] = [];
  const seen = new Set<string>();
  text.split(/\r\n|\r|\n/).forEach((raw, i) => {
    const line = i + 1;
    const value = raw.trim();
    if (value === '') return;
    if (/\s/.test(value)) {
      problems.push({ line, text: value, reason: 'has a space in it; put one link on each line' });
      return;
    }
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      problems.push({
        line,
        text: value,
        reason: /^[a-z][a-z0-9+.-]*:/i.test(value) ? 'is not a valid web address' : 'is not a full web address; start it with https://',
      });
      return;
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      problems.push({ line, text: value, reason: `is a ${url.protocol.slice(0, -1)}: address; only http:// and https:// pages can be added` });
      return;
    }
    if (seen.has(value)) return;
    seen.add(value);
    links.push({ line, url: value });
  });
  return { links, problems };
}

/** "Line 3: “htp:/x” is not …", one sentence per problem. */
export function describeLinkProblems(problems: readonly LinkLineProblem[]): string {
  const shown = problems.slice(0, 5).map((p) => `Line ${p.line}: “${quoteLine(p.text)}” ${p.reason}.`);
  if (problems.length > 5) shown.push(`And ${problems.length - 5} more lines.`);
  return shown.join(' ');
}

/** The URLs named in a message when there are at most this many; more are counted only. */
export const NAMED_LINKS = 5;

/**
 * What a deletion did, in the dashboard's words (the API's `message` is fixed by the
 * interface and says the whole knowledge base went, whatever was asked): how many of how
 * many links went, and which when they are few.
 */
export function deletedLinksMessage(result: { deleted_links: readonly string[]; not_found_links: readonly string[] }, totalBefore: number): string[] {
  const n = result.deleted_links.length;
  const left = Math.max(totalBefore - n, 0);
  const named = n > 0 && n <= NAMED_LINKS ? `: ${result.deleted_links.join(', ')}` : '';
  const lines: string[] = [];
  if (n === 0) lines.push('No link was deleted.');
  else if (left === 0)
    lines.push(`Deleted ${n === 1 ? 'the only link' : `all ${n} links`}${named}. The knowledge base is empty now and was removed with them.`);
  else lines.push(`Deleted ${n} of ${totalBefore} links${named}. ${left} ${left === 1 ? 'link remains' : 'links remain'}.`);
  if (result.not_found_links.length > 0) {
    const gone = result.not_found_links;
    lines.push(`${gone.length <= NAMED_LINKS ? `Already gone: ${gone.join(', ')}` : `${gone.length} links were already gone`}.`);
  }
  return lines;
}

/** A link as the announcements read it. */
export interface SettledLink {
  url: string;
  status: string;
  error?: string | null;
  passages: number;
}

/**
 * What a live region says when links finish (indexed or failed since the last reading): one
 * link by its URL, its passages or its reason; several counted, with the first failure's reason.
 * Empty when nothing finished.
 */
export function settledLinksMessage(settled: readonly SettledLink[]): string {
  const indexed = settled.filter((l) => l.status === 'indexed');
  const failed = settled.filter((l) => l.status === 'failed');
  const reason = (l: SettledLink) => (l.error ?? 'no reason given').replace(/\.$/, '');
  const parts: string[] = [];
  if (indexed.length === 1) parts.push(`Indexed ${indexed[0]!.url}: ${indexed[0]!.passages} ${indexed[0]!.passages === 1 ? 'passage' : 'passages'}.`);
  else if (indexed.length > 1) parts.push(`${indexed.length} links indexed.`);
  if (failed.length === 1) parts.push(`Failed ${failed[0]!.url}: ${reason(failed[0]!)}.`);
  else if (failed.length > 1) parts.push(`${failed.length} links failed; the first, ${failed[0]!.url}: ${reason(failed[0]!)}.`);
  return parts.join(' ');
}

/** The links of `now` that finished since `before` (URL → status): pending then, or not listed then, and settled now. */
export function newlySettled<T extends SettledLink>(before: ReadonlyMap<string, string>, now: readonly T[]): T[] {
  return now.filter((l) => l.status !== 'pending' && (before.get(l.url) === 'pending' || !before.has(l.url)));
}
