/**
 * Issue 14 §6: every route checked the same way. Walks every operation of the service's own
 * /backend/openapi.json and calls it without a key (401), with a key lacking the scope the
 * operation publishes (403) and, where the operation names a bot, with a key limited to
 * another bot (403) — all in the contract's shape. A new route without its access rule
 * publishes no scope and fails here.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SCOPES, type Scope } from '../../src/domain/auth/api-keys.js';
import { buildTestApp, type TestApp } from '../support/app.js';
import { DIALECTS } from '../support/databases.js';
import { call, createCopilot, expectError } from '../support/http.js';

interface Operation {
  security?: Array<Record<string, string[]>>;
  'x-bot-param'?: string;
}

const OPEN = new Set(['/backend/openapi.json']);
/** Operations any valid key may call (they publish an empty list of scopes): 401 without a key, never 403. */
const ANY_KEY = new Set(['GET /backend/api/keys/me']);

for (const dialect of DIALECTS) {
  describe(`every /backend route refuses the same way (${dialect})`, () => {
    let t: TestApp;
    let bot: string;
    let other: string;
    let keyId: string;
    let operations: Array<{ method: string; path: string; url: string; scope: Scope; botParam?: string }>;
    const anyKey: Array<{ method: string; url: string }> = [];
    beforeAll(async () => {
      t = await buildTestApp(dialect);
      bot = (await createCopilot(t, { name: 'Walked' })).id;
      other = (await createCopilot(t, { name: 'Other' })).id;
      keyId = (await call(t, 'POST', '/backend/api/keys', { payload: { scopes: ['copilots:read'] } })).json().id;
      const doc = (await call(t, 'GET', '/backend/openapi.json')).json() as { paths: Record<string, Record<string, Operation>> };
      operations = [];
      for (const [path, item] of Object.entries(doc.paths)) {
        if (!path.startsWith('/backend') || OPEN.has(path)) continue;
        for (const [method, operation] of Object.entries(item)) {
          const scopes = operation.security?.[0]?.bearer;
          if (ANY_KEY.has(`${method.toUpperCase()} ${path}`)) {
            expect(scopes, `${method.toUpperCase()} ${path} is open to any key`).toEqual([]);
            anyKey.push({ method: method.toUpperCase(), url: path });
            continue;
          }
          expect(scopes, `${method.toUpperCase()} ${path} publishes the scope it needs`).toHaveLength(1);
          const url = path.replace('{bot_id}', bot).replace(/\{id\}/, path.startsWith('/backend/api/keys') ? keyId : bot);
          operations.push({ method: method.toUpperCase(), path, url, scope: scopes![0] as Scope, botParam: operation['x-bot-param'] });
        }
      }
    });
    afterAll(async () => t.close());

    it('found the operations', () => {
      expect(operations.length).toBeGreaterThan(15);
      expect(operations.filter((o) => o.botParam).length).toBeGreaterThan(8);
    });

    it('401 without a key, on every operation', async () => {
      for (const op of operations) expectError(await call(t, op.method as 'GET', op.url, { key: null }), 401, 'unauthorized');
    });

    it('the operations open to any key: 401 without one, 200 with a key of any single scope', async () => {
      expect(anyKey.map((o) => `${o.method} ${o.url}`).sort()).toEqual([...ANY_KEY].sort());
      for (const op of anyKey) {
        expectError(await call(t, op.method as 'GET', op.url, { key: null }), 401, 'unauthorized');
        for (const scope of SCOPES) {
          const res = await call(t, op.method as 'GET', op.url, { key: await t.key([scope], [other]) });
          expect(res.statusCode, `${op.method} ${op.url} with ${scope}: ${res.body}`).toBe(200);
        }
      }
    });

    it('403 with a key holding every scope but the one needed', async () => {
      for (const op of operations) {
        const scopes = SCOPES.filter((s) => s !== op.scope && s !== 'admin');
        const res = await call(t, op.method as 'GET', op.url, { key: await t.key(scopes) });
        expect(res.statusCode, `${op.method} ${op.path}: ${res.body}`).toBe(403);
        expectError(res, 403, 'forbidden');
      }
    });

    it('403 with a key limited to another bot, where the operation names a bot', async () => {
      for (const op of operations.filter((o) => o.botParam)) {
        const res = await call(t, op.method as 'GET', op.url, { key: await t.key([op.scope], [other]) });
        expect(res.statusCode, `${op.method} ${op.path}: ${res.body}`).toBe(403);
        expectError(res, 403, 'forbidden');
      }
    });
  });
}
