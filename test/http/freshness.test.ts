import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildTestApp, type TestApp } from '../support/app.js';
import { DIALECTS } from '../support/databases.js';
import { copilotPath } from '../support/http.js';

// Every request reads what it answers from the database: a write by this instance, by another
// one on the same database or by hand must show in the very next request.
for (const dialect of DIALECTS) {
  describe(`fresh reads (${dialect})`, () => {
    let t: TestApp;
    let other: FastifyInstance;
    beforeAll(async () => {
      t = await buildTestApp(dialect);
      other = await t.anotherApp();
    });
    afterAll(async () => {
      await other.close();
      await t.close();
    });

    const list = async (app: FastifyInstance, query = '') => {
      const res = await app.inject({ method: 'GET', url: `/backend/api/copilots${query}`, headers: { authorization: t.admin } });
      expect(res.statusCode).toBe(200);
      return res;
    };
    const names = async (app: FastifyInstance, query = '') => (await list(app, query)).json().map((c: { name: string }) => c.name);

    it('shows creations, updates and deletions made through another instance at once', async () => {
      expect(await names(t.app)).toEqual([]);
      const created = await other.inject({ method: 'POST', url: '/backend/api/copilots', headers: { authorization: t.admin }, payload: { name: 'first' } });
      expect(created.statusCode).toBe(201);
      const id = created.json().id;
      expect(await names(t.app)).toEqual(['first']);
      expect(await names(t.app)).toEqual(['first']); // served twice: same answer

      await other.inject({ method: 'PATCH', url: copilotPath(id), headers: { authorization: t.admin }, payload: { name: 'renamed' } });
      expect(await names(t.app)).toEqual(['renamed']);

      await other.inject({ method: 'DELETE', url: copilotPath(id), headers: { authorization: t.admin } });
      expect(await names(t.app)).toEqual([]);
      expect(await names(t.app, '?include_deleted=true')).toEqual(['renamed']);
    });

    it('keeps answers for different queries, keys and pages apart', async () => {
      for (const name of ['alpha', 'beta', 'gamma']) {
        await t.app.inject({ method: 'POST', url: '/backend/api/copilots', headers: { authorization: t.admin }, payload: { name } });
      }
      const first = await list(t.app, '?limit=1');
      expect(first.json().map((c: { name: string }) => c.name)).toEqual(['gamma']);
      const next = /<([^>]+)>/.exec(String(first.headers.link))![1]!;
      const again = await list(t.app, '?limit=1');
      expect(again.headers.link).toBe(first.headers.link);
      expect((await t.app.inject({ method: 'GET', url: next, headers: { authorization: t.admin } })).json()[0].name).toBe('beta');
      expect(await names(t.app, '?q=ALP')).toEqual(['alpha']);

      const beta = (await list(t.app, '?q=beta')).json()[0].id as string;
      const limited = await t.key(['copilots:read'], [beta]);
      const res = await t.app.inject({ method: 'GET', url: '/backend/api/copilots', headers: { authorization: limited } });
      expect(res.json().map((c: { name: string }) => c.name)).toEqual(['beta']);
    });

    it('a key revoked through another instance, or by hand in the database, is refused on the very next request', async () => {
      const reader = await t.key(['copilots:read']);
      const byHand = await t.key(['copilots:read']);
      for (const key of [reader, byHand]) {
        expect((await t.app.inject({ method: 'GET', url: '/backend/api/copilots', headers: { authorization: key } })).statusCode).toBe(200);
      }
      const revoked = await other.inject({ method: 'DELETE', url: `/backend/api/keys/${reader.split('_')[1]}`, headers: { authorization: t.admin } });
      expect(revoked.statusCode).toBe(204);
      expect((await t.app.inject({ method: 'GET', url: '/backend/api/copilots', headers: { authorization: reader } })).statusCode).toBe(401);
      await t.storage.db.updateTable('api_keys').set({ revoked_at: new Date().toISOString() }).where('id', '=', byHand.split('_')[1]!).execute();
      expect((await t.app.inject({ method: 'GET', url: '/backend/api/copilots', headers: { authorization: byHand } })).statusCode).toBe(401);
    });

    it('a copilot edited by hand in the database shows on the very next read and list', async () => {
      const created = await t.app.inject({ method: 'POST', url: '/backend/api/copilots', headers: { authorization: t.admin }, payload: { name: 'before' } });
      const id = created.json().id as string;
      expect((await t.app.inject({ method: 'GET', url: copilotPath(id), headers: { authorization: t.admin } })).json().name).toBe('before');
      await t.storage.db.updateTable('copilots').set({ name: 'after', name_folded: 'after' }).where('id', '=', id).execute();
      expect((await other.inject({ method: 'GET', url: copilotPath(id), headers: { authorization: t.admin } })).json().name).toBe('after');
      expect(await names(t.app)).toContain('after');
    });
  });
}
