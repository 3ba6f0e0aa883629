/**
 * Migration 022-older-data (upgrade sweep): what earlier migrations added without bringing the
 * data already stored up to it. A copilot's document stored before versions were kept (010)
 * becomes its version 1, so the next upload's breaking changes are reported; an enhanced_privacy
 * copilot's links stored before redaction (011) are due for a check; links that cannot say
 * whether their page was cut (021) forget their validators, so their next check reads it whole.
 */
import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { olderData } from '../../src/storage/migrations/022-older-data.js';
import { buildTestApp, type TestApp } from '../support/app.js';
import { DIALECTS } from '../support/databases.js';
import { apiOfPaths as api, putRaw } from '../support/documents.js';
import { call, createCopilot, swaggerPath } from '../support/http.js';

const NOW = '2026-11-01T00:00:00.000000Z';

for (const dialect of DIALECTS) {
  describe(`migration 022-older-data (${dialect})`, () => {
    let t: TestApp;
    let db: Kysely<any>;
    beforeAll(async () => {
      t = await buildTestApp(dialect);
      db = t.storage.db as unknown as Kysely<any>;
    });
    afterAll(async () => t?.close());

    async function link(botId: string, values: Record<string, unknown>): Promise<string> {
      const id = randomUUID();
      await db
        .insertInto('knowledge_bases')
        .values({ bot_id: botId, created_at: NOW, updated_at: NOW })
        .onConflict((oc) => oc.column('bot_id').doNothing())
        .execute();
      await db
        .insertInto('kb_links')
        .values({
          id,
          bot_id: botId,
          url: `https://docs.example/${id}`,
          status: 'indexed',
          error: null,
          passages: 0,
          attempts: 1,
          generation: 0,
          run_after: NOW,
          created_at: NOW,
          updated_at: NOW,
          ...values,
        })
        .execute();
      return id;
    }
    const linkRow = (id: string) => db.selectFrom('kb_links').select(['check_after', 'etag', 'last_modified']).where('id', '=', id).executeTakeFirstOrThrow();

    it('a document stored without a version becomes version 1, so the next upload reports its breaking change', async () => {
      const copilot = await createCopilot(t);
      expect((await putRaw(t, copilot.id, api(['/pets', '/stores']), 'application/json')).statusCode).toBe(200);
      // As a build before migration 010 left it: the document, and no version.
      await db.deleteFrom('api_description_versions').where('copilot_id', '=', copilot.id).execute();
      const untouched = await createCopilot(t);
      expect((await putRaw(t, untouched.id, api(['/a']), 'application/json')).statusCode).toBe(200);

      await olderData().up(db);

      const versions = (await call(t, 'GET', `${swaggerPath(copilot.id)}/versions`)).json();
      expect(versions).toMatchObject([{ version: 1, source: 'upload', changes: { breaking: 0, other: 0 } }]);
      expect((await call(t, 'GET', `${swaggerPath(untouched.id)}/versions`)).json()).toHaveLength(1);
      // The next upload drops /stores: a breaking change against version 1.
      expect((await putRaw(t, copilot.id, api(['/pets']), 'application/json')).statusCode).toBe(200);
      const after = (await call(t, 'GET', `${swaggerPath(copilot.id)}/versions`)).json();
      expect(after[0]).toMatchObject({ version: 2, changes: { breaking: 1 } });
    });

    it('links of an enhanced_privacy copilot stored in clear are due for a check; others are not', async () => {
      const privateBot = (await createCopilot(t)).id;
      await call(t, 'PATCH', `/backend/api/copilot/${privateBot}`, { payload: { enhanced_privacy: 1 } });
      const openBot = (await createCopilot(t)).id;
      const clear = await link(privateBot, { redacted: 0 });
      const redacted = await link(privateBot, { redacted: 1 });
      const open = await link(openBot, { redacted: 0 });
      // PATCH asked for checks of the bot's links already: start from none.
      await db.updateTable('kb_links').set({ check_after: null }).where('bot_id', 'in', [privateBot, openBot]).execute();

      await olderData().up(db);

      expect((await linkRow(clear)).check_after).not.toBeNull();
      expect((await linkRow(redacted)).check_after).toBeNull();
      expect((await linkRow(open)).check_after).toBeNull();
    });

    it('links that read truncated 0 forget their validators; a page known cut keeps them', async () => {
      const bot = (await createCopilot(t)).id;
      const unknown = await link(bot, { etag: '"a"', last_modified: 'Mon, 02 Nov 2026 00:00:00 GMT' });
      const cut = await link(bot, { etag: '"b"', truncated: 1 });

      await olderData().up(db);

      expect(await linkRow(unknown)).toMatchObject({ etag: null, last_modified: null });
      expect(await linkRow(cut)).toMatchObject({ etag: '"b"' });
    });
  });
}
