/**
 * Issue 13 §8: a deleted copilot stops running and can be purged. Soft deletion cancels its
 * queued knowledge-base jobs; an admin purge (API and CLI) removes a soft-deleted copilot with
 * its documents, knowledge base and links in one transaction, its passages hidden in it and
 * deleted after it, a batch at a time; PURGE_DELETED_AFTER_DAYS
 * purges on its own.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { CANCELLED_BY_DELETION, createCopilot as createCopilotRow, purgeDeletedBefore } from '../../src/domain/copilots/copilot.service.js';
import { daysAgo, timestampIn } from '../../src/domain/ids.js';
import { startRetention } from '../../src/jobs/retention.js';
import { SQLITE_FILE_NAME } from '../../src/storage/database.js';
import { DIALECTS } from '../support/databases.js';
import { useTestAppWithPages, type TestApp } from '../support/app.js';
import { call, copilotPath, createCopilot, expectError, purgePath, swaggerPath } from '../support/http.js';
import { linkRows, orphanPassages, postLinks, sweepRetired, waitForLinks, waitUntil } from '../support/knowledge-base.js';
import type { PageServer } from '../support/pages.js';
import { spec } from '../support/documents.js';

async function counts(t: TestApp, bot: string) {
  const n = async (table: 'copilots' | 'swagger_documents' | 'knowledge_bases' | 'kb_links' | 'kb_passages', column: string) => {
    const { rows } = await sql<{ n: number }>`select count(*) as n from ${sql.table(table)} where ${sql.ref(column)} = ${bot}`.execute(t.storage.db);
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
    let t!: TestApp;
    let site!: PageServer;
    useTestAppWithPages(dialect, {}, (made) => {
      ({ t, pages: site } = made);
      site.set('/doc', { body: '<html><body><main><p>Rotating an API key takes one request to the keys endpoint.</p></main></body></html>' });
    });

    it("soft deletion cancels the copilot's queued jobs: none of them is fetched afterwards", async () => {
      const bot = (await createCopilot(t, { name: 'Deleted with queued links' })).id;
      const urls = Array.from({ length: 8 }, (_, i) => `${site.origin}/doc?n=${i}`);
      expect((await postLinks(t, bot, urls)).statusCode).toBe(202);
      expect((await call(t, 'DELETE', copilotPath(bot))).statusCode).toBe(200);
      const worker = t.newWorker();
      expect(await worker.runOne()).toBe(false);
      expect(site.requests.get('/doc') ?? 0).toBe(0);
      for (const row of await linkRows(t.storage, bot)) {
        expect(row.status).toBe('failed');
        expect(row.error).toBe(CANCELLED_BY_DELETION);
      }
    });

    it.runIf(dialect === 'sqlite')(
      'a purged copilot leaves nothing of its own in the SQLite file (privacy sweep: its token, document and passages stayed in free pages; the audit log keeps its name)',
      async () => {
        const marker = 'PurgedMarkerQx7';
        site.set('/private', { body: `<html><body><main><p>Only ${marker}Text is written on this page, several words long.</p></main></body></html>` });
        const copilot = await createCopilot(t, { name: 'Purged for good' });
        const document = spec('petstore3.json').toString('utf8').replace('"title"', `"x-note": "${marker}Doc", "title"`);
        expect((await call(t, 'PUT', swaggerPath(copilot.id), { payload: document, headers: { 'content-type': 'application/json' } })).statusCode).toBe(200);
        expect((await postLinks(t, copilot.id, [`${site.origin}/private`])).statusCode).toBe(202);
        await t.newWorker().runOne();
        await waitForLinks(t, copilot.id, [`${site.origin}/private`]);
        expect((await call(t, 'DELETE', copilotPath(copilot.id))).statusCode).toBe(200);
        expect((await call(t, 'POST', purgePath(copilot.id))).statusCode).toBe(200);
        await sweepRetired(t.storage);
        await sql`pragma wal_checkpoint(TRUNCATE)`.execute(t.storage.db);
        const file = readFileSync(path.join(t.config.dataDir, SQLITE_FILE_NAME));
        for (const left of [marker, copilot.token]) expect(file.includes(left), left).toBe(false);
      },
    );

    it('purges a deleted copilot with its documents, knowledge base and passages (API)', async () => {
      const bot = (await createCopilot(t, { name: 'To be purged' })).id;
      const up = await t.app.inject({
        method: 'PUT',
        url: swaggerPath(bot),
        headers: { authorization: t.admin, 'content-type': 'application/json' },
        payload: spec('petstore3.json'),
      });
      expect(up.statusCode, up.body).toBe(200);
      expect((await postLinks(t, bot, [`${site.origin}/doc`])).statusCode).toBe(202);
      await t.newWorker().runOne();
      await waitForLinks(t, bot, [`${site.origin}/doc`]);
      const before = await counts(t, bot);
      expect(before).toMatchObject({ copilots: 1, documents: 1, knowledgeBases: 1, links: 1 });
      for (const state of ['delivered', 'pending']) {
        await t.storage.db
          .insertInto('webhook_deliveries')
          .values({
            id: `${bot}-${state}`,
            event: 'api_description.breaking_change',
            copilot_id: bot,
            url: 'https://hooks.example/x',
            payload: '{}',
            state,
            attempts: 0,
            next_attempt_at: 'x',
            lease_owner: null,
            lease_expires_at: null,
            last_status: null,
            last_error: null,
            created_at: 'x',
            delivered_at: null,
          })
          .execute();
      }
      expect(before.passages).toBeGreaterThan(0);

      expectError(await call(t, 'POST', purgePath(bot)), 409, 'conflict');
      expect((await call(t, 'DELETE', copilotPath(bot))).statusCode).toBe(200);
      const res = await call(t, 'POST', purgePath(bot));
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toEqual({ id: bot, documents: 1, links: 1, passages: before.passages });
      // Its webhook deliveries (a breaking change's payload names its endpoints) went with it (soak sweep).
      expect(await t.storage.db.selectFrom('webhook_deliveries').select('id').where('copilot_id', '=', bot).execute()).toEqual([]);
      // Its passages are hidden at once and deleted by the search index housekeeping, a batch per transaction.
      expect(await counts(t, bot)).toEqual({ copilots: 0, documents: 0, knowledgeBases: 0, links: 0, passages: before.passages });
      expect(await orphanPassages(t.storage)).toBe(0);
      await sweepRetired(t.storage);
      expect(await counts(t, bot)).toEqual({ copilots: 0, documents: 0, knowledgeBases: 0, links: 0, passages: 0 });
      expect(await t.storage.db.selectFrom('kb_excluded').selectAll().where('bot_id', '=', bot).execute()).toEqual([]);
      expectError(await call(t, 'POST', purgePath(bot)), 404, 'copilot_not_found');
      expectError(await call(t, 'GET', copilotPath(bot)), 404, 'copilot_not_found');
    });

    it('deletes and purges a copilot once when the same request races itself: one 200, the others 404, one audit entry each', async () => {
      // On PostgreSQL each racing transaction read the copilot before any had written: all of them
      // answered 200, and the audit log recorded a deletion (and a purge) per request.
      const bot = (await createCopilot(t, { name: 'Raced' })).id;
      const audited = async (action: string) => {
        const { rows } = await sql<{ n: number }>`select count(*) as n from audit_log where action = ${action} and bot_id = ${bot}`.execute(t.storage.db);
        return Number(rows[0]!.n);
      };
      const race = async (method: 'DELETE' | 'POST', url: string) =>
        (await Promise.all(Array.from({ length: 8 }, () => call(t, method, url)))).map((res) => res.statusCode).sort();
      expect(await race('DELETE', copilotPath(bot))).toEqual([200, 404, 404, 404, 404, 404, 404, 404]);
      expect(await audited('copilot.delete')).toBe(1);
      expect(await race('POST', purgePath(bot))).toEqual([200, 404, 404, 404, 404, 404, 404, 404]);
      expect(await audited('copilot.purge')).toBe(1);
    });

    it("purge needs admin, within the key's bots", async () => {
      const bot = (await createCopilot(t, { name: 'Guarded purge' })).id;
      const other = (await createCopilot(t, { name: 'Other' })).id;
      const writer = await t.key(['copilots:write']);
      const otherAdmin = await t.key(['admin'], [other]);
      const botAdmin = await t.key(['admin'], [bot]);
      expect((await call(t, 'DELETE', copilotPath(bot))).statusCode).toBe(200);
      expectError(await call(t, 'POST', purgePath(bot), { key: writer }), 403, 'forbidden');
      expectError(await call(t, 'POST', purgePath(bot), { key: otherAdmin }), 403, 'forbidden');
      expectError(await call(t, 'POST', purgePath(bot), { key: null }), 401, 'unauthorized');
      expect((await call(t, 'POST', purgePath(bot), { key: botAdmin })).statusCode).toBe(200);
    });

    it('purges the copilots deleted before a time, and only those (the retention rule)', async () => {
      const old = (await createCopilot(t, { name: 'Deleted long ago' })).id;
      const recent = (await createCopilot(t, { name: 'Deleted just now' })).id;
      const live = (await createCopilot(t, { name: 'Still live' })).id;
      expect((await call(t, 'DELETE', copilotPath(old))).statusCode).toBe(200);
      await t.storage.db
        .updateTable('copilots')
        .set({ deleted_at: daysAgo(40) })
        .where('id', '=', old)
        .execute();
      expect((await call(t, 'DELETE', copilotPath(recent))).statusCode).toBe(200);
      const purged = await purgeDeletedBefore(t.storage, daysAgo(30));
      expect(purged).toEqual([old]);
      expect((await counts(t, old)).copilots).toBe(0);
      expect((await counts(t, recent)).copilots).toBe(1);
      expect((await counts(t, live)).copilots).toBe(1);
    });

    it('purges every copilot deleted before the time, however many (scale sweep: 1000 a run, the rest left without a word), and with no time every deleted one, even dated ahead by a clock that runs fast (clock sweep)', async () => {
      const ids: string[] = [];
      for (let i = 0; i < 1003; i++) ids.push((await createCopilotRow(t.storage.db, { name: `Bulk ${i}` })).id);
      await t.storage.db
        .updateTable('copilots')
        .set({ deleted_at: daysAgo(40) })
        .where('id', 'in', ids.slice(0, 1002))
        .execute();
      // Deleted through an instance whose clock is an hour ahead.
      await t.storage.db
        .updateTable('copilots')
        .set({ deleted_at: timestampIn(3_600_000) })
        .where('id', '=', ids[1002]!)
        .execute();
      const purged = await purgeDeletedBefore(t.storage, daysAgo(30));
      expect(purged.length).toBe(1002);
      expect(new Set(purged)).toEqual(new Set(ids.slice(0, 1002)));
      expect((await counts(t, ids[1002]!)).copilots).toBe(1);
      expect(await purgeDeletedBefore(t.storage, null)).toContain(ids[1002]);
      expect((await counts(t, ids[1002]!)).copilots).toBe(0);
    }, 240_000);

    it('the retention job purges at start when PURGE_DELETED_AFTER_DAYS is set', async () => {
      const old = (await createCopilot(t, { name: 'Retention' })).id;
      expect((await call(t, 'DELETE', copilotPath(old))).statusCode).toBe(200);
      await t.storage.db
        .updateTable('copilots')
        .set({ deleted_at: daysAgo(10) })
        .where('id', '=', old)
        .execute();
      const logs: unknown[] = [];
      const retention = startRetention(t.storage, {
        purgeDeletedAfterDays: 7,
        webhookDeliveriesKeptDays: 0,
        auditLogKeptDays: 0,
        logger: { info: (o: unknown) => logs.push(o), error: (o: unknown) => logs.push(o) } as never,
      });
      await waitUntil(async () => (await counts(t, old)).copilots === 0, 'the retention purge');
      await retention.stop();
      expect(logs).toEqual([{ purged: 1, first: [old] }]);
    });
  });
}
