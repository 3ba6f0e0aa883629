/** A piece of text, marked when it matches one of the query's words. */
export interface Segment {
  text: string;
  match: boolean;
}

const WORD = /[\p{L}\p{N}_]+/gu;

/** The words of a search query, longest first (so "petstore" wins over "pet"), lower case, unique. */
export function queryTerms(query: string): string[] {
  const words = new Set<string>();
  for (const m of query.toLowerCase().matchAll(WORD)) if (m[0].length >= 2 || /\p{N}/u.test(m[0])) words.add(m[0]);
  return [...words].sort((a, b) => b.length - a.length || a.localeCompare(b));
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * Splits `text` into segments where every occurrence of a query word at the start of a
 * word is marked ("pet" marks "Pet" in "Petstore", as full-text search matches prefixes
 * and stems). The caller renders marked segments in <mark> as text nodes: no HTML is
 * ever built from the server's text.
 */
export function highlight(text: string, terms: readonly string[]): Segment[] {
  if (terms.length === 0 || text === '') return text === '' ? [] : [{ text, match: false }];
  const pattern = new RegExp(`(?<![\\p{L}\\p{N}_])(?:${terms.map(escapeRegExp).join('|')})`, 'giu');
  const out: Segment[] = [];
  let last = 0;
  for (const m of text.matchAll(pattern)) {
    const start = m.index ?? 0;
    if (m[0].length === 0) continue;
    if (start > last) out.push({ text: text.slice(last, start), match: false });
    out.push({ text: m[0], match: true });
    last = start + m[0].length;
  }
  if (last < text.length) out.push({ text: text.slice(last), match: false });
  return out;
}

/**
 * A window of at most `max` characters of `text` around its first match, cut at word
 * boundaries, with an ellipsis on each cut side. Long passages stay readable in a list.
 */
export function snippet(text: string, terms: readonly string[], max = 480): string {
  const clean = text.replace(/\s+/g, ' ').trim();
  if (clean.length <= max) return clean;
  const lower = clean.toLowerCase();
  let first = -1;
  for (const term of terms) {
    const at = lower.indexOf(term);
    if (at !== -1 && (first === -1 || at < first)) first = at;
  }
  let start = first <= max / 3 ? 0 : first - Math.floor(max / 3);
  if (start > 0) {
    const space = clean.indexOf(' ', start);
    start = space === -1 || space > first ? start : space + 1;
  }
  let end = Math.min(clean.length, start + max);
  if (end < clean.length) {
    const space = clean.lastIndexOf(' ', end);
    if (space > start + max / 2) end = space;
  }
  return `${start > 0 ? '… ' : ''}${clean.slice(start, end)}${end < clean.length ? ' …' : ''}`;
}
