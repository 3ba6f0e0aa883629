import Database from 'better-sqlite3';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  MAX_QUERY_TOKENS,
  MAX_TOKEN_LENGTH,
  normaliseSearchText,
  toFts5Query,
} from '../../../src/domain/knowledgebase/search-query.js';

describe('toFts5Query and normaliseSearchText', () => {
  const manyWords = Array.from({ length: 40 }, (_, i) => `w${i}`);
  const cases: Array<{ name: string; q: string; fts: string | null; text: string | null }> = [
    { name: 'keywords', q: 'reset password', fts: '"reset" OR "password"', text: 'reset password' },
    { name: 'a question', q: 'How do I reset my password?', fts: '"How" OR "do" OR "I" OR "reset" OR "my" OR "password"', text: 'How do I reset my password' },
    { name: 'empty', q: '', fts: null, text: null },
    { name: 'punctuation and search syntax only', q: ' "*^:-() NEAR/ + ', fts: '"NEAR"', text: 'NEAR' },
    { name: 'operators are plain words', q: 'cats AND dogs OR NOT mice', fts: '"cats" OR "AND" OR "dogs" OR "OR" OR "NOT" OR "mice"', text: 'cats AND dogs OR NOT mice' },
    { name: 'FTS5 syntax around words', q: 'title:api "key* ^rotate" -(old)', fts: '"title" OR "api" OR "key" OR "rotate" OR "old"', text: 'title api key rotate old' },
    { name: 'joined words stay one phrase', q: "node.js don't snake_case e-mail 3.14 it’s", fts: '"node.js" OR "don\'t" OR "snake_case" OR "e-mail" OR "3.14" OR "it’s"', text: "node.js don't snake_case e-mail 3.14 it’s" },
    { name: 'trailing joiners are dropped', q: 'end. -start _x_ ..', fts: '"end" OR "start" OR "x"', text: 'end start x' },
    { name: 'case-insensitive duplicates once, first spelling kept', q: 'Key key KEY keys', fts: '"Key" OR "keys"', text: 'Key keys' },
    { name: 'Unicode letters, digits and marks', q: 'café naïve हिन्दी ٣٤ 日本語', fts: '"café" OR "naïve" OR "हिन्दी" OR "٣٤" OR "日本語"', text: 'café naïve हिन्दी ٣٤ 日本語' },
    { name: 'decomposed accents are composed (NFC)', q: 'cafe\u0301', fts: '"caf\u00e9"', text: 'caf\u00e9' },
    { name: 'emoji and symbols are not words', q: '😀 🔑 → ✓ © ™', fts: null, text: null },
    { name: 'SQL injection text is just words', q: "'; DROP TABLE passages; --", fts: '"DROP" OR "TABLE" OR "passages"', text: 'DROP TABLE passages' },
    { name: `at most ${MAX_QUERY_TOKENS} tokens`, q: manyWords.join(' '), fts: manyWords.slice(0, MAX_QUERY_TOKENS).map((w) => `"${w}"`).join(' OR '), text: manyWords.slice(0, MAX_QUERY_TOKENS).join(' ') },
    { name: 'over-long words are dropped', q: `${'a'.repeat(MAX_TOKEN_LENGTH + 1)} ok ${'b'.repeat(MAX_TOKEN_LENGTH)}`, fts: `"ok" OR "${'b'.repeat(MAX_TOKEN_LENGTH)}"`, text: `ok ${'b'.repeat(MAX_TOKEN_LENGTH)}` },
    { name: 'an over-long compound falls back to its parts', q: Array.from({ length: 20 }, (_, i) => `part${i}`).join('.'), fts: Array.from({ length: 20 }, (_, i) => `"part${i}"`).join(' OR '), text: Array.from({ length: 20 }, (_, i) => `part${i}`).join(' ') },
  ];
  it.each(cases)('$name', ({ q, fts, text }) => {
    expect(toFts5Query(q)).toBe(fts);
    expect(normaliseSearchText(q)).toBe(text);
  });

  it('handles a 10,000-character query quickly and within the caps', () => {
    const q = 'lorem "ipsum" (dolor) sit* amet '.repeat(320);
    expect(q.length).toBeGreaterThan(10_000);
    expect(toFts5Query(q)).toBe('"lorem" OR "ipsum" OR "dolor" OR "sit" OR "amet"');
    const distinct = Array.from({ length: 2000 }, (_, i) => `t${i}`).join(' ');
    expect(toFts5Query(distinct)!.split(' OR ')).toHaveLength(MAX_QUERY_TOKENS);
  });
});

describe('toFts5Query against a real SQLite FTS5 table', () => {
  let db: Database.Database;
  const passages = [
    { id: 1, body: 'To reset your password, open Settings and choose Reset password. A link is sent by e-mail.' },
    { id: 2, body: 'API keys can be rotated: create a new key, deploy it, then revoke the old key.' },
    { id: 3, body: 'The dashboard shows usage per copilot. Passwords are never shown in the dashboard.' },
    { id: 4, body: "Install with npm. Node.js 20 or newer is required; don't use Node 18." },
    { id: 5, body: 'Le café est servi. Naïve questions are welcome — 日本語 text too.' },
    { id: 6, body: 'The NEAR operator and AND/OR/NOT keywords appear here as plain words: "quoted" (parenthesised) star* caret^ colon:' },
  ];

  beforeAll(() => {
    db = new Database(':memory:');
    db.exec(`CREATE VIRTUAL TABLE passages USING fts5(body, tokenize = 'unicode61 remove_diacritics 2')`);
    const insert = db.prepare('INSERT INTO passages (rowid, body) VALUES (?, ?)');
    for (const p of passages) insert.run(p.id, p.body);
  });
  afterAll(() => db.close());

  const search = (q: string): number[] => {
    const match = toFts5Query(q);
    if (match === null) return [];
    return db
      .prepare('SELECT rowid AS id FROM passages WHERE passages MATCH ? ORDER BY bm25(passages) LIMIT 10')
      .all(match)
      .map((row) => (row as { id: number }).id);
  };

  const ranked: Array<{ q: string; first: number }> = [
    { q: 'reset password', first: 1 },
    { q: 'How do I reset my password?', first: 1 },
    { q: 'rotate api key', first: 2 },
    { q: 'revoke old keys', first: 2 },
    { q: 'node.js version', first: 4 },
    { q: "don't", first: 4 },
    { q: 'cafe naive', first: 5 },
    { q: '日本語', first: 5 },
    { q: 'NEAR(', first: 6 },
    { q: 'AND OR NOT', first: 6 },
  ];
  it.each(ranked)('"$q" ranks passage $first first', ({ q, first }) => {
    expect(search(q)[0]).toBe(first);
  });

  it('OR still finds a passage when some query words do not occur anywhere', () => {
    expect(search('password zebra xylophone')).toContain(1);
  });

  const hostile = [
    '"', '""', '"""', '*', '**', 'NEAR(', 'NEAR(a b', 'NEAR/3', 'AND', 'OR', 'NOT', 'AND OR NOT', '^', '^key', ':', 'body:', 'body:key',
    '-', '-key', '(', ')', '()', '(key', 'key)', '{body}: key', '+', 'key*', '*key', '"unterminated', "'", "' OR 1=1 --",
    "'; DROP TABLE passages; --", 'passages MATCH', '\\', '\u0000', '\u0000key', '😀', '🔑 key', '\ud83d', 'a'.repeat(10_000),
    'key '.repeat(2_500), '"key" '.repeat(2_000), '(('.repeat(5_000), 'x\u0301\u0301\u0301', '\u200b', '\ufeffkey',
  ];
  it.each(hostile.map((q) => ({ q, shown: JSON.stringify(q.slice(0, 30)) })))('never throws on $shown', ({ q }) => {
    expect(() => search(q)).not.toThrow();
    expect(() => normaliseSearchText(q)).not.toThrow();
  });

  it('never produces an invalid MATCH expression for any text (property)', () => {
    const statement = db.prepare('SELECT count(*) AS n FROM passages WHERE passages MATCH ?');
    const syntax = fc.constantFrom('"', '*', '^', ':', '-', '(', ')', ' NEAR(', ' AND ', ' OR ', ' NOT ', '+', '{', '}', "'", '\\', '\u0000');
    const queryText = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 200 }),
      fc.array(fc.oneof(syntax, fc.stringMatching(/^[a-zé]{1,6}$/)), { maxLength: 40 }).map((parts) => parts.join('')),
    );
    fc.assert(
      fc.property(queryText, (q) => {
        const match = toFts5Query(q);
        if (match !== null) statement.get(match);
      }),
      { numRuns: 500 },
    );
    // The table survived everything above.
    expect(db.prepare('SELECT count(*) AS n FROM passages').get()).toEqual({ n: passages.length });
  });

  it("works with the storage layer's table (contentless, porter stemming)", () => {
    db.exec(`CREATE VIRTUAL TABLE stemmed USING fts5(content, content='', contentless_delete=1, tokenize='porter unicode61')`);
    const insert = db.prepare('INSERT INTO stemmed (rowid, content) VALUES (?, ?)');
    for (const p of passages) insert.run(p.id, p.body);
    const find = (q: string): number[] =>
      db
        .prepare('SELECT rowid AS id FROM stemmed WHERE stemmed MATCH ? ORDER BY bm25(stemmed)')
        .all(toFts5Query(q)!)
        .map((r) => (r as { id: number }).id);
    expect(find('rotating keys')[0]).toBe(2);
    expect(find('Passwords resetting')[0]).toBe(1);
    for (const q of hostile) {
      const match = toFts5Query(q);
      if (match !== null) expect(() => find(q)).not.toThrow();
    }
  });

  it('matches the same passages under the trigram tokenizer', () => {
    db.exec(`CREATE VIRTUAL TABLE tri USING fts5(body, tokenize = 'trigram')`);
    const insert = db.prepare('INSERT INTO tri (rowid, body) VALUES (?, ?)');
    for (const p of passages) insert.run(p.id, p.body);
    const match = toFts5Query('rotated keys!')!;
    const ids = db.prepare('SELECT rowid AS id FROM tri WHERE tri MATCH ?').all(match).map((r) => (r as { id: number }).id);
    expect(ids).toContain(2);
  });
});
