import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import type { FastifyInstance } from 'fastify';
import { buildTestApp, type TestApp } from '../support/app.js';
import { DIALECTS } from '../support/databases.js';

// The list answer is cached under the copilots table's version: every write, by this
// instance or another one on the same database, must show in the next list at once.
for (const dialect of DIALECTS) {
  describe(`copilot list cache (${dialect})`, () => {
    let t: TestApp;
    let other: FastifyInstance;
    beforeAll(async () => {
      t = await buildTestApp(dialect);
      other = await buildApp(t.config, { storage: t.storage, logger: false });
      await other.ready();
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

      await other.inject({ method: 'PATCH', url: `/backend/api/copilot/${id}`, headers: { authorization: t.admin }, payload: { name: 'renamed' } });
      expect(await names(t.app)).toEqual(['renamed']);

      await other.inject({ method: 'DELETE', url: `/backend/api/copilot/${id}`, headers: { authorization: t.admin } });
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
      const limited = await t.bearer(['copilots:read'], [beta]);
      const res = await t.app.inject({ method: 'GET', url: '/backend/api/copilots', headers: { authorization: limited } });
      expect(res.json().map((c: { name: string }) => c.name)).toEqual(['beta']);
    });

    it('with its change tokens deleted by hand, caches nothing and still shows every write and revocation at once', async () => {
      await t.storage.db.deleteFrom('change_counters').execute();
      const before = await names(t.app);
      await other.inject({ method: 'POST', url: '/backend/api/copilots', headers: { authorization: t.admin }, payload: { name: 'untracked' } });
      expect(await names(t.app)).toEqual(['untracked', ...before]);
      const reader = await t.bearer(['copilots:read']);
      const ok = await t.app.inject({ method: 'GET', url: '/backend/api/copilots', headers: { authorization: reader } });
      expect(ok.statusCode).toBe(200);
      await t.storage.db.updateTable('api_keys').set({ revoked_at: new Date().toISOString() }).where('id', '=', reader.split('_')[1]!).execute();
      const refused = await t.app.inject({ method: 'GET', url: '/backend/api/copilots', headers: { authorization: reader } });
      expect(refused.statusCode).toBe(401);
    });
  });
}
