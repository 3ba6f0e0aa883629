import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MAX_INDEXED_TERMS, MAX_QUERY_TERMS, MAX_TERM_REPEATS, passageTerms, queryTerms } from '../../src/text/search-terms.js';
import { MAX_TOKEN_LENGTH } from '../../src/text/folding.js';

// A term is what both databases store and look up as it is: letters, digits and combining
// marks only, so neither FTS5 nor tsquery syntax can ever be formed from user text.
const TERM = /^[\p{L}\p{N}\p{M}]+$/u;

describe('queryTerms', () => {
  const manyWords = Array.from({ length: 40 }, (_, i) => `w${i}`);
  const cases: Array<{ name: string; q: string; terms: string[] }> = [
    { name: 'keywords, stemmed', q: 'reset passwords', terms: ['reset', 'password'] },
    { name: 'a question: stop words go', q: 'How do I reset my password?', terms: ['reset', 'password'] },
    { name: 'only stop words', q: 'the of and', terms: [] },
    { name: 'empty', q: '', terms: [] },
    { name: 'punctuation and search syntax only', q: ' "*^:-() NEAR/ + ', terms: ['near'] },
    { name: 'operators are plain words', q: 'cats AND dogs OR NOT mice', terms: ['cat', 'dog', 'mice'] },
    { name: 'FTS5 syntax around words', q: 'title:api "key* ^rotate" -(old)', terms: ['titl', 'api', 'kei', 'rotat', 'old'] },
    {
      name: 'punctuation splits words; an apostrophe joins',
      q: "node.js don't snake_case e-mail 3.14 it’s",
      terms: ['node', 'js', 'dont', 'snake', 'case', 'e', 'mail', '3', '14'],
    },
    { name: 'case-insensitive duplicates once', q: 'Key key KEY keys', terms: ['kei'] },
    { name: 'diacritics and case folded', q: 'Café NAÏVE Ünïcödé', terms: ['cafe', 'naiv', 'unicod'] },
    { name: 'decomposed accents', q: 'cafe\u0301', terms: ['cafe'] },
    { name: 'ß and final sigma', q: 'Straße ΟΔΟΣ', terms: ['strass', 'οδοσ'] },
    { name: 'compatibility forms', q: 'ﬁle ＡＰＩ x²', terms: ['file', 'api', 'x2'] },
    { name: 'other scripts keep their marks', q: 'हिन्दी ٣٤ Привет', terms: ['हिन्दी', '٣٤', 'привет'] },
    { name: 'ideographs and kana one by one', q: '日本語のテキスト', terms: ['日', '本', '語', 'の', 'テ', 'キ', 'ス', 'ト'] },
    { name: 'Hangul words stay whole', q: '한국어 검색', terms: ['한국어', '검색'] },
    { name: 'emoji and symbols are not words', q: '😀 🔑 → ✓ © ⺀', terms: [] },
    { name: 'compatibility letters are', q: '™ ℃', terms: ['tm', 'c'] },
    { name: 'SQL injection text is just words', q: "'; DROP TABLE passages; --", terms: ['drop', 'tabl', 'passag'] },
    { name: `at most ${MAX_QUERY_TERMS} terms`, q: manyWords.join(' '), terms: manyWords.slice(0, MAX_QUERY_TERMS) },
    {
      name: 'over-long words are dropped',
      q: `${'a'.repeat(MAX_TOKEN_LENGTH + 1)} ok ${'b'.repeat(MAX_TOKEN_LENGTH)}`,
      terms: ['ok', 'b'.repeat(MAX_TOKEN_LENGTH)],
    },
    {
      name: 'a long dotted identifier gives its parts',
      q: Array.from({ length: 20 }, (_, i) => `part${i}`).join('.'),
      terms: Array.from({ length: 20 }, (_, i) => `part${i}`),
    },
  ];
  it.each(cases)('$name', ({ q, terms }) => {
    expect(queryTerms(q)).toEqual(terms);
  });

  it('handles a 10,000-character query within the caps', () => {
    const q = 'lorem "ipsum" (dolor) sit* amet '.repeat(320);
    expect(q.length).toBeGreaterThan(10_000);
    expect(queryTerms(q)).toEqual(['lorem', 'ipsum', 'dolor', 'sit', 'amet']);
    expect(queryTerms(Array.from({ length: 2000 }, (_, i) => `t${i}`).join(' '))).toHaveLength(MAX_QUERY_TERMS);
  });

  it('terms hold letters, digits and marks only, whatever the text (property)', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string({ unit: 'binary', maxLength: 200 }), fc.string({ unit: 'grapheme', maxLength: 200 })), (q) => {
        for (const term of queryTerms(q)) expect(term).toMatch(TERM);
      }),
      { numRuns: 1000 },
    );
  });
});

describe('passageTerms', () => {
  it('gives the terms in order, repeats included, and their count', () => {
    expect(passageTerms('The key, the KEY and the keys: rotate them!')).toEqual({ terms: 'kei kei kei rotat', term_count: 4 });
    expect(passageTerms('')).toEqual({ terms: '', term_count: 0 });
    expect(passageTerms('the and of')).toEqual({ terms: '', term_count: 0 });
  });

  it('indexes the words a query finds (one normalisation for both)', () => {
    const content = 'Le CAFÉ est servi. Rotating keys. 日本語.';
    const indexed = new Set(passageTerms(content).terms.split(' '));
    for (const q of ['cafe', 'Café', 'rotate key', '日本']) for (const term of queryTerms(q)) expect(indexed.has(term), `${q}: ${term}`).toBe(true);
  });

  it(`keeps a term's first ${MAX_TERM_REPEATS} occurrences and the first ${MAX_INDEXED_TERMS} terms (PostgreSQL's tsvector bounds)`, () => {
    const repeated = passageTerms(`${'spam '.repeat(MAX_TERM_REPEATS + 10)}egg`);
    expect(repeated.term_count).toBe(MAX_TERM_REPEATS + 1);
    expect(repeated.terms.endsWith(' egg')).toBe(true);
    const long = passageTerms(Array.from({ length: MAX_INDEXED_TERMS + 100 }, (_, i) => `w${i}`).join(' '));
    expect(long.term_count).toBe(MAX_INDEXED_TERMS);
  });

  it('terms are separated by single spaces and hold letters, digits and marks only (property)', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 300 }), (content) => {
        const { terms, term_count } = passageTerms(content);
        const list = terms === '' ? [] : terms.split(' ');
        expect(list).toHaveLength(term_count);
        for (const term of list) expect(term).toMatch(TERM);
      }),
      { numRuns: 1000 },
    );
  });
});
