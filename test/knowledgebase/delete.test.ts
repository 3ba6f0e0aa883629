import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { revokeApiKey } from '../../src/domain/auth/api-keys.js';
import { buildTestApp, keyIdOf, type TestApp } from '../support/app.js';
import { DIALECTS } from '../support/databases.js';
import { call, copilotPath, createCopilot, expectError, kbPath, nextLink, TIMESTAMP } from '../support/http.js';
import {
  deleteLinks,
  indexHits,
  linkRows,
  links,
  orphanPassages,
  passageRows,
  postLinks,
  search,
  sweepRetired,
  waitForLinks,
} from '../support/knowledge-base.js';
import { seedIndexedLinks } from '../support/seed.js';
import { PageServer } from '../support/pages.js';

const MESSAGE = 'Knowledge base and associated links have been successfully deleted.';
const UNKNOWN_BOT = '00000000-0000-4000-8000-000000000000';

interface AuditEntry {
  id: number;
  at: string;
  actor_key_id: string | null;
  action: string;
  bot_id: string | null;
  details: { deleted_links: string[]; not_found_links: string[]; knowledge_base_deleted: boolean };
}

for (const dialect of DIALECTS) {
  describe(`DELETE /backend/knowledgebase/b/:bot_id (${dialect})`, () => {
    let t: TestApp;
    let pages: PageServer;
    let deleter: string;

    beforeAll(async () => {
      pages = await PageServer.start();
      t = await buildTestApp(dialect, { tap: true, worker: true });
      deleter = await t.key(['knowledgebase:delete']);
      // Every path serves a page naming its own marker word (the path's last segment).
      for (const name of ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'x', 'y', 'z']) {
        pages.set(`/kb/${name}`, {
          type: 'text/plain',
          body: `Page marker${name}word about deletions.\n\n${'Another paragraph of text for the page. '.repeat(40)}`,
        });
      }
    });
    afterAll(async () => {
      await t?.close();
      await pages?.close();
    });

    /** A bot whose knowledge base holds these pages, indexed. */
    async function botWith(...names: string[]): Promise<{ bot: string; urls: string[] }> {
      const bot = (await createCopilot(t)).id;
      const urls = names.map((n) => pages.url(`/kb/${n}`));
      expect((await postLinks(t, bot, urls)).statusCode).toBe(202);
      const done = await waitForLinks(t, bot, urls);
      for (const u of urls) expect(done.get(u)!.status).toBe('indexed');
      return { bot, urls };
    }

    describe('the order of checks: 401 → 403 → 400 → 404 → 200', () => {
      let bot: string;
      let urls: string[];
      beforeAll(async () => {
        ({ bot, urls } = await botWith('a'));
      });

      const badBodies: Array<[string, string | undefined]> = [
        ['no body', undefined],
        ['malformed JSON', '{"links": ['],
        ['not an object', '["http://example.com/"]'],
        ['links missing', '{}'],
        ['empty links', '{"links": []}'],
        ['a relative URL', '{"links": ["/relative"]}'],
      ];
      const send = (key: string | null, body: string | undefined, botId = bot) =>
        call(t, 'DELETE', kbPath(botId), {
          key,
          ...(body !== undefined && { payload: body, headers: { 'content-type': 'application/json' } }),
        });

      it('401 without a key, with a malformed key, with an unknown key and with a revoked key — even when the body is bad', async () => {
        const revoked = await t.key(['knowledgebase:delete']);
        await revokeApiKey(t.rawStorage.db, keyIdOf(revoked));
        const keys: Array<string | null> = [null, 'Bearer nope', 'Basic dXNlcjpwYXNz', `Bearer cms_AAAAAAAAAAAAAAAA_${'B'.repeat(32)}`, revoked];
        for (const key of keys) {
          for (const body of [JSON.stringify({ links: urls }), ...badBodies.map(([, b]) => b)]) {
            expectError(await send(key, body), 401, 'unauthorized');
            expectError(await send(key, body, UNKNOWN_BOT), 401, 'unauthorized');
          }
        }
        expect(await links(t, bot)).not.toBeNull(); // nothing was deleted
      });

      it('403 for a key without knowledgebase:delete (admin holds it), even when the body is bad', async () => {
        const weak = await t.key(['knowledgebase:read', 'knowledgebase:write', 'copilots:write']);
        for (const body of [JSON.stringify({ links: urls }), ...badBodies.map(([, b]) => b)]) {
          const body403 = expectError(await send(weak, body), 403, 'forbidden');
          expect(body403.details).toMatchObject({ required_scope: 'knowledgebase:delete' });
          expectError(await send(weak, body, UNKNOWN_BOT), 403, 'forbidden');
        }
        expect((await links(t, bot))!.size).toBe(1);
      });

      it('403 for a delete key limited to another bot, even when the body is bad (403 before 400)', async () => {
        const other = (await createCopilot(t, { name: 'Other' })).id;
        const limited = await t.key(['knowledgebase:delete'], [other]);
        for (const body of [JSON.stringify({ links: urls }), ...badBodies.map(([, b]) => b)]) {
          expectError(await send(limited, body), 403, 'forbidden');
        }
        expect((await links(t, bot))!.size).toBe(1);
      });

      it('400 invalid_request for each bad body, with the offending index in details — before 404', async () => {
        const cases: Array<[string, unknown, number | null]> = [
          ['not an object (array)', ['http://example.com/'], null],
          ['not an object (string)', 'links', null],
          ['not an object (number)', 42, null],
          ['not an object (null)', null, null],
          ['links missing', {}, null],
          ['links not an array', { links: 'https://example.com/' }, -1],
          ['links an object', { links: { 0: 'https://example.com/' } }, -1],
          ['empty array', { links: [] }, -1],
          ['a non-string', { links: ['https://example.com/ok', 42] }, 1],
          ['null entry', { links: [null] }, 0],
          ['a relative URL', { links: ['https://example.com/ok', 'https://example.com/ok2', '/relative/path'] }, 2],
          ['ftp:', { links: ['ftp://example.com/file.txt'] }, 0],
          ['javascript:', { links: ['javascript:alert(1)'] }, 0],
          ['no host', { links: ['http://'] }, 0],
          ['over 2048 characters', { links: [`https://example.com/${'a'.repeat(2048)}`] }, 0],
          ['empty string', { links: [''] }, 0],
          ['1001 links', { links: Array.from({ length: 1001 }, (_, i) => `https://example.com/${i}`) }, 1000],
        ];
        for (const [what, body, index] of cases) {
          for (const target of [bot, UNKNOWN_BOT, 'not-a-uuid']) {
            const res = await call(t, 'DELETE', kbPath(target), {
              payload: JSON.stringify(body),
              headers: { 'content-type': 'application/json' },
              key: deleter,
            });
            const error = expectError(res, 400, 'invalid_request');
            expect(error.details, what).toBeDefined();
            if (index !== null) {
              const problems = (error.details as { problems: Array<{ index: number; reason: string }> }).problems;
              expect(problems[0]!.index, what).toBe(index);
              expect(typeof problems[0]!.reason).toBe('string');
            }
          }
        }
        // Exactly 2048 characters and exactly 1000 links are fine (404: not in this knowledge base is not an error).
        const long = `https://example.com/${'a'.repeat(2048 - 'https://example.com/'.length)}`;
        expect(long).toHaveLength(2048);
        const ok = await deleteLinks(t, bot, [long, ...Array.from({ length: 999 }, (_, i) => `https://example.com/${i}`)], deleter);
        expect(ok.statusCode, ok.body).toBe(200);
        expect(ok.json().not_found_links).toHaveLength(1000);
        expect((await links(t, bot))!.size).toBe(1);
      });

      it('400 invalid_json for a malformed body from an authorised key', async () => {
        expectError(await send(deleter, '{"links": ['), 400, 'invalid_json');
      });

      it('404 for an unknown bot, a bot id that is not a UUID, and a bot without a knowledge base', async () => {
        const body = { links: urls };
        let e = expectError(await deleteLinks(t, UNKNOWN_BOT, body.links, deleter), 404, 'knowledge_base_not_found');
        expect(e.details).toMatchObject({ bot_id: UNKNOWN_BOT });
        expectError(await deleteLinks(t, 'not-a-uuid', body.links, deleter), 404, 'knowledge_base_not_found');
        const empty = (await createCopilot(t, { name: 'No knowledge base' })).id;
        e = expectError(await deleteLinks(t, empty, body.links, deleter), 404, 'knowledge_base_not_found');
        expect(e.details).toMatchObject({ bot_id: empty });
      });

      it('404 for a soft-deleted copilot whose knowledge base still has links', async () => {
        const { bot: gone, urls: goneUrls } = await botWith('h');
        expect((await call(t, 'DELETE', copilotPath(gone))).statusCode).toBe(200);
        expectError(await deleteLinks(t, gone, goneUrls, deleter), 404, 'knowledge_base_not_found');
        expect(await linkRows(t.storage, gone)).toHaveLength(1); // untouched
      });

      it('a key limited to this bot may delete (200)', async () => {
        const own = await t.key(['knowledgebase:delete'], [bot]);
        const res = await deleteLinks(t, bot, ['https://example.com/never-added'], own);
        expect(res.statusCode, res.body).toBe(200);
      });
    });

    it('200: the body is exactly {message, deleted_links, not_found_links}; the links and all their passages are gone', async () => {
      const { bot, urls } = await botWith('b', 'c', 'd');
      const [b, c, d] = urls as [string, string, string];
      const rows = await linkRows(t.storage, bot, [b]);
      const bId = rows[0]!.id;
      expect((await passageRows(t.storage, [bId])).length).toBeGreaterThan(0);
      expect(await indexHits(t.storage, 'markerbword')).toBeGreaterThan(0);

      const missing = pages.url('/kb/never-added');
      const res = await deleteLinks(t, bot, [b, missing, b], deleter);
      expect(res.statusCode, res.body).toBe(200);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.body).toBe(JSON.stringify({ message: MESSAGE, deleted_links: [b], not_found_links: [missing] }));

      expect(await linkRows(t.storage, bot, [b])).toEqual([]);
      expect((await search(t, bot, 'markerbword')).results).toEqual([]);
      expect((await search(t, bot, 'markercword')).results.map((r) => r.url)).toEqual([c]);
      expect([...(await links(t, bot))!.keys()].sort()).toEqual([c, d].sort());
      // Its passages are deleted in the background (the search index housekeeping).
      await sweepRetired(t.storage);
      expect(await passageRows(t.storage, [bId])).toEqual([]);
      expect(await orphanPassages(t.storage)).toBe(0);
      expect(await indexHits(t.storage, 'markerbword')).toBe(0);

      // Deleting it again: 200, now under not_found_links.
      const again = await deleteLinks(t, bot, [b], deleter);
      expect(again.body).toBe(JSON.stringify({ message: MESSAGE, deleted_links: [], not_found_links: [b] }));
    });

    it('one page, one link: spellings of a page are indexed once, and deleting any spelling removes it from search', async () => {
      pages.set('/kb/spelt', { type: 'text/plain', body: `Page markerspeltword about spellings.\n\n${'Another paragraph of text for the page. '.repeat(40)}` });
      const canonical = pages.url('/kb/spelt');
      const port = new URL(canonical).port;
      const bot = (await createCopilot(t)).id;
      const added = await postLinks(t, bot, [`HTTP://127.0.0.1:${port}/kb/./x/../spelt#intro`, canonical, `http://0x7f.1:${port}/kb/%73pelt`]);
      expect(added.statusCode, added.body).toBe(202);
      expect(added.json().links.map((l: { url: string }) => l.url)).toEqual([canonical]);
      // A later request in another spelling refreshes the same link.
      expect((await postLinks(t, bot, [`http://2130706433:${port}/kb/spelt`])).statusCode).toBe(202);
      await waitForLinks(t, bot, [canonical], (l) => l.status === 'indexed');
      expect((await linkRows(t.storage, bot)).map((r) => r.url)).toEqual([canonical]);
      expect((await search(t, bot, 'markerspeltword')).results.map((r) => r.url)).toEqual([canonical]);

      const spelling = `http://127.0.0.1.:${port}/kb/%73pelt`;
      const res = await deleteLinks(t, bot, [spelling], deleter);
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toEqual({ message: MESSAGE, deleted_links: [spelling], not_found_links: [] });
      expect(await linkRows(t.storage, bot)).toEqual([]);
      await sweepRetired(t.storage);
      expect(await orphanPassages(t.storage)).toBe(0);
      expect(await indexHits(t.storage, 'markerspeltword')).toBe(0);
      expectError(await call(t, 'GET', `${kbPath(bot)}/search?q=markerspeltword`), 404, 'knowledge_base_not_found');
    });

    it('the knowledge base itself goes with its last link: GET, search and DELETE then answer 404; POST creates it again', async () => {
      const { bot, urls } = await botWith('e', 'f');
      const ids = (await linkRows(t.storage, bot)).map((r) => r.id);
      const res = await deleteLinks(t, bot, urls, deleter);
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({ message: MESSAGE, deleted_links: urls, not_found_links: [] });
      expect(await t.storage.db.selectFrom('knowledge_bases').selectAll().where('bot_id', '=', bot).execute()).toEqual([]);
      expectError(await call(t, 'GET', kbPath(bot)), 404, 'knowledge_base_not_found');
      expectError(await call(t, 'GET', `${kbPath(bot)}/search?q=markereword`), 404, 'knowledge_base_not_found');
      expectError(await deleteLinks(t, bot, urls, deleter), 404, 'knowledge_base_not_found');
      await sweepRetired(t.storage);
      expect(await passageRows(t.storage, ids)).toEqual([]);
      expect(await indexHits(t.storage, 'markereword')).toBe(0);
      // The index went with the knowledge base: deleting its passages afterwards notes no excluded ids.
      expect(await t.storage.db.selectFrom('kb_excluded').selectAll().where('bot_id', '=', bot).execute()).toEqual([]);

      expect((await postLinks(t, bot, [urls[0]])).statusCode).toBe(202);
      const back = await waitForLinks(t, bot, [urls[0]!]);
      expect(back.size).toBe(1);
      expect((await search(t, bot, 'markereword')).results.map((r) => r.url)).toEqual([urls[0]]);
    });

    it('deletes in one transaction: a failure half-way leaves every link and passage in place and answers 500 without internals', async () => {
      const { bot, urls } = await botWith('g', 'x');
      const before = await linkRows(t.storage, bot);
      const passagesBefore = await passageRows(
        t.storage,
        before.map((r) => r.id),
      );
      // The audit entry is the last statement of the transaction: make it fail.
      const failed = t.tap.failAfter({ kind: 'insert', table: 'audit_log' });
      const res = await deleteLinks(t, bot, urls, deleter);
      await failed;
      const body = expectError(res, 500, 'internal_error');
      expect(body.details).toBeUndefined();
      expect(res.body).not.toMatch(/simulated|tap|audit_log/);

      expect((await linkRows(t.storage, bot)).map((r) => r.id).sort()).toEqual(before.map((r) => r.id).sort());
      expect(
        await passageRows(
          t.storage,
          before.map((r) => r.id),
        ),
      ).toEqual(passagesBefore);
      expect(await t.storage.db.selectFrom('knowledge_bases').selectAll().where('bot_id', '=', bot).execute()).toHaveLength(1);
      expect((await search(t, bot, 'markergword')).results).toHaveLength(1);
      expect(await indexHits(t.storage, 'markergword')).toBeGreaterThan(0);
      const audit = (await call(t, 'GET', `/backend/api/audit?bot_id=${bot}&action=knowledgebase.delete_links`)).json() as AuditEntry[];
      expect(audit).toEqual([]);

      // And the same delete goes through afterwards.
      expect((await deleteLinks(t, bot, urls, deleter)).statusCode).toBe(200);
      await sweepRetired(t.storage);
      expect(
        await passageRows(
          t.storage,
          before.map((r) => r.id),
        ),
      ).toEqual([]);
    });

    it('deleting the most links one request may name (1000, several statements) removes every one and all their passages', async () => {
      // Written straight to the tables (as the worker would leave them): this is about the delete, not ingestion.
      const bot = (await createCopilot(t)).id;
      const many = Array.from({ length: 1000 }, (_, i) => `https://bulk.example/${i}`);
      const ids = await seedIndexedLinks(
        t.storage.db,
        bot,
        many.map((url) => ({ url, passages: [0, 1].map((seq) => `Bulk passage ${seq} with the bulkword marker.`) })),
      );
      expect((await passageRows(t.storage, ids)).length).toBe(2000);
      expect((await search(t, bot, 'bulkword', 100)).results).toHaveLength(100);

      const res = await deleteLinks(t, bot, many, deleter);
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toEqual({ message: MESSAGE, deleted_links: many, not_found_links: [] });
      expect(await linkRows(t.storage, bot)).toEqual([]);
      expectError(await call(t, 'GET', kbPath(bot)), 404, 'knowledge_base_not_found');
      await sweepRetired(t.storage);
      expect(await passageRows(t.storage, ids)).toEqual([]);
      expect(await orphanPassages(t.storage)).toBe(0);
      expect(await indexHits(t.storage, 'bulkword')).toBe(0);
    });

    it('a link added again before its old passages are deleted: searches find its new text, never the old, before and after they go', async () => {
      pages.set('/kb/again', { type: 'text/plain', body: `Page freshword, added again.\n\n${'Another paragraph of text for the page. '.repeat(40)}` });
      const url = pages.url('/kb/again');
      const bot = (await createCopilot(t)).id;
      const [old] = await seedIndexedLinks(t.storage.db, bot, [{ url, passages: ['The stale text holds staleword.', 'More stale text, staleword again.'] }]);
      expect((await search(t, bot, 'staleword')).results).toHaveLength(2);
      // Its last link: the knowledge base goes too, and comes back with the link.
      expect((await deleteLinks(t, bot, [url], deleter)).statusCode).toBe(200);
      expect((await passageRows(t.storage, [old!])).length).toBe(2);
      expect((await postLinks(t, bot, [url])).statusCode).toBe(202);
      expect((await waitForLinks(t, bot, [url])).get(url)!.status).toBe('indexed');
      const fresh = (await search(t, bot, 'freshword')).results;
      expect(fresh.map((r) => r.url)).toEqual([url]);
      expect((await search(t, bot, 'staleword')).results).toEqual([]);
      await sweepRetired(t.storage);
      expect(await passageRows(t.storage, [old!])).toEqual([]);
      expect((await search(t, bot, 'freshword')).results).toEqual(fresh);
      expect((await search(t, bot, 'staleword')).results).toEqual([]);
      expect(await orphanPassages(t.storage)).toBe(0);
    });

    it("answers without deleting the passages in its own transaction (which held other tenants' writes): they are hidden at once and deleted after it", async () => {
      const bot = (await createCopilot(t)).id;
      const many = Array.from({ length: 30 }, (_, i) => `https://hidden.example/${i}`);
      const ids = await seedIndexedLinks(
        t.storage.db,
        bot,
        many.map((url) => ({ url, passages: Array.from({ length: 100 }, (_, seq) => `Hidden passage ${seq} holds the hiddenword marker.`) })),
      );
      const [kept] = await seedIndexedLinks(t.storage.db, bot, [
        { url: 'https://hidden.example/kept', passages: ['The kept passage holds the hiddenword marker too.'] },
      ]);
      expect((await search(t, bot, 'hiddenword', 100)).results).toHaveLength(100);

      // A statement that deletes passages stops inside its transaction until released.
      const paused = t.tap.pauseAfter({ kind: 'delete', table: 'kb_passages' });
      const answer = deleteLinks(t, bot, many, deleter);
      const first = await Promise.race([answer.then(() => 'answered'), paused.reached.then(() => 'deleted passages before answering')]);
      paused.release();
      t.tap.clear();
      expect(first).toBe('answered');
      const res = await answer;
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toEqual({ message: MESSAGE, deleted_links: many, not_found_links: [] });

      // Still stored, and seen by no search: the bm25 statistics are the kept passage's alone.
      expect((await passageRows(t.storage, ids)).length).toBe(3000);
      expect(await orphanPassages(t.storage)).toBe(0);
      const found = (await search(t, bot, 'hiddenword', 100)).results;
      expect(found.map((r) => r.url)).toEqual(['https://hidden.example/kept']);
      const alone = (await createCopilot(t)).id;
      await seedIndexedLinks(t.storage.db, alone, [{ url: 'https://hidden.example/kept', passages: ['The kept passage holds the hiddenword marker too.'] }]);
      expect(found).toEqual((await search(t, alone, 'hiddenword', 100)).results);

      await sweepRetired(t.storage);
      expect(await passageRows(t.storage, ids)).toEqual([]);
      expect((await passageRows(t.storage, [kept!])).length).toBe(1);
      expect(await orphanPassages(t.storage)).toBe(0);
      expect(await indexHits(t.storage, 'hiddenword')).toBe(2); // the kept passage, and its copy in the bot that holds it alone
      expect((await search(t, bot, 'hiddenword', 100)).results.map((r) => r.url)).toEqual(['https://hidden.example/kept']);
    });

    describe('the audit log', () => {
      it('records every deletion: who (key id), which bot, which links, when — readable by admin keys only, newest first', async () => {
        const { bot, urls } = await botWith('y', 'z');
        const [y, z] = urls as [string, string];
        const second = await t.key(['knowledgebase:delete'], [bot]);
        const started = new Date().toISOString();
        expect((await deleteLinks(t, bot, [y, pages.url('/kb/nope')], deleter)).statusCode).toBe(200);
        expect((await deleteLinks(t, bot, [z], second)).statusCode).toBe(200);

        const res = await call(t, 'GET', `/backend/api/audit?bot_id=${bot}&action=knowledgebase.delete_links`);
        expect(res.statusCode, res.body).toBe(200);
        const entries = res.json() as AuditEntry[];
        expect(entries).toHaveLength(2);
        for (const e of entries) {
          expect(Object.keys(e)).toEqual(['id', 'at', 'actor_key_id', 'action', 'bot_id', 'details']);
          expect(e.at).toMatch(TIMESTAMP);
          expect(e.at >= started.slice(0, 19)).toBe(true);
          expect(e.action).toBe('knowledgebase.delete_links');
          expect(e.bot_id).toBe(bot);
        }
        const [newest, oldest] = entries as [AuditEntry, AuditEntry];
        expect(newest.id).toBeGreaterThan(oldest.id);
        expect(oldest.actor_key_id).toBe(keyIdOf(deleter));
        expect(oldest.details).toEqual({ deleted_links: [y], not_found_links: [pages.url('/kb/nope')], knowledge_base_deleted: false, client_ip: '127.0.0.1' });
        expect(newest.actor_key_id).toBe(keyIdOf(second));
        expect(newest.details).toEqual({ deleted_links: [z], not_found_links: [], knowledge_base_deleted: true, client_ip: '127.0.0.1' });
        // No secret in the log.
        expect(res.body).not.toContain(deleter.slice(7));
      });

      it('refused deletions (401/403/400/404) write nothing', async () => {
        const { bot, urls } = await botWith('a');
        const weak = await t.key(['knowledgebase:read']);
        await deleteLinks(t, bot, urls, null);
        await deleteLinks(t, bot, urls, weak);
        await deleteLinks(t, bot, [], deleter);
        const empty = (await createCopilot(t)).id;
        await deleteLinks(t, empty, urls, deleter);
        for (const id of [bot, empty]) {
          expect((await call(t, 'GET', `/backend/api/audit?bot_id=${id}&action=knowledgebase.delete_links`)).json(), id).toEqual([]);
        }
      });

      it('only admin keys may read it (401 without a key, 403 for other scopes)', async () => {
        expectError(await call(t, 'GET', '/backend/api/audit', { key: null }), 401, 'unauthorized');
        expectError(await call(t, 'GET', '/backend/api/audit', { key: deleter }), 403, 'forbidden');
        const all = await t.key(['copilots:read', 'copilots:write', 'knowledgebase:read', 'knowledgebase:write', 'knowledgebase:delete']);
        expectError(await call(t, 'GET', '/backend/api/audit', { key: all }), 403, 'forbidden');
        expect((await call(t, 'GET', '/backend/api/audit')).statusCode).toBe(200);
      });

      it('is paged with a Link header: walking rel="next" visits every entry once, newest first', async () => {
        const { bot, urls } = await botWith('b', 'c', 'd', 'e', 'f');
        for (const u of urls) expect((await deleteLinks(t, bot, [u], deleter)).statusCode).toBe(200);
        const everything = (await call(t, 'GET', '/backend/api/audit?limit=1000')).json() as AuditEntry[];
        expect(everything.length).toBeGreaterThanOrEqual(5);

        const seen: AuditEntry[] = [];
        let path: string | null = '/backend/api/audit?limit=2';
        let pagesWalked = 0;
        while (path) {
          const res = await call(t, 'GET', path);
          expect(res.statusCode, res.body).toBe(200);
          const page = res.json() as AuditEntry[];
          expect(page.length).toBeLessThanOrEqual(2);
          seen.push(...page);
          path = nextLink(res);
          if (path) expect(page).toHaveLength(2);
          expect(++pagesWalked).toBeLessThan(1000);
        }
        expect(seen.map((e) => e.id)).toEqual(everything.map((e) => e.id));
        expect(seen.map((e) => e.id)).toEqual([...seen.map((e) => e.id)].sort((a, b) => b - a));

        // Filtered by bot, paged too; the next link keeps the filter.
        const first = await call(t, 'GET', `/backend/api/audit?bot_id=${bot}&action=knowledgebase.delete_links&limit=3`);
        expect((first.json() as AuditEntry[]).map((e) => e.details.deleted_links[0])).toEqual([...urls].reverse().slice(0, 3));
        const next = nextLink(first)!;
        expect(next).toContain(`bot_id=${bot}`);
        expect(next).toContain('action=knowledgebase.delete_links');
        expect(((await call(t, 'GET', next)).json() as AuditEntry[]).map((e) => e.details.deleted_links[0])).toEqual([...urls].reverse().slice(3));

        expectError(await call(t, 'GET', '/backend/api/audit?cursor=not-a-cursor'), 400, 'invalid_cursor');
        expectError(await call(t, 'GET', '/backend/api/audit?limit=0'), 400, 'invalid_request');
      });
    });
  });
}
