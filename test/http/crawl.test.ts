/**
 * The crawl routes' contract (issue 16 §2): 202 and a crawl id, every bad input a 4xx with the
 * error body, the access rules of the other knowledge-base routes, 404s, paging of the list.
 * No crawl job runs here: crawls stay queued, nothing is fetched.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getCrawl, listCrawls, MAX_ACTIVE_CRAWLS_PER_BOT } from '../../src/domain/knowledgebase/crawl.js';
import { Crawl } from '../../src/domain/crawl-wire.js';
import { buildTestApp, type TestApp } from '../support/app.js';
import { DIALECTS } from '../support/databases.js';
import { call, copilotPath, createCopilot, expectError, kbPath, nextLink, purgePath, TIMESTAMP, UUID_V4 } from '../support/http.js';

const UNKNOWN = '00000000-0000-4000-8000-000000000000';
const START = 'https://docs.example/guide/intro';

for (const dialect of DIALECTS) {
  describe(`crawl routes (${dialect})`, () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await buildTestApp(dialect);
    });
    afterAll(async () => t?.close());

    const crawlPath = (bot: string) => `${kbPath(bot)}/crawl`;
    const post = (bot: string, payload: unknown, key?: string | null) => call(t, 'POST', crawlPath(bot), { payload: payload as object, key });

    it('POST answers 202 with the crawl (its id, the defaults, state queued); GET answers it; the audit log has it', async () => {
      const bot = (await createCopilot(t)).id;
      const res = await post(bot, { url: START });
      expect(res.statusCode, res.body).toBe(202);
      const crawl = res.json() as Crawl;
      expect(Object.keys(crawl)).toEqual(Object.keys(Crawl.properties));
      expect(crawl.crawl_id).toMatch(UUID_V4);
      expect(crawl).toMatchObject({
        bot_id: bot,
        url: START,
        sitemap: null,
        max_pages: 500,
        max_depth: 5,
        include: [],
        exclude: [],
        state: 'queued',
        discovered: 0,
        fetched: 0,
        indexed: 0,
        failed: 0,
        error: null,
        started_at: null,
        finished_at: null,
      });
      expect(crawl.created_at).toMatch(TIMESTAMP);
      const got = await call(t, 'GET', `${kbPath(bot)}/crawls/${crawl.crawl_id}`);
      expect(got.statusCode).toBe(200);
      expect(got.json()).toEqual(crawl);
      // The knowledge base exists from the crawl on.
      expect((await call(t, 'GET', kbPath(bot))).statusCode).toBe(200);
      const audit = await call(t, 'GET', `/backend/api/audit?bot_id=${bot}&action=knowledgebase.crawl`);
      expect(audit.json()[0].details).toMatchObject({ crawl_id: crawl.crawl_id, url: START, max_pages: 500 });
    });

    it('GET of a crawl and of the list read the crawls’ rows only, never their pages (a poll of a 50,000-page crawl costs one row)', async () => {
      const bot = (await createCopilot(t)).id;
      const crawl = (await post(bot, { url: START })).json() as Crawl;
      // Each statement's SQL, as compiled for this database.
      const sqlRead: string[] = [];
      const { readDb } = t.storage;
      const spy = readDb.withPlugin({
        transformQuery(args) {
          sqlRead.push(readDb.getExecutor().compileQuery(args.node, args.queryId).sql);
          return args.node;
        },
        transformResult: async (args) => args.result,
      });
      expect(await getCrawl(spy, bot, crawl.crawl_id)).toEqual(crawl);
      expect((await listCrawls(spy, bot, { limit: 10 })).body.crawls).toEqual([crawl]);
      expect(sqlRead.some((s) => s.includes('"crawls"'))).toBe(true);
      expect(sqlRead.filter((s) => s.includes('crawl_pages'))).toEqual([]);
    });

    it('a sitemap crawl: url null, sitemap set, depth 0; the URL is stored in its canonical form', async () => {
      const bot = (await createCopilot(t)).id;
      const res = await post(bot, { sitemap: 'HTTPS://Docs.Example/%7Esite/sitemap.xml#x', max_pages: 20, include: ['/docs/'], exclude: ['*.pdf$'] });
      expect(res.statusCode, res.body).toBe(202);
      expect(res.json()).toMatchObject({
        url: null,
        sitemap: 'https://docs.example/~site/sitemap.xml',
        max_pages: 20,
        max_depth: 0,
        include: ['/docs/'],
        exclude: ['*.pdf$'],
      });
    });

    it('every bad input is 400 with the error body', async () => {
      const bot = (await createCopilot(t)).id;
      const long = `/${'a'.repeat(600)}`;
      const cases: Array<[unknown, string]> = [
        [{}, 'invalid_request'],
        [{ url: START, sitemap: START }, 'invalid_request'],
        [{ url: 'ftp://docs.example/' }, 'invalid_request'],
        [{ url: 'not a url' }, 'invalid_request'],
        [{ url: 'https://user:pw@docs.example/' }, 'invalid_request'],
        [{ url: 'https://docs.example/\u202egnp' }, 'invalid_request'],
        [{ url: `https://docs.example/${'x'.repeat(3000)}` }, 'invalid_request'],
        [{ url: 'http://10.0.0.5/docs/' }, 'address_not_allowed'],
        [{ url: 'http://169.254.169.254/latest/' }, 'address_not_allowed'],
        [{ sitemap: 'http://[fd00::1]/sitemap.xml' }, 'address_not_allowed'],
        [{ url: START, max_pages: 0 }, 'invalid_request'],
        [{ url: START, max_pages: 50_001 }, 'invalid_request'],
        [{ url: START, max_pages: 'ten' }, 'invalid_request'],
        [{ url: START, max_depth: -1 }, 'invalid_request'],
        [{ url: START, max_depth: 51 }, 'invalid_request'],
        [{ url: START, include: [long] }, 'invalid_request'],
        [{ url: START, include: ['docs/'] }, 'invalid_request'],
        [{ url: START, exclude: ['/a b'] }, 'invalid_request'],
        [{ url: START, exclude: ['/a#b'] }, 'invalid_request'],
        [{ url: START, exclude: [''] }, 'invalid_request'],
        [{ url: START, include: Array.from({ length: 21 }, (_, i) => `/p${i}`) }, 'invalid_request'],
        [{ url: START, include: '/docs/' }, 'invalid_request'],
        // Within the count and the length, but 4,980 characters after a "*": each would cost that times a URL's length.
        [{ url: START, exclude: Array.from({ length: 10 }, () => `/*${'a*'.repeat(249)}`) }, 'invalid_request'],
        [{ url: START, depth: 2 }, 'invalid_request'],
        [[START], 'invalid_request'],
      ];
      for (const [body, code] of cases) {
        const res = await post(bot, body);
        expectError(res, 400, code);
      }
      const raw = await call(t, 'POST', crawlPath(bot), { payload: '{"url": ', headers: { 'content-type': 'application/json' } });
      expectError(raw, 400, 'invalid_json');
      // Nothing was stored.
      expect((await call(t, 'GET', `${kbPath(bot)}/crawls`)).json().crawls).toEqual([]);
    });

    it('access: 401 without a key, 403 without the scope or for another bot; a key limited to the bot may', async () => {
      const bot = (await createCopilot(t)).id;
      const other = (await createCopilot(t)).id;
      expectError(await post(bot, { url: START }, null), 401, 'unauthorized');
      expectError(await post(bot, { url: START }, await t.key(['knowledgebase:read'])), 403, 'forbidden');
      expectError(await post(bot, { url: START }, await t.key(['knowledgebase:write'], [other])), 403, 'forbidden');
      const limited = await t.key(['knowledgebase:write', 'knowledgebase:read'], [bot]);
      const res = await post(bot, { url: START }, limited);
      expect(res.statusCode, res.body).toBe(202);
      const id = res.json().crawl_id as string;
      expect((await call(t, 'GET', `${kbPath(bot)}/crawls/${id}`, { key: limited })).statusCode).toBe(200);
      expectError(await call(t, 'GET', `${kbPath(bot)}/crawls/${id}`, { key: await t.key(['knowledgebase:read'], [other]) }), 403, 'forbidden');
      expectError(await call(t, 'DELETE', `${kbPath(bot)}/crawls/${id}`, { key: await t.key(['knowledgebase:read']) }), 403, 'forbidden');
      expectError(await call(t, 'GET', `${kbPath(bot)}/crawls/${id}`, { key: null }), 401, 'unauthorized');
      // Checked before the body: a bad body without a key is 401.
      expectError(await post(bot, { nonsense: true }, null), 401, 'unauthorized');
      // A crawl id is read whatever its case, as copilot and bot ids are (it was 404).
      const upper = await call(t, 'GET', `${kbPath(bot.toUpperCase())}/crawls/${id.toUpperCase()}`, { key: limited });
      expect(upper.statusCode, upper.body).toBe(200);
      expect(upper.json().crawl_id).toBe(id);
      const cancelled = await call(t, 'DELETE', `${kbPath(bot)}/crawls/${id.toUpperCase()}`, { key: limited });
      expect(cancelled.statusCode, cancelled.body).toBe(200);
      expect(cancelled.json()).toMatchObject({ crawl_id: id, state: 'cancelled' });
    });

    it('404: unknown or deleted copilot, unknown crawl, a crawl of another bot', async () => {
      const bot = (await createCopilot(t)).id;
      const other = (await createCopilot(t)).id;
      expectError(await post(UNKNOWN, { url: START }), 404, 'copilot_not_found');
      expectError(await post('not-a-uuid', { url: START }), 404, 'copilot_not_found');
      const id = (await post(other, { url: START })).json().crawl_id as string;
      expectError(await call(t, 'GET', `${kbPath(bot)}/crawls/${id}`), 404, 'crawl_not_found');
      expectError(await call(t, 'GET', `${kbPath(bot)}/crawls/${UNKNOWN}`), 404, 'crawl_not_found');
      expectError(await call(t, 'GET', `${kbPath(bot)}/crawls/x'; drop table crawls`), 404, 'crawl_not_found');
      expectError(await call(t, 'DELETE', `${kbPath(bot)}/crawls/${id}`), 404, 'crawl_not_found');
      expectError(await call(t, 'GET', `${kbPath(UNKNOWN)}/crawls`), 404, 'knowledge_base_not_found');
      // A deleted copilot: its crawls are cancelled and answer 404.
      expect((await call(t, 'DELETE', copilotPath(other))).statusCode).toBe(200);
      expectError(await call(t, 'GET', `${kbPath(other)}/crawls/${id}`), 404, 'crawl_not_found');
      expectError(await post(other, { url: START }), 404, 'copilot_not_found');
      const row = await t.storage.db.selectFrom('crawls').select(['state', 'error']).where('id', '=', id).executeTakeFirstOrThrow();
      expect(row).toEqual({ state: 'cancelled', error: 'Cancelled: the copilot was deleted.' });
      // A purge removes its crawls with it.
      expect((await call(t, 'POST', purgePath(other))).statusCode).toBe(200);
      expect(await t.storage.db.selectFrom('crawls').select('id').where('bot_id', '=', other).execute()).toEqual([]);
    });

    it(`at most ${MAX_ACTIVE_CRAWLS_PER_BOT} unfinished crawls per bot (429); a cancel frees a place`, async () => {
      const bot = (await createCopilot(t)).id;
      const ids: string[] = [];
      for (let i = 0; i < MAX_ACTIVE_CRAWLS_PER_BOT; i++) ids.push((await post(bot, { url: `${START}/${i}` })).json().crawl_id);
      expectError(await post(bot, { url: START }), 429, 'quota_exceeded');
      const cancelled = await call(t, 'DELETE', `${kbPath(bot)}/crawls/${ids[0]}`);
      expect(cancelled.statusCode).toBe(200);
      expect(cancelled.json()).toMatchObject({ state: 'cancelled' });
      expect(cancelled.json().finished_at).toMatch(TIMESTAMP);
      expect((await post(bot, { url: START })).statusCode).toBe(202);
    });

    it('the list pages newest first with a Link header; a bad cursor is 400', async () => {
      const bot = (await createCopilot(t)).id;
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) {
        const id = (await post(bot, { url: `${START}/${i}` })).json().crawl_id as string;
        ids.push(id);
        await call(t, 'DELETE', `${kbPath(bot)}/crawls/${id}`);
      }
      const seen: string[] = [];
      let path: string | null = `${kbPath(bot)}/crawls?limit=2`;
      while (path) {
        const res = await call(t, 'GET', path);
        expect(res.statusCode, res.body).toBe(200);
        seen.push(...(res.json().crawls as Crawl[]).map((c) => c.crawl_id));
        path = nextLink(res);
      }
      expect(seen).toEqual([...ids].reverse());
      expectError(await call(t, 'GET', `${kbPath(bot)}/crawls?cursor=nope!`), 400, 'invalid_cursor');
    });
  });
}
