/**
 * Issue 17 §3: GET /backend/api/keys/me answers the calling key's own identity and
 * permissions (the dashboard offers only what the key may do). Any valid key may ask;
 * no key, a bad or a revoked one is 401, also with ALLOW_ANONYMOUS_READ.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SCOPES } from '../../src/domain/auth/api-keys.js';
import { buildTestApp, keyIdOf, type TestApp } from '../support/app.js';
import { DIALECTS } from '../support/databases.js';
import { call, createCopilot, expectError, KEYS_PATH, TIMESTAMP } from '../support/http.js';

const ME = `${KEYS_PATH}/me`;
const FIELDS = ['id', 'name', 'scopes', 'bots', 'created_at', 'admin', 'effective_scopes'];

for (const dialect of DIALECTS) {
  describe(`the calling key's own identity (${dialect})`, () => {
    let t: TestApp;
    let bot: string;
    beforeAll(async () => {
      t = await buildTestApp(dialect);
      bot = (await createCopilot(t, { name: 'Mine' })).id;
    });
    afterAll(async () => t.close());

    it('an admin key: every scope, every bot, admin', async () => {
      const res = await call(t, 'GET', ME);
      expect(res.statusCode, res.body).toBe(200);
      const body = res.json();
      expect(Object.keys(body)).toEqual(FIELDS);
      expect(body).toMatchObject({ id: keyIdOf(t.admin), scopes: ['admin'], bots: null, admin: true, effective_scopes: [...SCOPES] });
      expect(body.created_at).toMatch(TIMESTAMP);
    });

    it('a read-only key limited to a bot: its label, scopes and bots, not admin, never its secret', async () => {
      const created = await call(t, 'POST', KEYS_PATH, { payload: { scopes: ['knowledgebase:read', 'copilots:read'], bots: [bot], name: 'Support desk' } });
      expect(created.statusCode, created.body).toBe(201);
      const key = `Bearer ${created.json().key as string}`;
      const res = await call(t, 'GET', ME, { key });
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toEqual({
        id: created.json().id,
        name: 'Support desk',
        scopes: ['knowledgebase:read', 'copilots:read'],
        bots: [bot],
        created_at: created.json().created_at,
        admin: false,
        // In the order of SCOPES, whatever the order given.
        effective_scopes: ['copilots:read', 'knowledgebase:read'],
      });
      expect(res.body).not.toContain(created.json().key.split('_')[2]);
    });

    it('any single scope is enough to ask', async () => {
      for (const scope of SCOPES) {
        const key = await t.key([scope]);
        const res = await call(t, 'GET', ME, { key });
        expect(res.statusCode, `${scope}: ${res.body}`).toBe(200);
        expect(res.json()).toMatchObject({ id: keyIdOf(key), scopes: [scope], name: '', admin: scope === 'admin' });
      }
    });

    it('401 without a key, with a malformed, unknown or revoked key', async () => {
      expectError(await call(t, 'GET', ME, { key: null }), 401, 'unauthorized');
      expectError(await call(t, 'GET', ME, { key: 'Bearer nope' }), 401, 'unauthorized');
      expectError(await call(t, 'GET', ME, { key: `Bearer cms_${'A'.repeat(16)}_${'b'.repeat(32)}` }), 401, 'unauthorized');
      const key = await t.key(['copilots:read']);
      expect((await call(t, 'GET', ME, { key })).statusCode).toBe(200);
      expect((await call(t, 'DELETE', `${KEYS_PATH}/${keyIdOf(key)}`)).statusCode).toBe(204);
      expectError(await call(t, 'GET', ME, { key }), 401, 'unauthorized');
    });

    it('"me" is no key id: revoking it is 404, and other methods are 405', async () => {
      expectError(await call(t, 'DELETE', ME), 404, 'key_not_found');
      expect((await call(t, 'GET', ME)).statusCode).toBe(200);
      const res = await call(t, 'PUT', ME, { payload: {} });
      expect(res.statusCode, res.body).toBe(405);
    });

    it('is in the OpenAPI document, open to any key (an empty list of scopes)', async () => {
      const doc = (await call(t, 'GET', '/backend/openapi.json', { key: null })).json();
      const op = doc.paths['/backend/api/keys/me'].get;
      expect(op.operationId).toBe('getOwnApiKey');
      expect(op.security).toEqual([{ bearer: [] }]);
      expect(op.responses['200'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/ApiKeyIdentity' });
      expect(Object.keys(doc.components.schemas.ApiKeyIdentity.properties)).toEqual(FIELDS);
      expect(op.responses['401']).toBeDefined();
    });
  });

  describe(`the calling key's own identity with ALLOW_ANONYMOUS_READ (${dialect})`, () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await buildTestApp(dialect, { env: { ALLOW_ANONYMOUS_READ: 'true' } });
    });
    afterAll(async () => t.close());

    it('still needs a key', async () => {
      expect((await call(t, 'GET', '/backend/api/copilots', { key: null })).statusCode).toBe(200);
      expectError(await call(t, 'GET', ME, { key: null }), 401, 'unauthorized');
    });
  });
}
