/**
 * The terms a knowledge-base search matches: those of a query, and those a passage is
 * indexed under. Both come from `searchTokens` (src/text/folding.ts), so the databases
 * only store and look up words, never interpret text. The user's punctuation never reaches a
 * database either: any text is a safe query.
 *
 * Terms are OR-ed: queries are "a few keywords" or a question ("how do I rotate an api key"),
 * and requiring every word would make one extra or misspelt word return nothing. The ranking
 * (bm25, src/storage/knowledge-base.repository.ts) puts passages holding more, and rarer,
 * terms first.
 */
import { searchTokens } from './folding.js';

/** More terms than this add nothing to ranking and only slow the query down. */
export const MAX_QUERY_TERMS = 32;
/**
 * A passage is indexed under its first MAX_INDEXED_TERMS terms, and each distinct term's first
 * MAX_TERM_REPEATS occurrences: PostgreSQL's tsvector keeps no more (positions up to 16,383,
 * 256 of them per word), so SQLite's index is held to the same. Passages (at most 300 words)
 * never come near either bound.
 */
export const MAX_INDEXED_TERMS = 16_383;
export const MAX_TERM_REPEATS = 256;

/** The distinct terms of a query, in order of first appearance, at most MAX_QUERY_TERMS. */
export function queryTerms(q: string): string[] {
  const terms = new Set<string>();
  for (const term of searchTokens(q)) {
    terms.add(term);
    if (terms.size === MAX_QUERY_TERMS) break;
  }
  return [...terms];
}

/** What a passage is indexed under: its terms joined by single spaces, and how many there are. */
export interface PassageTerms {
  terms: string;
  term_count: number;
}

export function passageTerms(content: string): PassageTerms {
  const kept: string[] = [];
  const repeats = new Map<string, number>();
  for (const term of searchTokens(content)) {
    const seen = repeats.get(term) ?? 0;
    if (seen === MAX_TERM_REPEATS) continue;
    repeats.set(term, seen + 1);
    kept.push(term);
    if (kept.length === MAX_INDEXED_TERMS) break;
  }
  return { terms: kept.join(' '), term_count: kept.length };
}
