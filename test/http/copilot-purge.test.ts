/**
 * Issue 13 §8: a deleted copilot stops running and can be purged. Soft deletion cancels its
 * queued knowledge-base jobs; an admin purge (API and CLI) removes a soft-deleted copilot with
 * its documents, knowledge base and passages in one transaction; PURGE_DELETED_AFTER_DAYS
 * purges on its own.
 */
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { CANCELLED_BY_DELETION, purgeDeletedBefore } from '../../src/domain/copilots/copilot.service.js';
import { daysAgo } from '../../src/domain/ids.js';
import { startRetention } from '../../src/jobs/retention.js';
import { DIALECTS } from '../support/databases.js';
import { call, expectError } from '../support/http.js';
import { createBot, linkRows, postLinks, useKbAppWithPages, waitForLinks, waitUntil, type KbTestApp } from '../support/knowledge-base.js';
import { PageServer } from '../support/pages.js';
import { spec, swaggerPath } from '../support/documents.js';

const one = (id: string) => `/backend/api/copilot/${id}`;
const purge = (id: string) => `/backend/api/copilot/${id}/purge`;

async function counts(t: KbTestApp, bot: string) {
  const n = async (table: 'copilots' | 'swagger_documents' | 'knowledge_bases' | 'kb_links' | 'kb_passages', column: string) => {
    const { rows } = await sql<{ n: number }>`select count(*) as n from ${sql.table(table)} where ${sql.ref(column)} = ${bot}`.execute(t.rawStorage.db);
    return Number(rows[0]!.n);
  };
  return {
    copilots: await n('copilots', 'id'),
    documents: await n('swagger_documents', 'copilot_id'),
    knowledgeBases: await n('knowledge_bases', 'bot_id'),
    links: await n('kb_links', 'bot_id'),
    passages: await n('kb_passages', 'bot_id'),
  };
}

for (const dialect of DIALECTS) {
  describe(`deleting and purging a copilot (${dialect})`, () => {
    let t!: KbTestApp;
    let site!: PageServer;
    useKbAppWithPages(dialect, { worker: false }, (made) => {
      ({ t, pages: site } = made);
      site.set('/doc', { body: '<html><body><main><p>Rotating an API key takes one request to the keys endpoint.</p></main></body></html>' });
    });

    it("soft deletion cancels the copilot's queued jobs: none of them is fetched afterwards", async () => {
      const bot = await createBot(t, 'Deleted with queued links');
      const urls = Array.from({ length: 8 }, (_, i) => `${site.origin}/doc?n=${i}`);
      expect((await postLinks(t, bot, urls)).statusCode).toBe(202);
      expect((await call(t, 'DELETE', one(bot))).statusCode).toBe(200);
      const worker = t.newWorker();
      expect(await worker.runOne()).toBe(false);
      expect(site.requests.get('/doc') ?? 0).toBe(0);
      for (const row of await linkRows(t.rawStorage, bot)) {
        expect(row.status).toBe('failed');
        expect(row.error).toBe(CANCELLED_BY_DELETION);
      }
    });

    it('purges a deleted copilot with its documents, knowledge base and passages (API)', async () => {
      const bot = await createBot(t, 'To be purged');
      const up = await t.app.inject({ method: 'PUT', url: swaggerPath(bot), headers: { authorization: t.admin, 'content-type': 'application/json' }, payload: spec('petstore3.json') });
      expect(up.statusCode, up.body).toBe(200);
      expect((await postLinks(t, bot, [`${site.origin}/doc`])).statusCode).toBe(202);
      await t.newWorker().runOne();
      await waitForLinks(t, bot, [`${site.origin}/doc`]);
      const before = await counts(t, bot);
      expect(before).toMatchObject({ copilots: 1, documents: 1, knowledgeBases: 1, links: 1 });
      expect(before.passages).toBeGreaterThan(0);

      expectError(await call(t, 'POST', purge(bot)), 409, 'conflict');
      expect((await call(t, 'DELETE', one(bot))).statusCode).toBe(200);
      const res = await call(t, 'POST', purge(bot));
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toEqual({ id: bot, documents: 1, links: 1, passages: before.passages });
      expect(await counts(t, bot)).toEqual({ copilots: 0, documents: 0, knowledgeBases: 0, links: 0, passages: 0 });
      expectError(await call(t, 'POST', purge(bot)), 404, 'copilot_not_found');
      expectError(await call(t, 'GET', one(bot)), 404, 'copilot_not_found');
    });

    it('purge needs admin, within the key\'s bots', async () => {
      const bot = await createBot(t, 'Guarded purge');
      const other = await createBot(t, 'Other');
      const writer = await t.bearer(['copilots:write']);
      const otherAdmin = await t.bearer(['admin'], [other]);
      const botAdmin = await t.bearer(['admin'], [bot]);
      expect((await call(t, 'DELETE', one(bot))).statusCode).toBe(200);
      expectError(await call(t, 'POST', purge(bot), { key: writer }), 403, 'forbidden');
      expectError(await call(t, 'POST', purge(bot), { key: otherAdmin }), 403, 'forbidden');
      expectError(await call(t, 'POST', purge(bot), { key: null }), 401, 'unauthorized');
      expect((await call(t, 'POST', purge(bot), { key: botAdmin })).statusCode).toBe(200);
    });

    it('purges the copilots deleted before a time, and only those (the retention rule)', async () => {
      const old = await createBot(t, 'Deleted long ago');
      const recent = await createBot(t, 'Deleted just now');
      const live = await createBot(t, 'Still live');
      expect((await call(t, 'DELETE', one(old))).statusCode).toBe(200);
      await t.rawStorage.db.updateTable('copilots').set({ deleted_at: daysAgo(40) }).where('id', '=', old).execute();
      expect((await call(t, 'DELETE', one(recent))).statusCode).toBe(200);
      const purged = await purgeDeletedBefore(t.rawStorage, daysAgo(30));
      expect(purged).toEqual([old]);
      expect((await counts(t, old)).copilots).toBe(0);
      expect((await counts(t, recent)).copilots).toBe(1);
      expect((await counts(t, live)).copilots).toBe(1);
    });

    it('the retention job purges at start when PURGE_DELETED_AFTER_DAYS is set', async () => {
      const old = await createBot(t, 'Retention');
      expect((await call(t, 'DELETE', one(old))).statusCode).toBe(200);
      await t.rawStorage.db.updateTable('copilots').set({ deleted_at: daysAgo(10) }).where('id', '=', old).execute();
      const logs: unknown[] = [];
      const retention = startRetention(t.rawStorage, { purgeDeletedAfterDays: 7, logger: { info: (o: unknown) => logs.push(o), error: (o: unknown) => logs.push(o) } as never });
      await waitUntil(async () => (await counts(t, old)).copilots === 0, 'the retention purge');
      await retention.stop();
      expect(logs).toEqual([{ purged: [old] }]);
    });
  });
}
