/**
 * Issue 13 §2: a key never gives more than it holds. A key limited to some bots creates,
 * lists and revokes only keys within its scopes and bots, reads only its bots' audit
 * entries; bot lists are never empty or blank and name existing copilots; a key without
 * copilots:read never receives a copilot's token.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_ACTIVE_KEYS_PER_BOT } from '../../src/domain/auth/api-keys.js';
import { createCopilot as createCopilotRow } from '../../src/domain/copilots/copilot.service.js';
import { AUDIT_DETAILS_MAX_CHARS } from '../../src/domain/audit.js';
import { buildTestApp, keyIdOf, type TestApp } from '../support/app.js';
import { DIALECTS } from '../support/databases.js';
import { AUDIT_PATH, call, COPILOTS_PATH, copilotPath, createCopilot, expectError, KEYS_PATH } from '../support/http.js';

for (const dialect of DIALECTS) {
  describe(`key limits (${dialect})`, () => {
    let t: TestApp;
    let botA: string;
    let botB: string;
    let limitedAdmin: string;
    beforeAll(async () => {
      t = await buildTestApp(dialect);
      botA = (await createCopilot(t, { name: 'Bot A' })).id;
      botB = (await createCopilot(t, { name: 'Bot B' })).id;
      limitedAdmin = await t.key(['admin'], [botA]);
    });
    afterAll(async () => t.close());

    describe('a key limited to bots cannot mint a wider key', () => {
      it('refuses a key for every bot (bots absent or null) with 403', async () => {
        for (const payload of [{ scopes: ['admin'] }, { scopes: ['admin'], bots: null }, { scopes: ['copilots:read'], bots: null }]) {
          expectError(await call(t, 'POST', KEYS_PATH, { key: limitedAdmin, payload }), 403, 'forbidden');
        }
      });

      it('refuses a key naming a bot outside its own with 403', async () => {
        expectError(await call(t, 'POST', KEYS_PATH, { key: limitedAdmin, payload: { scopes: ['copilots:read'], bots: [botA, botB] } }), 403, 'forbidden');
      });

      it('says nothing of copilots outside its bots: an unknown id and a deleted copilot are 403 as a live one is, not 400 naming them', async () => {
        const gone = (await createCopilot(t, { name: 'Gone' })).id;
        expect((await call(t, 'DELETE', copilotPath(gone))).statusCode).toBe(200);
        for (const other of [botB, gone, '00000000-0000-4000-8000-000000000000']) {
          const res = await call(t, 'POST', KEYS_PATH, { key: limitedAdmin, payload: { scopes: ['copilots:read'], bots: [other] } });
          expectError(res, 403, 'forbidden');
          expect(res.body).not.toContain(other);
        }
        // An unlimited admin is told which ids name no copilot.
        expectError(await call(t, 'POST', KEYS_PATH, { payload: { scopes: ['copilots:read'], bots: [gone] } }), 400, 'invalid_request');
      });

      it('creates a key within its bots, and that key cannot read another bot', async () => {
        const res = await call(t, 'POST', KEYS_PATH, { key: limitedAdmin, payload: { scopes: ['copilots:read'], bots: [botA] } });
        expect(res.statusCode, res.body).toBe(201);
        expect(res.json().bots).toEqual([botA]);
        const minted = `Bearer ${res.json().key as string}`;
        expect((await call(t, 'GET', copilotPath(botA), { key: minted })).statusCode).toBe(200);
        expectError(await call(t, 'GET', copilotPath(botB), { key: minted }), 403, 'forbidden');
      });

      it('refuses scopes it does not hold with 403', async () => {
        const writer = await t.key(['knowledgebase:write', 'admin'], [botA]);
        // admin holds every scope, so a limited admin may grant any scope within its bots
        expect((await call(t, 'POST', KEYS_PATH, { key: writer, payload: { scopes: ['copilots:write'], bots: [botA] } })).statusCode).toBe(201);
      });
    });

    it('lists only keys within its bots', async () => {
      const unlimitedId = keyIdOf(t.admin);
      const otherBot = keyIdOf(await t.key(['copilots:read'], [botB]));
      const mine = keyIdOf(await t.key(['copilots:read'], [botA]));
      const res = await call(t, 'GET', KEYS_PATH, { key: limitedAdmin });
      expect(res.statusCode, res.body).toBe(200);
      const ids = (res.json() as Array<{ id: string; bots: string[] | null }>).map((k) => k.id);
      expect(ids).toContain(mine);
      expect(ids).toContain(keyIdOf(limitedAdmin));
      expect(ids).not.toContain(unlimitedId);
      expect(ids).not.toContain(otherBot);
      for (const key of res.json() as Array<{ bots: string[] | null }>) {
        expect(key.bots).not.toBeNull();
        for (const bot of key.bots!) expect(bot).toBe(botA);
      }
    });

    it("cannot revoke an unlimited key or a key of another bot (404), revokes its own bots' keys (204)", async () => {
      const victim = await t.key(['admin']);
      expectError(await call(t, 'DELETE', `${KEYS_PATH}/${keyIdOf(victim)}`, { key: limitedAdmin }), 404, 'key_not_found');
      expect((await call(t, 'GET', COPILOTS_PATH, { key: victim })).statusCode).toBe(200);
      const otherBot = await t.key(['copilots:read'], [botB]);
      expectError(await call(t, 'DELETE', `${KEYS_PATH}/${keyIdOf(otherBot)}`, { key: limitedAdmin }), 404, 'key_not_found');
      const mine = await t.key(['copilots:read'], [botA]);
      expect((await call(t, 'DELETE', `${KEYS_PATH}/${keyIdOf(mine)}`, { key: limitedAdmin })).statusCode).toBe(204);
      expectError(await call(t, 'GET', copilotPath(botA), { key: mine }), 401, 'unauthorized');
    });

    it("reads only its bots' audit entries", async () => {
      await call(t, 'POST', `/backend/knowledgebase/b/${botB}`, { payload: { links: ['https://b.example/page'] } });
      await call(t, 'DELETE', `/backend/knowledgebase/b/${botB}`, { payload: { links: ['https://b.example/page'] } });
      expectError(await call(t, 'GET', `${AUDIT_PATH}?bot_id=${botB}`, { key: limitedAdmin }), 403, 'forbidden');
      const res = await call(t, 'GET', AUDIT_PATH, { key: limitedAdmin });
      expect(res.statusCode, res.body).toBe(200);
      for (const entry of res.json() as Array<{ bot_id: string | null }>) expect(entry.bot_id).toBe(botA);
      const all = await call(t, 'GET', `${AUDIT_PATH}?bot_id=${botB}`);
      expect((all.json() as unknown[]).length).toBeGreaterThan(0);
    });

    describe('bot lists', () => {
      it('refuses an empty list, blank entries and unknown or deleted copilots with 400', async () => {
        const deleted = (await createCopilot(t, { name: 'Gone' })).id;
        expect((await call(t, 'DELETE', copilotPath(deleted))).statusCode).toBe(200);
        for (const bots of [[], [''], ['  '], [botA, ''], ['not-a-copilot'], ['00000000-0000-4000-8000-000000000000'], [deleted]]) {
          const res = await call(t, 'POST', KEYS_PATH, { payload: { scopes: ['copilots:read'], bots } });
          expectError(res, 400, 'invalid_request');
        }
      });

      it('stores bot ids in their canonical (lower-case) form', async () => {
        const res = await call(t, 'POST', KEYS_PATH, { payload: { scopes: ['copilots:read'], bots: [botA.toUpperCase()] } });
        expect(res.statusCode, res.body).toBe(201);
        expect(res.json().bots).toEqual([botA]);
      });
    });

    describe("a key without copilots:read never receives a copilot's token", () => {
      it('create, update, upload and delete answer the copilot without its token', async () => {
        const writer = await t.key(['copilots:write']);
        const created = await call(t, 'POST', COPILOTS_PATH, { key: writer, payload: { name: 'Write only' } });
        expect(created.statusCode).toBe(201);
        expect(created.json().token).toBe('');
        const id = created.json().id as string;
        const patched = await call(t, 'PATCH', copilotPath(id), { key: writer, payload: { name: 'Renamed' } });
        expect(patched.statusCode).toBe(200);
        expect(patched.json().token).toBe('');
        const uploaded = await t.app.inject({
          method: 'PUT',
          url: `${copilotPath(id)}/swagger`,
          headers: { authorization: writer, 'content-type': 'application/json' },
          payload: JSON.stringify({ openapi: '3.0.3', info: { title: 't', version: '1' }, paths: {} }),
        });
        expect(uploaded.statusCode, uploaded.body).toBe(200);
        expect(uploaded.json().token).toBe('');
        const deleted = await call(t, 'DELETE', copilotPath(id), { key: writer });
        expect(deleted.statusCode).toBe(200);
        expect(deleted.json().token).toBe('');
        // A key that may read gets it.
        const reader = await call(t, 'GET', `${copilotPath(id)}`, {});
        expect(reader.statusCode).toBe(404);
        const both = await t.key(['copilots:write', 'copilots:read']);
        const visible = await call(t, 'POST', COPILOTS_PATH, { key: both, payload: { name: 'Readable' } });
        expect(visible.json().token).toMatch(/^[A-Za-z0-9]{20}$/);
      });
    });

    it("a limited key's creation and revocation are entries of each of its bots: every tenant administrator of one reads them", async () => {
      const both = await t.key(['admin'], [botA, botB]);
      const created = await call(t, 'POST', KEYS_PATH, { key: both, payload: { scopes: ['copilots:read'], bots: [botA, botB] } });
      expect(created.statusCode, created.body).toBe(201);
      const id = created.json().id as string;
      expect((await call(t, 'DELETE', `${KEYS_PATH}/${id}`, { key: both })).statusCode).toBe(204);
      const onlyB = await t.key(['admin'], [botB]);
      for (const [viewer, bot] of [
        [limitedAdmin, botA],
        [onlyB, botB],
      ] as const) {
        for (const action of ['key.create', 'key.revoke']) {
          const res = await call(t, 'GET', `${AUDIT_PATH}?action=${action}`, { key: viewer });
          expect(res.statusCode, res.body).toBe(200);
          const mine = (res.json() as Array<{ bot_id: string; details: { key_id: string } }>).filter((e) => e.details.key_id === id);
          expect(mine.map((e) => e.bot_id)).toEqual([bot]);
        }
      }
      // An unlimited admin reads one entry per bot; a key for every bot is an entry of none.
      const all = (await call(t, 'GET', `${AUDIT_PATH}?action=key.create`)).json() as Array<{ bot_id: string | null; details: { key_id: string } }>;
      expect(
        all
          .filter((e) => e.details.key_id === id)
          .map((e) => e.bot_id)
          .sort(),
      ).toEqual([botA, botB].sort());
      const everyBot = await call(t, 'POST', KEYS_PATH, { payload: { scopes: ['copilots:read'] } });
      const again = (await call(t, 'GET', `${AUDIT_PATH}?action=key.create`)).json() as Array<{ bot_id: string | null; details: { key_id: string } }>;
      expect(again.filter((e) => e.details.key_id === everyBot.json().id).map((e) => e.bot_id)).toEqual([null]);
    });

    it('a key naming many bots writes an entry per bot, all of them together within the bound of one entry (at least 1 Ki characters each)', async () => {
      const many = await Promise.all(Array.from({ length: 200 }, (_, i) => createCopilot(t, { name: `Many ${i}` })));
      const ids = many.map((c) => c.id);
      const created = await call(t, 'POST', KEYS_PATH, { payload: { scopes: ['copilots:read'], bots: ids } });
      expect(created.statusCode, created.body).toBe(201);
      const rows = await t.storage.db.selectFrom('audit_log').select(['bot_id', 'details']).where('action', '=', 'key.create').execute();
      const mine = rows.filter((r) => (JSON.parse(r.details) as { key_id: string }).key_id === created.json().id);
      expect(mine.map((r) => r.bot_id).sort()).toEqual([...ids].sort());
      for (const row of mine) {
        expect(row.details.length).toBeLessThanOrEqual(Math.max(1024, AUDIT_DETAILS_MAX_CHARS / 200));
        expect(JSON.parse(row.details)).toMatchObject({ bots_total: 200, scopes: ['copilots:read'] });
      }
    });

    it('a key naming 1000 bots, as many as the schema allows, is created, listed by a key of those bots and revoked (scale sweep: SQLite answered 500, its expression tree too deep)', async () => {
      const ids: string[] = [];
      for (let i = 0; i < 1000; i++) ids.push((await createCopilotRow(t.storage.db, { name: `Thousand ${i}` })).id);
      const created = await call(t, 'POST', KEYS_PATH, { payload: { scopes: ['admin'], bots: ids } });
      expect(created.statusCode, created.body.slice(0, 300)).toBe(201);
      const tenant = `Bearer ${created.json().key as string}`;
      const minted = await call(t, 'POST', KEYS_PATH, { key: tenant, payload: { scopes: ['copilots:read'], bots: ids } });
      expect(minted.statusCode, minted.body.slice(0, 300)).toBe(201);
      const listed = await call(t, 'GET', KEYS_PATH, { key: tenant });
      expect(listed.statusCode, listed.body.slice(0, 300)).toBe(200);
      expect((listed.json() as Array<{ id: string }>).map((k) => k.id)).toContain(minted.json().id);
      expect((await call(t, 'DELETE', `${KEYS_PATH}/${minted.json().id as string}`, { key: tenant })).statusCode).toBe(204);
    }, 120_000);

    it(`creates at most ${MAX_ACTIVE_KEYS_PER_BOT} active keys naming one bot (429 quota_exceeded); revoking one makes room`, async () => {
      const bot = (await createCopilot(t, { name: 'Many keys' })).id;
      const tenant = await t.key(['admin'], [bot]);
      // Every key but two written straight to the table (the tenant's own is one).
      const rows = Array.from({ length: MAX_ACTIVE_KEYS_PER_BOT - 2 }, (_, i) => ({
        id: `manykeys${String(i).padStart(8, '0')}`,
        name: '',
        secret_hash: '0'.repeat(64),
        scopes: '["copilots:read"]',
        bots: JSON.stringify([bot]),
        created_at: '2026-11-30T00:00:00.000000Z',
        revoked_at: null,
      }));
      for (let i = 0; i < rows.length; i += 200)
        await t.storage.db
          .insertInto('api_keys')
          .values(rows.slice(i, i + 200))
          .execute();
      const create = () => call(t, 'POST', KEYS_PATH, { key: tenant, payload: { scopes: ['copilots:read'], bots: [bot] } });
      const last = await create();
      expect(last.statusCode, last.body).toBe(201);
      const refused = await create();
      expectError(refused, 429, 'quota_exceeded');
      expect(refused.json().details).toEqual({ bot_id: bot, max_active_keys_per_bot: MAX_ACTIVE_KEYS_PER_BOT });
      // Keys of other bots are not counted against it, nor revoked ones.
      expect((await call(t, 'POST', KEYS_PATH, { payload: { scopes: ['copilots:read'], bots: [botB] } })).statusCode).toBe(201);
      expect((await call(t, 'DELETE', `${KEYS_PATH}/${last.json().id}`, { key: tenant })).statusCode).toBe(204);
      expect((await create()).statusCode).toBe(201);
      // Its list holds its bot's keys, read without every other tenant's.
      const listed = await call(t, 'GET', KEYS_PATH, { key: tenant });
      expect((listed.json() as unknown[]).length).toBe(MAX_ACTIVE_KEYS_PER_BOT + 1);
    });
  });

  describe(`the last admin key (${dialect})`, () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await buildTestApp(dialect);
    });
    afterAll(async () => t.close());

    it('is not revoked (409 conflict) while no other admin key for every bot is active; a limited admin key does not count', async () => {
      const bot = (await createCopilot(t, { name: 'Tenant' })).id;
      await t.key(['admin'], [bot]);
      const second = await t.key(['admin']);
      // Two admin keys for every bot: one of them may go.
      expect((await call(t, 'DELETE', `${KEYS_PATH}/${keyIdOf(t.admin)}`, { key: second })).statusCode).toBe(204);
      const self = await call(t, 'DELETE', `${KEYS_PATH}/${keyIdOf(second)}`, { key: second });
      expectError(self, 409, 'conflict');
      expect((await call(t, 'GET', KEYS_PATH, { key: second })).statusCode).toBe(200);
      // With another created first, it may go.
      const third = await t.key(['admin']);
      expect((await call(t, 'DELETE', `${KEYS_PATH}/${keyIdOf(second)}`, { key: third })).statusCode).toBe(204);
    });
  });
}
