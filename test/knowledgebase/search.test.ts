import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../support/app.js';
import { DIALECTS } from '../support/databases.js';
import { call, createCopilot, expectError, kbPath } from '../support/http.js';
import { postLinks, search, waitForLinks } from '../support/knowledge-base.js';
import { PageServer } from '../support/pages.js';

// Pages of equal length, so that length normalisation plays no part in the ranking.
const pad = (words: string[], n = 12) => `${[...words, ...Array.from({ length: n - words.length }, () => 'ordinary')].join(' ')}.`;

const HOSTILE_QUERIES = [
  '"',
  '""',
  '"zorblat',
  '*',
  'zorblat*',
  'NEAR(',
  'NEAR(zorblat quinzel, 2)',
  'AND OR NOT',
  'zorblat AND',
  'OR',
  'NOT zorblat',
  '-',
  '-zorblat',
  '(',
  ')',
  '(zorblat',
  ':',
  'content:zorblat',
  'kb_passages_fts:zorblat',
  '^',
  '^zorblat',
  '{zorblat quinzel}',
  "zorblat'",
  "'; DROP TABLE kb_passages; --",
  "' OR 1=1 --",
  'zorblat"); DELETE FROM kb_links; --',
  '1; select * from audit_log',
  '\\',
  '%_%',
  '&|!<->',
  'zorblat & quinzel | !frobnix <-> x',
  ':* zorblat:*',
  'the of and',
  'and or not the',
  '🚀🔥',
  'zorblat 🚀 quinzel',
  'e\u0301\u0301\u0301',
  '\u200b\u200d',
  'a'.repeat(1000),
  '"*()^:-'.repeat(142).slice(0, 1000),
  'zorblat NEAR( "x" * ^ : - ( ) OR AND NOT '.repeat(30).slice(0, 1000),
];

for (const dialect of DIALECTS) {
  describe(`knowledge-base search (${dialect})`, () => {
    let t: TestApp;
    let pages: PageServer;
    let bot: string;
    const url = (p: string) => pages.url(p);

    beforeAll(async () => {
      pages = await PageServer.start();
      t = await buildTestApp(dialect, { worker: true });
      bot = (await createCopilot(t)).id;
      const text = (body: string) => ({ type: 'text/plain', body });
      pages
        .set('/rank/one', text(pad(['zorblat'])))
        .set('/rank/two', text(pad(['zorblat', 'quinzel'])))
        .set('/rank/three', text(pad(['zorblat', 'quinzel', 'frobnix'])))
        .set('/rank/none', text(pad(['unrelated'])));
      // Rarity: "plentiful" is in five pages, "scarcity" in one.
      for (let i = 0; i < 5; i++) pages.set(`/rare/common-${i}`, text(pad(['plentiful', `filler${i}`])));
      pages.set('/rare/rare', text(pad(['scarcity', 'fillerx'])));
      const all = ['/rank/one', '/rank/two', '/rank/three', '/rank/none', ...Array.from({ length: 5 }, (_, i) => `/rare/common-${i}`), '/rare/rare'].map(url);
      expect((await postLinks(t, bot, all)).statusCode).toBe(202);
      const done = await waitForLinks(t, bot, all);
      for (const u of all) expect(done.get(u)!.status, u).toBe('indexed');
    });
    afterAll(async () => {
      await t?.close();
      await pages?.close();
    });

    it('ranks the passage matching more query words first, each result with its url', async () => {
      const { results, query, bot_id } = await search(t, bot, 'zorblat quinzel frobnix');
      expect(bot_id).toBe(bot);
      expect(query).toBe('zorblat quinzel frobnix');
      expect(results.map((r) => r.url)).toEqual([url('/rank/three'), url('/rank/two'), url('/rank/one')]);
      for (const r of results) {
        expect(Object.keys(r)).toEqual(['url', 'passage', 'content', 'score']);
        expect(r.passage).toBe(0);
        expect(typeof r.score).toBe('number');
      }
      expect(results[0]!.score).toBeGreaterThan(results[1]!.score);
      expect(results[1]!.score).toBeGreaterThan(results[2]!.score);
      // Word order and case do not matter.
      expect((await search(t, bot, 'FROBNIX Zorblat')).results[0]!.url).toBe(url('/rank/three'));
    });

    it('ranks the passage matching the rarer query word first', async () => {
      const { results } = await search(t, bot, 'plentiful scarcity');
      expect(results).toHaveLength(6);
      expect(results[0]!.url).toBe(url('/rare/rare'));
    });

    it('any query text is answered 200 (never 500), and words inside it still match', async () => {
      for (const q of HOSTILE_QUERIES) {
        const res = await call(t, 'GET', `${kbPath(bot)}/search?${new URLSearchParams({ q }).toString()}`);
        expect(res.statusCode, `${JSON.stringify(q)} → ${res.body}`).toBe(200);
        const body = res.json() as { query: string; results: Array<{ url: string }> };
        expect(body.query).toBe(q);
        if (/zorblat/i.test(q)) expect(body.results.length, q).toBeGreaterThan(0);
      }
      // The tables are still there and whole.
      expect((await search(t, bot, 'zorblat')).results).toHaveLength(3);
    });

    it('a query without any word token answers 200 with no results', async () => {
      for (const q of ['', ' ', '"', '***', '()', '🚀', '- ^ :', '\u200b']) {
        const body = await search(t, bot, q);
        expect(body.results, JSON.stringify(q)).toEqual([]);
      }
    });

    it('a word in no passage answers 200 with no results', async () => {
      expect((await search(t, bot, 'nonexistentwordqq')).results).toEqual([]);
    });

    it('limit bounds the results; out-of-range limit or missing q is 400 invalid_request', async () => {
      const q = 'zorblat quinzel frobnix';
      expect((await search(t, bot, q, 1)).results.map((r) => r.url)).toEqual([url('/rank/three')]);
      expect((await search(t, bot, q, 2)).results.map((r) => r.url)).toEqual([url('/rank/three'), url('/rank/two')]);
      expect((await search(t, bot, 'zorblat', 100)).results).toHaveLength(3);
      expect((await search(t, bot, 'zorblat plentiful ordinary')).results).toHaveLength(10); // default 10
      for (const query of [
        'q=zorblat&limit=0',
        'q=zorblat&limit=101',
        'q=zorblat&limit=-1',
        'q=zorblat&limit=abc',
        'limit=5',
        `q=${'a'.repeat(1001)}`,
        'q=zorblat&other=1',
      ]) {
        expectError(await call(t, 'GET', `${kbPath(bot)}/search?${query}`), 400, 'invalid_request');
      }
    });

    it("search sees only this bot's passages", async () => {
      const other = (await createCopilot(t, { name: 'Other bot' })).id;
      pages.set('/other/zorblat', { type: 'text/plain', body: 'zorblat belongs to another bot here' });
      await postLinks(t, other, [url('/other/zorblat')]);
      await waitForLinks(t, other, [url('/other/zorblat')]);
      expect((await search(t, bot, 'zorblat')).results.map((r) => r.url)).not.toContain(url('/other/zorblat'));
      expect((await search(t, other, 'zorblat')).results.map((r) => r.url)).toEqual([url('/other/zorblat')]);
    });

    it('search needs knowledgebase:read and respects a bot limit', async () => {
      const path = `${kbPath(bot)}/search?q=zorblat`;
      const other = (await createCopilot(t, { name: 'Another bot' })).id;
      expectError(await call(t, 'GET', path, { key: null }), 401, 'unauthorized');
      expectError(await call(t, 'GET', path, { key: await t.key(['copilots:read']) }), 403, 'forbidden');
      expectError(await call(t, 'GET', path, { key: await t.key(['knowledgebase:read'], [other]) }), 403, 'forbidden');
      expect((await call(t, 'GET', path, { key: await t.key(['knowledgebase:read'], [bot]) })).statusCode).toBe(200);
    });
  });
}

// Issue 14 §4: the documented behaviour (README, "Search"), asserted on each database.
for (const dialect of DIALECTS) {
  describe(`knowledge-base search: folding, stop words, stemming, score (${dialect})`, () => {
    let t: TestApp;
    let pages: PageServer;
    let bot: string;
    const body: Record<string, string> = {
      '/cafe-fr': 'Le café est servi. Crème brûlée.',
      '/cafe-en': 'The cafe opens at eight.',
      '/de': 'Die Straße ÜBER dem Fluss.',
      '/el': 'Ο δρόμος και η οδός.',
      '/ru': 'ПРИВЕТ, мир.',
      '/stop': 'The and of to in it is that was for on.',
      '/keys': 'Rotate the API key: create a new key, then revoke the old key.',
      '/api': 'The API reference lists every endpoint.',
      '/intro': 'How do I get started? Read the introduction first.',
    };
    const path = (u: string) => new URL(u).pathname;
    const found = async (q: string) => (await search(t, bot, q, 100)).results.map((r) => path(r.url));

    beforeAll(async () => {
      pages = await PageServer.start();
      t = await buildTestApp(dialect, { worker: true });
      bot = (await createCopilot(t)).id;
      for (const [p, text] of Object.entries(body)) pages.set(p, { type: 'text/plain; charset=utf-8', body: text });
      const all = Object.keys(body).map((p) => pages.url(p));
      expect((await postLinks(t, bot, all)).statusCode).toBe(202);
      const done = await waitForLinks(t, bot, all);
      for (const u of all) expect(done.get(u)!.status, u).toBe('indexed');
    });
    afterAll(async () => {
      await t?.close();
      await pages?.close();
    });

    it('folds diacritics both ways', async () => {
      for (const q of ['cafe', 'café', 'CAFÉ', 'cafe\u0301']) expect((await found(q)).sort(), q).toEqual(['/cafe-en', '/cafe-fr']);
      expect(await found('creme brulee')).toEqual(['/cafe-fr']);
      expect(await found('uber')).toEqual(['/de']);
    });

    it('folds case beyond ASCII (ß → ss, final sigma, Cyrillic)', async () => {
      for (const q of ['strasse', 'STRASSE', 'straße', 'Über']) expect(await found(q), q).toEqual(['/de']);
      for (const q of ['ΟΔΟΣ', 'οδος', 'οδός']) expect(await found(q), q).toEqual(['/el']);
      for (const q of ['привет', 'Привет', 'МИР']) expect(await found(q), q).toEqual(['/ru']);
    });

    it('drops English stop words from pages and queries alike', async () => {
      expect(await found('the')).toEqual([]);
      expect(await found('the of and')).toEqual([]);
      // The question's content words decide: "rotate", "api", "key".
      const question = await found('how do I rotate an api key');
      expect(question[0]).toBe('/keys');
      expect(question.sort()).toEqual(['/api', '/keys']);
    });

    it('stems English words (Porter) in pages and queries alike', async () => {
      expect(await found('rotating keys')).toEqual(['/keys']);
      expect(await found('revoked')).toEqual(['/keys']);
      expect(await found('introductions')).toEqual(['/intro']);
    });

    it('scores on a 0–1 scale, higher is better, best first', async () => {
      const { results } = await search(t, bot, 'rotate api key', 100);
      expect(results.map((r) => path(r.url))).toEqual(['/keys', '/api']);
      for (const r of results) {
        expect(r.score).toBeGreaterThan(0);
        expect(r.score).toBeLessThan(1);
      }
      expect(results[0]!.score).toBeGreaterThan(results[1]!.score);
      // A word found nowhere neither adds nor takes away.
      const withStray = (await search(t, bot, 'rotate api key zzzznotthere', 100)).results;
      expect(withStray.map((r) => [r.url, r.score])).toEqual(results.map((r) => [r.url, r.score]));
    });
  });
}
