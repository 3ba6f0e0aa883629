/**
 * Turns any user search text into a query the full-text engines accept.
 *
 * The text is cut into word tokens; the engines never see the user's punctuation, so search
 * syntax (`"`, `*`, `NEAR(`, `AND`, `^`, `:`, `-`, parentheses) can never cause a syntax error.
 *
 * Terms are joined with OR, not AND. Queries are "a few keywords" or a question ("how do I
 * rotate an api key"): with AND every word, including "how", "do" and "I", must occur in the
 * same passage, so one extra or misspelt word returns nothing. With OR, bm25 does the rest:
 * it sums a score per matching term weighted by rarity, so passages holding all (or the rare)
 * terms still rank first, and filler words weigh almost nothing.
 */

/** More terms than this add nothing to ranking and only slow the query down. */
export const MAX_QUERY_TOKENS = 32;
/** Longer "words" are pasted hashes or garbage; they never match and would bloat the query. */
export const MAX_TOKEN_LENGTH = 64;

// A token is a run of letters/digits (with combining marks, which belong to the word in many
// scripts), possibly joined by an apostrophe, dot, underscore or hyphen: `don't`, `node.js`,
// `snake_case`, `e-mail`, `3.14`. Kept whole, such a token becomes a quoted phrase that the
// engine's own tokenizer splits again, so it matches the same spelling in the documents
// instead of OR-ing a stray `t` or `js` into the query.
const TOKEN = /[\p{L}\p{N}][\p{L}\p{N}\p{M}]*(?:['\u2019._-][\p{L}\p{N}][\p{L}\p{N}\p{M}]*)*/gu;
const SIMPLE_TOKEN = /[\p{L}\p{N}][\p{L}\p{N}\p{M}]*/gu;

/**
 * SQLite FTS5 MATCH expression: every token as a quoted string (embedded quotes doubled),
 * joined with OR. Null when the text has no tokens (the caller answers with no results).
 */
export function toFts5Query(q: string): string | null {
  const tokens = tokenise(q);
  if (tokens.length === 0) return null;
  return tokens.map((token) => `"${token.replaceAll('"', '""')}"`).join(' OR ');
}

/**
 * The same tokens joined by spaces, for PostgreSQL `plainto_tsquery` / `websearch_to_tsquery`
 * (both AND the words; turn the result into OR with `replace(...::text, '&', '|')::tsquery`
 * to rank like FTS5). Null when the text has no tokens.
 */
export function normaliseSearchText(q: string): string | null {
  const tokens = tokenise(q);
  return tokens.length === 0 ? null : tokens.join(' ');
}

/** Distinct tokens (case-insensitively), in order of first appearance, at most MAX_QUERY_TOKENS. */
function tokenise(q: string): string[] {
  const tokens: string[] = [];
  const seen = new Set<string>();
  const add = (token: string): boolean => {
    if (token.length > MAX_TOKEN_LENGTH) return false;
    const key = token.toLowerCase();
    if (!seen.has(key)) {
      seen.add(key);
      tokens.push(token);
    }
    return tokens.length >= MAX_QUERY_TOKENS;
  };

  for (const match of q.normalize('NFC').matchAll(TOKEN)) {
    const token = match[0];
    if (token.length <= MAX_TOKEN_LENGTH) {
      if (add(token)) break;
      continue;
    }
    // An over-long compound (`a.very.long.dotted.identifier...`) still has usable words.
    let full = false;
    for (const part of token.matchAll(SIMPLE_TOKEN)) {
      if ((full = add(part[0]))) break;
    }
    if (full) break;
  }
  return tokens;
}
