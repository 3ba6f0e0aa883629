/**
 * Writes that race a copilot's deletion, on both databases. PostgreSQL runs their transactions
 * side by side under READ COMMITTED: a write that read the copilot as live before a deletion
 * committed went on as if it were live (a PATCH changed a deleted copilot, links and crawls were
 * queued for it and then fetched, a sync recorded a version for a purged copilot or over a newer
 * upload). Each such write now takes the copilot's row lock before it reads the copilot
 * (`getCopilot(…, { lock: true })`), so it sees what a racing deletion committed.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../support/app.js';
import { DIALECTS } from '../support/databases.js';
import { putRaw } from '../support/documents.js';
import { call, copilotPath, createCopilot, kbPath, purgePath, swaggerPath } from '../support/http.js';
import { PageServer } from '../support/pages.js';

const doc = (path: string) =>
  JSON.stringify({
    openapi: '3.0.3',
    info: { title: 'T', version: '1' },
    paths: { [path]: { get: { operationId: 'op', summary: 'Op', description: 'Does op', responses: { '200': { description: 'ok' } } } } },
  });

for (const dialect of DIALECTS) {
  describe(`writes racing a copilot's deletion (${dialect})`, () => {
    let t: TestApp;
    let pages: PageServer;
    beforeAll(async () => {
      t = await buildTestApp(dialect);
      pages = await PageServer.start();
    });
    afterAll(async () => {
      await t?.close();
      await pages?.close();
    });

    const count = async (
      table: 'kb_links' | 'crawls' | 'api_description_versions' | 'api_description_sync',
      column: string,
      bot: string,
      where = sql`true`,
    ) => {
      const { rows } = await sql<{ n: number }>`select count(*) as n from ${sql.table(table)} where ${sql.ref(column)} = ${bot} and ${where}`.execute(
        t.storage.db,
      );
      return Number(rows[0]!.n);
    };

    it('a PATCH never changes a deleted copilot: it is answered 404 once the deletion has committed', async () => {
      for (let round = 0; round < 5; round++) {
        const bot = (await createCopilot(t)).id;
        const answers = await Promise.all([
          ...Array.from({ length: 8 }, (_, i) => call(t, 'PATCH', copilotPath(bot), { payload: { name: `Renamed ${i}` } })),
          ...Array.from({ length: 8 }, () => call(t, 'DELETE', copilotPath(bot))),
        ]);
        for (const res of answers.slice(0, 8)) {
          expect([200, 404]).toContain(res.statusCode);
          if (res.statusCode === 200) expect(res.json().deleted_at).toBeNull();
        }
        expect(answers.slice(8).filter((res) => res.statusCode === 200)).toHaveLength(1);
        const row = await t.storage.db.selectFrom('copilots').select(['updated_at', 'deleted_at']).where('id', '=', bot).executeTakeFirstOrThrow();
        // Deleting sets both: a change after it would have moved updated_at on.
        expect(row.updated_at).toBe(row.deleted_at);
      }
    });

    it('links and crawls sent while the copilot is deleted are refused or cancelled with it: none stays queued', async () => {
      pages.set('/kb/page', { body: '<main><p>A page of a copilot being deleted.</p></main>' });
      for (let round = 0; round < 4; round++) {
        const bot = (await createCopilot(t)).id;
        const answers = await Promise.all([
          ...Array.from({ length: 6 }, (_, i) => call(t, 'POST', kbPath(bot), { payload: { links: [pages.url(`/kb/page?n=${round}-${i}`)] } })),
          call(t, 'POST', `${kbPath(bot)}/crawl`, { payload: { url: pages.url('/kb/page') } }),
          call(t, 'DELETE', copilotPath(bot)),
        ]);
        expect(answers.at(-1)!.statusCode).toBe(200);
        for (const res of answers.slice(0, -1)) expect([202, 404]).toContain(res.statusCode);
        expect(await count('kb_links', 'bot_id', bot, sql`status = 'pending'`)).toBe(0);
        expect(await count('crawls', 'bot_id', bot, sql`state in ('queued', 'running')`)).toBe(0);
      }
    });

    it('a sync whose copilot is deleted and purged while it fetches records nothing', async () => {
      pages.set('/sync/slow.json', { type: 'application/json', body: doc('/slow'), delayMs: 800 });
      const bot = (await createCopilot(t, { swagger_url: pages.url('/sync/slow.json') })).id;
      const sync = call(t, 'POST', `${swaggerPath(bot)}/sync`);
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect((await call(t, 'DELETE', copilotPath(bot))).statusCode).toBe(200);
      expect((await call(t, 'POST', purgePath(bot))).statusCode).toBe(200);
      expect((await sync).statusCode).toBe(404);
      expect(await count('api_description_versions', 'copilot_id', bot)).toBe(0);
      expect(await count('api_description_sync', 'copilot_id', bot)).toBe(0);
    });

    it('a sync that an upload overtakes records nothing: the newest version is the document stored', async () => {
      pages.set('/sync/overtaken.json', { type: 'application/json', body: doc('/fetched'), delayMs: 800 });
      const bot = (await createCopilot(t, { swagger_url: pages.url('/sync/overtaken.json') })).id;
      const sync = call(t, 'POST', `${swaggerPath(bot)}/sync`);
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect((await putRaw(t, bot, doc('/uploaded'), 'application/json')).statusCode).toBe(200);
      const synced = await sync;
      expect(synced.statusCode, synced.body).toBe(200);
      expect(synced.json()).toMatchObject({ status: 'failed', version: null });
      const versions = (await call(t, 'GET', `${swaggerPath(bot)}/versions`)).json() as Array<{ version: number; source: string }>;
      expect(versions.map((v) => v.source)).toEqual(['upload']);
      expect((await call(t, 'GET', swaggerPath(bot))).body).toBe(doc('/uploaded'));
    });
  });
}
