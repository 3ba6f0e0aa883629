import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../support/app.js';
import { DIALECTS } from '../support/databases.js';
import { call, copilotPath, createCopilot, expectError, kbPath, nextLink } from '../support/http.js';
import { deleteLinks, linkRows, postLinks, type WireLink } from '../support/knowledge-base.js';

const UNKNOWN_BOT = '00000000-0000-4000-8000-000000000000';

for (const dialect of DIALECTS) {
  describe(`knowledge-base routes (${dialect})`, () => {
    let t: TestApp;
    // No worker: links stay pending, nothing is fetched.
    beforeAll(async () => {
      t = await buildTestApp(dialect);
    });
    afterAll(async () => t?.close());

    describe('GET /backend/knowledgebase/b/:bot_id', () => {
      it('pages with limit and a Link rel="next" header; walking it visits every link once, oldest first', async () => {
        const bot = (await createCopilot(t)).id;
        const urls = Array.from({ length: 7 }, (_, i) => `https://docs.example/page-${i}`);
        // One request per link, so each has its own created_at.
        for (const u of urls) expect((await postLinks(t, bot, [u])).statusCode).toBe(202);

        const seen: WireLink[] = [];
        let path: string | null = `${kbPath(bot)}?limit=3`;
        const sizes: number[] = [];
        while (path) {
          const res = await call(t, 'GET', path);
          expect(res.statusCode, res.body).toBe(200);
          const body = res.json() as { bot_id: string; links: WireLink[] };
          expect(Object.keys(body)).toEqual(['bot_id', 'links']);
          expect(body.bot_id).toBe(bot);
          sizes.push(body.links.length);
          seen.push(...body.links);
          path = nextLink(res);
          if (path) expect(path.startsWith(`${kbPath(bot)}?`)).toBe(true);
        }
        expect(sizes).toEqual([3, 3, 1]);
        expect(seen.map((l) => l.url)).toEqual(urls);
        for (const link of seen) expect(link).toMatchObject({ status: 'pending', error: null, passages: 0 });

        // Exactly a page's worth: no next link after it.
        const exact = await call(t, 'GET', `${kbPath(bot)}?limit=7`);
        expect(exact.json().links).toHaveLength(7);
        expect(exact.headers.link).toBeUndefined();
        // Default limit covers them all.
        expect((await call(t, 'GET', kbPath(bot))).json().links).toHaveLength(7);
      });

      it('links added in one request are listed in the order they were sent, page after page', async () => {
        // They shared one created_at, so the list ordered them by their random ids.
        const bot = (await createCopilot(t)).id;
        const urls = ['q', 'c', 'x', 'a', 'm', 'z', 'b', 'k'].map((name) => `https://docs.example/${name}`);
        expect((await postLinks(t, bot, urls)).statusCode).toBe(202);
        const first = await call(t, 'GET', `${kbPath(bot)}?limit=5`);
        const second = await call(t, 'GET', nextLink(first)!);
        expect([...first.json().links, ...second.json().links].map((l: WireLink) => l.url)).toEqual(urls);
        // Each was updated when it was created, not before (lists sweep: updated_at was the first one's created_at).
        for (const link of [...first.json().links, ...second.json().links] as Array<WireLink & { created_at: string; updated_at: string }>) {
          expect(link.updated_at, link.url).toBe(link.created_at);
        }
      });

      it('links added in one request share created_at: paging still visits each exactly once', async () => {
        const bot = (await createCopilot(t)).id;
        const urls = Array.from({ length: 10 }, (_, i) => `https://docs.example/batch-${i}`);
        expect((await postLinks(t, bot, urls)).statusCode).toBe(202);
        const seen: string[] = [];
        let path: string | null = `${kbPath(bot)}?limit=4`;
        while (path) {
          const res = await call(t, 'GET', path);
          expect(res.statusCode, res.body).toBe(200);
          seen.push(...(res.json() as { links: WireLink[] }).links.map((l) => l.url));
          path = nextLink(res);
        }
        expect(seen).toHaveLength(10);
        expect([...seen].sort()).toEqual([...urls].sort());
      });

      // Fastify's router refuses long parameters (maxParamLength) before any hook; the app raises it.
      it('a bot id over 100 characters: 401 without a key, 404 with one, in the contract envelope', async () => {
        const long = `${'a'.repeat(101)}`;
        expectError(await call(t, 'GET', kbPath(long), { key: null }), 401, 'unauthorized');
        expectError(await deleteLinks(t, long, ['https://docs.example/a'], null), 401, 'unauthorized');
        expectError(await call(t, 'GET', kbPath(long)), 404, 'knowledge_base_not_found');
        expectError(await deleteLinks(t, long, ['https://docs.example/a']), 404, 'knowledge_base_not_found');
      });

      it("another list's cursor (the copilots', another bot's links', a crawl list's) → 400 invalid_cursor, not a page of this list at its position (lists sweep)", async () => {
        const [bot, other] = [(await createCopilot(t)).id, (await createCopilot(t)).id];
        for (const b of [bot, other]) await postLinks(t, b, ['https://docs.example/1', 'https://docs.example/2']);
        const cursorOf = (res: Awaited<ReturnType<typeof call>>) => new URL(nextLink(res)!, 'http://x').searchParams.get('cursor')!;
        const own = cursorOf(await call(t, 'GET', `${kbPath(bot)}?limit=1`));
        expect((await call(t, 'GET', `${kbPath(bot)}?cursor=${own}`)).statusCode).toBe(200);
        const foreign = [cursorOf(await call(t, 'GET', `${kbPath(other)}?limit=1`)), cursorOf(await call(t, 'GET', '/backend/api/copilots?limit=1'))];
        for (const cursor of foreign) {
          expectError(await call(t, 'GET', `${kbPath(bot)}?cursor=${cursor}`), 400, 'invalid_cursor');
          expectError(await call(t, 'GET', `${kbPath(bot)}/crawls?cursor=${cursor}`), 400, 'invalid_cursor');
          expectError(await call(t, 'GET', `/backend/api/webhooks/deliveries?cursor=${cursor}`), 400, 'invalid_cursor');
        }
        expectError(await call(t, 'GET', `/backend/api/copilots?cursor=${own}`), 400, 'invalid_cursor');
      });

      it('a bad cursor or limit is 400', async () => {
        const bot = (await createCopilot(t)).id;
        await postLinks(t, bot, ['https://docs.example/x']);
        for (const cursor of ['not-a-cursor', 'eyJhIjoxfQ', Buffer.from('["2024-01-01T00:00:00.000000Z"]').toString('base64url'), '!!!', 'a'.repeat(401)]) {
          const res = await call(t, 'GET', `${kbPath(bot)}?cursor=${encodeURIComponent(cursor)}`);
          expect(res.statusCode, cursor).toBe(400);
          expect(['invalid_cursor', 'invalid_request']).toContain(res.json().error);
        }
        expectError(await call(t, 'GET', `${kbPath(bot)}?cursor=not-a-cursor`), 400, 'invalid_cursor');
        for (const limit of ['0', '1001', '-1', 'ten']) expectError(await call(t, 'GET', `${kbPath(bot)}?limit=${limit}`), 400, 'invalid_request');
      });

      it('404 for an unknown bot, a non-UUID bot id and a bot without a knowledge base', async () => {
        expectError(await call(t, 'GET', kbPath(UNKNOWN_BOT)), 404, 'knowledge_base_not_found');
        expectError(await call(t, 'GET', kbPath('nope')), 404, 'knowledge_base_not_found');
        expectError(await call(t, 'GET', kbPath((await createCopilot(t)).id)), 404, 'knowledge_base_not_found');
      });

      it('401 without a key, 403 without knowledgebase:read or for a key limited to another bot', async () => {
        const bot = (await createCopilot(t)).id;
        await postLinks(t, bot, ['https://docs.example/y']);
        expectError(await call(t, 'GET', kbPath(bot), { key: null }), 401, 'unauthorized');
        expectError(await call(t, 'GET', kbPath(bot), { key: await t.key(['knowledgebase:write', 'knowledgebase:delete']) }), 403, 'forbidden');
        expectError(
          await call(t, 'GET', kbPath(bot), { key: await t.key(['knowledgebase:read'], [(await createCopilot(t, { name: 'Another bot' })).id]) }),
          403,
          'forbidden',
        );
        expect((await call(t, 'GET', kbPath(bot), { key: await t.key(['knowledgebase:read'], [bot]) })).statusCode).toBe(200);
      });
    });

    describe('POST /backend/knowledgebase/b/:bot_id', () => {
      it('202 creates the knowledge base on the first link; duplicates in one request count once', async () => {
        const bot = (await createCopilot(t)).id;
        expectError(await call(t, 'GET', kbPath(bot)), 404, 'knowledge_base_not_found');
        const res = await postLinks(t, bot, ['https://docs.example/a', 'https://docs.example/b', 'https://docs.example/a']);
        expect(res.statusCode, res.body).toBe(202);
        expect(res.json().links.map((l: WireLink) => l.url)).toEqual(['https://docs.example/a', 'https://docs.example/b']);
        expect(await linkRows(t.storage, bot)).toHaveLength(2);
        expect((await call(t, 'GET', kbPath(bot))).json().links).toHaveLength(2);
      });

      it('one page, one link: spellings of a page in one request are one link; POST and GET show the canonical form', async () => {
        const bot = (await createCopilot(t)).id;
        const res = await postLinks(t, bot, [
          'HTTPS://Docs.Example/a/../guide#top',
          'https://docs.example/guide',
          'https://docs.example.:443/%67uide',
          'https://bücher.example/%7esite',
          'https://xn--bcher-kva.example/~site',
        ]);
        expect(res.statusCode, res.body).toBe(202);
        expect(res.json().links.map((l: WireLink) => l.url)).toEqual(['https://docs.example/guide', 'https://xn--bcher-kva.example/~site']);
        expect((await linkRows(t.storage, bot)).map((r) => r.url).sort()).toEqual(['https://docs.example/guide', 'https://xn--bcher-kva.example/~site']);
        // Another request in yet another spelling is the same link again (refreshed, not added).
        const again = await postLinks(t, bot, ['https://DOCS.example/guide#faq']);
        expect(again.json().links.map((l: WireLink) => l.url)).toEqual(['https://docs.example/guide']);
        const listed = (await call(t, 'GET', kbPath(bot))).json() as { links: WireLink[] };
        // One request's links share created_at, so their list order is by id: compare as sets.
        expect(listed.links.map((l) => l.url).sort()).toEqual(['https://docs.example/guide', 'https://xn--bcher-kva.example/~site']);
      });

      it('400 for a link holding a bidi control or another invisible formatting character; nothing is stored', async () => {
        const bot = (await createCopilot(t)).id;
        for (const link of [
          'https://e.example/\u202egnp.exe',
          'https://e.example/a\u2066b',
          'https://e.example/\u200f',
          'https://e.example/\u0085',
          'https://e.example/\u061c',
        ]) {
          for (const send of [postLinks, deleteLinks]) {
            const error = expectError(await send(t, bot, ['https://docs.example/fine', link]), 400, 'invalid_request');
            const problems = (error.details as { problems: Array<{ index: number; reason: string }> }).problems;
            expect(problems, JSON.stringify(link)).toEqual([
              { index: 1, reason: expect.stringMatching(/^must not contain control or invisible formatting characters \(U\+[0-9A-F]{4}\)\.$/) },
            ]);
          }
        }
        expect(await linkRows(t.storage, bot)).toEqual([]);
      });

      it('400 invalid_request with the offending index for bad bodies', async () => {
        const bot = (await createCopilot(t)).id;
        const cases: Array<[unknown, number | null]> = [
          [['https://docs.example/a'], null],
          [{}, null],
          [{ links: [] }, -1],
          [{ links: 'https://docs.example/a' }, -1],
          [{ links: ['https://docs.example/a', 7] }, 1],
          [{ links: ['relative/path'] }, 0],
          [{ links: ['https://docs.example/a', 'ftp://docs.example/b'] }, 1],
          [{ links: [`https://docs.example/${'x'.repeat(2040)}`] }, 0],
          [{ links: ['https://user:pass@docs.example/'] }, 0],
          [{ links: Array.from({ length: 1001 }, (_, i) => `https://docs.example/${i}`) }, 1000],
        ];
        for (const [body, index] of cases) {
          const res = await call(t, 'POST', kbPath(bot), { payload: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
          const error = expectError(res, 400, 'invalid_request');
          if (index !== null)
            expect((error.details as { problems: Array<{ index: number }> }).problems[0]!.index, JSON.stringify(body).slice(0, 80)).toBe(index);
        }
        expectError(await call(t, 'POST', kbPath(bot), { payload: '{"links":', headers: { 'content-type': 'application/json' } }), 400, 'invalid_json');
        // Nothing was queued, and no knowledge base was created.
        expect(await linkRows(t.storage, bot)).toEqual([]);
        expectError(await call(t, 'GET', kbPath(bot)), 404, 'knowledge_base_not_found');
      });

      it('404 copilot_not_found for an unknown bot and a non-UUID bot id; 400 comes first', async () => {
        expectError(await postLinks(t, UNKNOWN_BOT, ['https://docs.example/a']), 404, 'copilot_not_found');
        expectError(await postLinks(t, 'not-a-bot', ['https://docs.example/a']), 404, 'copilot_not_found');
        expectError(await postLinks(t, UNKNOWN_BOT, []), 400, 'invalid_request');
      });

      it('401 → 403 → 400: the key is checked before the body', async () => {
        const bot = (await createCopilot(t)).id;
        expectError(await postLinks(t, bot, [], null), 401, 'unauthorized');
        expectError(await postLinks(t, bot, [], await t.key(['knowledgebase:read'])), 403, 'forbidden');
        expectError(
          await postLinks(t, bot, [], await t.key(['knowledgebase:write'], [(await createCopilot(t, { name: 'Another bot' })).id])),
          403,
          'forbidden',
        );
        expect((await postLinks(t, bot, ['https://docs.example/a'], await t.key(['knowledgebase:write'], [bot]))).statusCode).toBe(202);
      });
    });

    it('a request at the bounds (1000 URLs of 2048 characters, ~2 MB) is read and answered, never 413; past them 400; a huge body 413', async () => {
      const bot = (await createCopilot(t)).id;
      const url = (i: number, fill = 'a') => {
        const head = `https://docs.example/${String(i).padStart(4, '0')}/`;
        return head + fill.repeat(2048 - head.length);
      };
      const max = Array.from({ length: 1000 }, (_, i) => url(i));
      expect(max.every((u) => u.length === 2048)).toBe(true);
      expect(JSON.stringify({ links: max }).length).toBeGreaterThan(2_000_000);
      const added = await postLinks(t, bot, max);
      expect(added.statusCode, added.body.slice(0, 200)).toBe(202);
      expect(added.json().links).toHaveLength(1000);
      // Non-ASCII characters take up to 3 bytes each in UTF-8: the body is still within the bounds
      // (read and answered, not 413), and each link is refused for its percent-encoded length.
      const wide = Array.from({ length: 1000 }, (_, i) => url(i, 'é'));
      const wideRes = await deleteLinks(t, bot, wide);
      expect(wideRes.statusCode, wideRes.body.slice(0, 200)).toBe(400);
      expect(wideRes.json().details.problems[0]).toEqual({ index: 0, reason: expect.stringContaining('once percent-encoded') });
      const deleted = await deleteLinks(t, bot, max);
      expect(deleted.statusCode, deleted.body.slice(0, 200)).toBe(200);
      expect(deleted.json().deleted_links).toHaveLength(1000);

      const over = await deleteLinks(t, bot, [...max, url(1000)]);
      expect((expectError(over, 400, 'invalid_request').details as { problems: Array<{ index: number }> }).problems[0]!.index).toBe(1000);
      const huge = JSON.stringify({ links: ['https://docs.example/'], padding: 'x'.repeat(8 * 1024 * 1024) });
      for (const method of ['POST', 'DELETE'] as const) {
        expectError(await call(t, method, kbPath(bot), { payload: huge, headers: { 'content-type': 'application/json' } }), 413, 'payload_too_large');
        expectError(await call(t, method, kbPath(bot), { payload: huge, headers: { 'content-type': 'application/json' }, key: null }), 401, 'unauthorized');
      }
    });

    it('a link is at most 2048 characters as stored, percent-encoded: a longer one is 400 on both databases (pgenv sweep: 2000 CJK characters were 500 on PostgreSQL, over its index row size)', async () => {
      const bot = (await createCopilot(t)).id;
      const head = 'https://docs.example/';
      // Varied characters, as a real title is (a repeated one compresses under PostgreSQL's index row limit).
      const cjk = `${head}${Array.from({ length: 2000 }, (_, i) => String.fromCodePoint(0x4e00 + i)).join('')}`;
      expect(cjk.length).toBeLessThanOrEqual(2048);
      const refused = expectError(await postLinks(t, bot, [cjk]), 400, 'invalid_request');
      expect((refused.details as { problems: Array<{ index: number; reason: string }> }).problems).toEqual([
        {
          index: 0,
          reason: `is ${head.length + 2000 * 9} characters long once percent-encoded (each non-ASCII character takes 6 to 12); at most 2048 are allowed.`,
        },
      ]);
      for (const field of ['url', 'sitemap']) {
        const crawl = await call(t, 'POST', `${kbPath(bot)}/crawl`, { payload: { [field]: cjk } });
        expect(expectError(crawl, 400, 'invalid_request').message).toContain('once percent-encoded');
      }
      // At the bound as stored, it is taken.
      const fits = `${head}${'東'.repeat(Math.floor((2048 - head.length) / 9))}`;
      expect((await postLinks(t, bot, [fits])).statusCode).toBe(202);
    });

    it('a soft-deleted copilot: GET, search and DELETE answer 404 knowledge_base_not_found, POST 404 copilot_not_found', async () => {
      const bot = (await createCopilot(t)).id;
      const url = 'https://docs.example/soft';
      expect((await postLinks(t, bot, [url])).statusCode).toBe(202);
      expect((await call(t, 'GET', kbPath(bot))).statusCode).toBe(200);
      expect((await call(t, 'DELETE', copilotPath(bot))).statusCode).toBe(200);

      expectError(await call(t, 'GET', kbPath(bot)), 404, 'knowledge_base_not_found');
      expectError(await call(t, 'GET', `${kbPath(bot)}?limit=1`), 404, 'knowledge_base_not_found');
      expectError(await call(t, 'GET', `${kbPath(bot)}/search?q=soft`), 404, 'knowledge_base_not_found');
      expectError(await deleteLinks(t, bot, [url]), 404, 'knowledge_base_not_found');
      expectError(await postLinks(t, bot, ['https://docs.example/new']), 404, 'copilot_not_found');
      // The rows are left alone (a soft delete can be undone by an operator).
      expect((await linkRows(t.storage, bot)).map((r) => r.url)).toEqual([url]);
    });

    it('DELETE: any spelling deletes the stored link; the answer lists each spelling the caller sent once, in request order', async () => {
      const bot = (await createCopilot(t)).id;
      expect((await postLinks(t, bot, ['https://docs.example/page', 'https://docs.example/kept'])).statusCode).toBe(202);
      const res = await deleteLinks(t, bot, [
        'https://docs.example/missing',
        'HTTPS://DOCS.EXAMPLE/page',
        'https://docs.example/x/../page#frag',
        'HTTPS://DOCS.EXAMPLE/page',
        'https://docs.example/%6Dissing',
      ]);
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toEqual({
        message: 'Knowledge base and associated links have been successfully deleted.',
        deleted_links: ['HTTPS://DOCS.EXAMPLE/page', 'https://docs.example/x/../page#frag'],
        not_found_links: ['https://docs.example/missing', 'https://docs.example/%6Dissing'],
      });
      expect((await linkRows(t.storage, bot)).map((r) => r.url)).toEqual(['https://docs.example/kept']);
      // The last link, in another spelling: the knowledge base goes with it.
      const last = await deleteLinks(t, bot, ['https://docs.example.:443/kept']);
      expect(last.json()).toMatchObject({ deleted_links: ['https://docs.example.:443/kept'], not_found_links: [] });
      expectError(await call(t, 'GET', kbPath(bot)), 404, 'knowledge_base_not_found');
    });

    it('bot ids are matched case-insensitively, answering with the canonical id', async () => {
      const bot = (await createCopilot(t)).id;
      const upper = bot.toUpperCase();
      const res = await postLinks(t, upper, ['https://docs.example/case']);
      expect(res.statusCode, res.body).toBe(202);
      expect(res.json().bot_id).toBe(bot);
      expect((await call(t, 'GET', kbPath(upper))).json().bot_id).toBe(bot);
      const del = await deleteLinks(t, upper, ['https://docs.example/case']);
      expect(del.statusCode).toBe(200);
      expect(del.json().deleted_links).toEqual(['https://docs.example/case']);
    });
  });
}
