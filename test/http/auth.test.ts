import { createHash, randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../../src/domain/auth/api-keys.js';
import { nowTimestamp } from '../../src/domain/ids.js';
import { openStorage, type Storage } from '../../src/storage/database.js';
import { buildTestApp, keyIdOf, type TestApp } from '../support/app.js';
import { DIALECTS } from '../support/databases.js';
import { API_KEY, call, COPILOTS_PATH, copilotPath, createCopilot, expectCopilot, expectError, KEYS_PATH, TIMESTAMP } from '../support/http.js';

const secretOf = (authorization: string) => authorization.split('_')[2]!;

for (const dialect of DIALECTS) {
  describe(`authentication and permissions (${dialect})`, () => {
    let t: TestApp;
    let copilotA: string;
    let copilotB: string;
    beforeAll(async () => {
      t = await buildTestApp(dialect);
      copilotA = (await createCopilot(t, { name: 'Bot A' })).id;
      copilotB = (await createCopilot(t, { name: 'Bot B' })).id;
    });
    afterAll(async () => t.close());

    /** Every key-protected route, with a valid request body where one is needed. */
    const routes = () =>
      [
        { method: 'GET', url: COPILOTS_PATH, scope: 'copilots:read' },
        { method: 'POST', url: COPILOTS_PATH, payload: { name: 'New' }, scope: 'copilots:write' },
        { method: 'GET', url: copilotPath(copilotA), scope: 'copilots:read' },
        { method: 'PATCH', url: copilotPath(copilotA), payload: { name: 'Bot A' }, scope: 'copilots:write' },
        { method: 'DELETE', url: copilotPath(randomUUID()), scope: 'copilots:write' },
        { method: 'GET', url: KEYS_PATH, scope: 'admin' },
        { method: 'POST', url: KEYS_PATH, payload: { scopes: ['copilots:read'] }, scope: 'admin' },
        { method: 'DELETE', url: `${KEYS_PATH}/nosuchkey0000000`, scope: 'admin' },
      ] as const;

    describe('401', () => {
      const badHeaders = async (): Promise<Array<[string, string | null]>> => {
        const valid = await t.key(['admin']);
        const revoked = await t.key(['admin']);
        expect((await call(t, 'DELETE', `${KEYS_PATH}/${keyIdOf(revoked)}`)).statusCode).toBe(204);
        return [
          ['no header', null],
          ['an empty header', ''],
          ['Basic credentials', 'Basic dXNlcjpwYXNz'],
          ['the key without Bearer', valid.slice('Bearer '.length)],
          ['Bearer and nothing else', 'Bearer '],
          ['Token scheme', `Token ${valid.slice('Bearer '.length)}`],
          ['a malformed key', 'Bearer cms_short_key'],
          ['a key with a bad prefix', `Bearer xyz_${valid.slice('Bearer cms_'.length)}`],
          ['a key with a secret too short', valid.slice(0, -1)],
          ['a key with an extra part', `${valid}_extra`],
          ['two keys', `${valid} ${valid}`],
          ['an unknown key id', `Bearer cms_${'Z'.repeat(16)}_${secretOf(valid)}`],
          ['a wrong secret', `Bearer cms_${keyIdOf(valid)}_${'a'.repeat(32)}`],
          ['a revoked key', revoked],
        ];
      };

      it('answers 401 unauthorized on every route for a missing, malformed, unknown, wrong or revoked key', async () => {
        const headers = await badHeaders();
        for (const route of routes()) {
          for (const [label, header] of headers) {
            const res = await call(t, route.method, route.url, { key: header, ...('payload' in route && { payload: route.payload }) });
            expect(res.statusCode, `${route.method} ${route.url} with ${label}: ${res.body}`).toBe(401);
            expectError(res, 401, 'unauthorized');
          }
        }
      });

      it('checks the key before the body: 401 for an invalid body sent without a key', async () => {
        expectError(await call(t, 'POST', COPILOTS_PATH, { key: null, payload: { nonsense: true } }), 401, 'unauthorized');
        expectError(
          await call(t, 'POST', COPILOTS_PATH, { key: null, payload: '{not json', headers: { 'content-type': 'application/json' } }),
          401,
          'unauthorized',
        );
        expectError(await call(t, 'PATCH', copilotPath('not-an-id'), { key: null, payload: {} }), 401, 'unauthorized');
      });

      it('accepts the scheme name in any case', async () => {
        const res = await call(t, 'GET', COPILOTS_PATH, { key: t.admin.replace('Bearer', 'bearer') });
        expect(res.statusCode).toBe(200);
      });
    });

    describe('403', () => {
      it('answers 403 forbidden on every route for a key without the scope', async () => {
        const allScopes = ['copilots:read', 'copilots:write', 'knowledgebase:read', 'knowledgebase:write', 'knowledgebase:delete'] as const;
        for (const route of routes()) {
          // A key with every scope except the needed one (and never admin).
          const key = await t.key(allScopes.filter((s) => s !== route.scope));
          const res = await call(t, route.method, route.url, { key, ...('payload' in route && { payload: route.payload }) });
          expect(res.statusCode, `${route.method} ${route.url}: ${res.body}`).toBe(403);
          expectError(res, 403, 'forbidden');
        }
      });

      it('read does not imply write, nor write read', async () => {
        const reader = await t.key(['copilots:read']);
        const writer = await t.key(['copilots:write']);
        expect((await call(t, 'GET', COPILOTS_PATH, { key: reader })).statusCode).toBe(200);
        expectError(await call(t, 'POST', COPILOTS_PATH, { key: reader, payload: { name: 'x' } }), 403, 'forbidden');
        expectError(await call(t, 'GET', COPILOTS_PATH, { key: writer }), 403, 'forbidden');
        expectError(await call(t, 'GET', copilotPath(copilotA), { key: writer }), 403, 'forbidden');
        expect((await call(t, 'POST', COPILOTS_PATH, { key: writer, payload: { name: 'By writer' } })).statusCode).toBe(201);
      });

      it('checks the scope before the body and the id: 403 before 400 and 404', async () => {
        const reader = await t.key(['copilots:read']);
        expectError(await call(t, 'POST', COPILOTS_PATH, { key: reader, payload: { nonsense: true } }), 403, 'forbidden');
        expectError(await call(t, 'PATCH', copilotPath(randomUUID()), { key: reader, payload: {} }), 403, 'forbidden');
        expectError(await call(t, 'DELETE', copilotPath('not-an-id'), { key: reader }), 403, 'forbidden');
      });

      it('no key but admin may manage keys', async () => {
        const everything = await t.key(['copilots:read', 'copilots:write', 'knowledgebase:read', 'knowledgebase:write', 'knowledgebase:delete']);
        expectError(await call(t, 'GET', KEYS_PATH, { key: everything }), 403, 'forbidden');
        expectError(await call(t, 'POST', KEYS_PATH, { key: everything, payload: { scopes: ['admin'] } }), 403, 'forbidden');
        expectError(await call(t, 'DELETE', `${KEYS_PATH}/${keyIdOf(t.admin)}`, { key: everything }), 403, 'forbidden');
        // The admin key still works.
        expect((await call(t, 'GET', KEYS_PATH)).statusCode).toBe(200);
      });
    });

    describe('a key limited to one bot', () => {
      let limited: string;
      beforeAll(async () => {
        limited = await t.key(['copilots:read', 'copilots:write'], [copilotA]);
      });

      it('reads and updates its own bot', async () => {
        expect((await call(t, 'GET', copilotPath(copilotA), { key: limited })).statusCode).toBe(200);
        expect((await call(t, 'GET', copilotPath(copilotA.toUpperCase()), { key: limited })).statusCode).toBe(200);
        const res = await call(t, 'PATCH', copilotPath(copilotA), { key: limited, payload: { website: 'https://a.example.com' } });
        expect(res.statusCode).toBe(200);
        expectCopilot(res.json());
      });

      it('gets 403 for GET, PATCH and DELETE of another bot, existing or not', async () => {
        for (const id of [copilotB, randomUUID(), 'not-an-id']) {
          expectError(await call(t, 'GET', copilotPath(id), { key: limited }), 403, 'forbidden');
          expectError(await call(t, 'PATCH', copilotPath(id), { key: limited, payload: { name: 'mine now' } }), 403, 'forbidden');
          expectError(await call(t, 'DELETE', copilotPath(id), { key: limited }), 403, 'forbidden');
        }
        // Nothing changed on B.
        const b = (await call(t, 'GET', copilotPath(copilotB))).json();
        expect(b.name).toBe('Bot B');
        expect(b.deleted_at).toBeNull();
      });

      it('sees only its bot in the list', async () => {
        const res = await call(t, 'GET', `${COPILOTS_PATH}?limit=1000`, { key: limited });
        expect(res.statusCode).toBe(200);
        expect(res.json().map((c: { id: string }) => c.id)).toEqual([copilotA]);
        const filtered = await call(t, 'GET', `${COPILOTS_PATH}?q=${encodeURIComponent('Bot B')}`, { key: limited });
        expect(filtered.json()).toEqual([]);
      });

      it('cannot create copilots', async () => {
        expectError(await call(t, 'POST', COPILOTS_PATH, { key: limited, payload: { name: 'Escape' } }), 403, 'forbidden');
      });

      it('a key limited to a bot by its upper-case id works the same', async () => {
        const upper = await t.key(['copilots:read'], [copilotA.toUpperCase()]);
        expect((await call(t, 'GET', copilotPath(copilotA), { key: upper })).statusCode).toBe(200);
        expectError(await call(t, 'GET', copilotPath(copilotB), { key: upper }), 403, 'forbidden');
      });

      it('can delete its own bot', async () => {
        const c = await createCopilot(t, { name: 'Short-lived' });
        const own = await t.key(['copilots:write'], [c.id]);
        const res = await call(t, 'DELETE', copilotPath(c.id), { key: own });
        expect(res.statusCode).toBe(200);
        expect(res.json().deleted_at).toMatch(TIMESTAMP);
      });
    });

    it('admin implies every scope', async () => {
      const admin = await t.key(['admin']);
      const created = await call(t, 'POST', COPILOTS_PATH, { key: admin, payload: { name: 'By admin' } });
      expect(created.statusCode).toBe(201);
      const id = created.json().id;
      expect((await call(t, 'GET', COPILOTS_PATH, { key: admin })).statusCode).toBe(200);
      expect((await call(t, 'GET', copilotPath(id), { key: admin })).statusCode).toBe(200);
      expect((await call(t, 'PATCH', copilotPath(id), { key: admin, payload: { status: 'live' } })).statusCode).toBe(200);
      expect((await call(t, 'DELETE', copilotPath(id), { key: admin })).statusCode).toBe(200);
      expect((await call(t, 'GET', KEYS_PATH, { key: admin })).statusCode).toBe(200);
    });

    describe('key management', () => {
      it('POST creates a key: {id, key, scopes, bots, name, created_at}, usable at once', async () => {
        const res = await call(t, 'POST', KEYS_PATH, { payload: { scopes: ['copilots:read'], bots: [copilotA], name: 'reader for A' } });
        expect(res.statusCode, res.body).toBe(201);
        expect(res.body).toBe(JSON.stringify(JSON.parse(res.body)));
        const body = res.json();
        expect(Object.keys(body)).toEqual(['id', 'key', 'scopes', 'bots', 'name', 'created_at']);
        expect(body.key).toMatch(API_KEY);
        expect(body.key.split('_')[1]).toBe(body.id);
        expect(body).toMatchObject({ scopes: ['copilots:read'], bots: [copilotA], name: 'reader for A' });
        expect(body.created_at).toMatch(TIMESTAMP);

        const auth = `Bearer ${body.key}`;
        expect((await call(t, 'GET', copilotPath(copilotA), { key: auth })).statusCode).toBe(200);
        expectError(await call(t, 'GET', copilotPath(copilotB), { key: auth }), 403, 'forbidden');
        expectError(await call(t, 'PATCH', copilotPath(copilotA), { key: auth, payload: { name: 'x' } }), 403, 'forbidden');
      });

      it('POST without bots or name makes an unrestricted key with an empty name', async () => {
        const res = await call(t, 'POST', KEYS_PATH, { payload: { scopes: ['copilots:read', 'copilots:read'] } });
        expect(res.statusCode).toBe(201);
        expect(res.json()).toMatchObject({ scopes: ['copilots:read'], bots: null, name: '' });
        expect((await call(t, 'GET', copilotPath(copilotB), { key: `Bearer ${res.json().key}` })).statusCode).toBe(200);
      });

      it('GET lists keys without the key or its hash', async () => {
        const created = (await call(t, 'POST', KEYS_PATH, { payload: { scopes: ['knowledgebase:read'], name: 'listed' } })).json();
        const secret = created.key.split('_')[2];
        const hash = createHash('sha256').update(secret).digest('hex');
        const res = await call(t, 'GET', KEYS_PATH);
        expect(res.statusCode).toBe(200);
        expect(res.body).toBe(JSON.stringify(JSON.parse(res.body)));
        for (const leaked of [created.key, secret, hash, secretOf(t.admin)]) expect(res.body).not.toContain(leaked);
        expect(res.body).not.toMatch(/secret|hash/i);
        const list = res.json() as Array<Record<string, unknown>>;
        const entry = list.find((k) => k.id === created.id);
        expect(entry).toEqual({ id: created.id, name: 'listed', scopes: ['knowledgebase:read'], bots: null, created_at: created.created_at, revoked_at: null });
        for (const k of list) expect(Object.keys(k)).toEqual(['id', 'name', 'scopes', 'bots', 'created_at', 'revoked_at']);
      });

      it('DELETE revokes: 204, then the key gets 401 at once and is listed as revoked', async () => {
        const created = (await call(t, 'POST', KEYS_PATH, { payload: { scopes: ['copilots:read'] } })).json();
        const auth = `Bearer ${created.key}`;
        expect((await call(t, 'GET', COPILOTS_PATH, { key: auth })).statusCode).toBe(200);
        const res = await call(t, 'DELETE', `${KEYS_PATH}/${created.id}`);
        expect(res.statusCode).toBe(204);
        expect(res.body).toBe('');
        expectError(await call(t, 'GET', COPILOTS_PATH, { key: auth }), 401, 'unauthorized');
        const entry = (await call(t, 'GET', KEYS_PATH)).json().find((k: { id: string }) => k.id === created.id);
        expect(entry.revoked_at).toMatch(TIMESTAMP);
      });

      it('DELETE of a revoked key is 204 again and changes nothing: one revocation, one audit entry, even when sent many times at once', async () => {
        const created = (await call(t, 'POST', KEYS_PATH, { payload: { scopes: ['copilots:read'] } })).json();
        const answers = await Promise.all(Array.from({ length: 8 }, () => call(t, 'DELETE', `${KEYS_PATH}/${created.id}`)));
        expect(answers.map((res) => res.statusCode)).toEqual(Array(8).fill(204));
        const first = (await call(t, 'GET', KEYS_PATH)).json().find((k: { id: string }) => k.id === created.id).revoked_at;
        expect((await call(t, 'DELETE', `${KEYS_PATH}/${created.id}`)).statusCode).toBe(204);
        expect((await call(t, 'GET', KEYS_PATH)).json().find((k: { id: string }) => k.id === created.id).revoked_at).toBe(first);
        const audit = (await call(t, 'GET', '/backend/api/audit?action=key.revoke&limit=200')).json() as Array<{ details: { key_id?: string } }>;
        expect(audit.filter((e) => e.details.key_id === created.id)).toHaveLength(1);
      });

      it('a key revoked while it creates keys creates none after its revocation: those requests are 401', async () => {
        // The creating key was checked when its request arrived; its keys were written after it had
        // been revoked (on both databases), and kept working.
        for (let round = 0; round < 3; round++) {
          const minter = (await call(t, 'POST', KEYS_PATH, { payload: { scopes: ['admin'] } })).json();
          const mint = () => call(t, 'POST', KEYS_PATH, { payload: { scopes: ['copilots:read'] }, key: `Bearer ${minter.key}` });
          const answers = await Promise.all([
            ...Array.from({ length: 8 }, mint),
            call(t, 'DELETE', `${KEYS_PATH}/${minter.id}`),
            ...Array.from({ length: 8 }, mint),
          ]);
          const list = (await call(t, 'GET', KEYS_PATH)).json() as Array<{ id: string; created_at: string; revoked_at: string | null }>;
          const revokedAt = list.find((k) => k.id === minter.id)!.revoked_at!;
          for (const res of answers.filter((r) => r.statusCode === 201)) {
            const child = list.find((k) => k.id === res.json().id)!;
            expect(child.created_at <= revokedAt, `${child.created_at} after ${revokedAt}`).toBe(true);
          }
          for (const res of answers) expect([201, 204, 401]).toContain(res.statusCode);
        }
      });

      it('DELETE of an unknown key id is 404 key_not_found', async () => {
        expectError(await call(t, 'DELETE', `${KEYS_PATH}/nosuchkey0000000`), 404, 'key_not_found');
        expectError(await call(t, 'DELETE', `${KEYS_PATH}/x`), 404, 'key_not_found');
      });

      it.each([
        ['an unknown scope', { scopes: ['copilots:delete'] }],
        ['no scopes', { scopes: [] }],
        ['scopes missing', { name: 'x' }],
        ['scopes as a string', { scopes: 'admin' }],
        ['a scope that is not a string', { scopes: [1] }],
        ['an unknown field', { scopes: ['admin'], expires: '2030-01-01' }],
        ['bots not an array', { scopes: ['copilots:read'], bots: 'x' }],
        ['name not a string', { scopes: ['copilots:read'], name: 1 }],
      ])('POST rejects %s with 400 invalid_request', async (_label, payload) => {
        expectError(await call(t, 'POST', KEYS_PATH, { payload }), 400, 'invalid_request');
      });
    });
  });

  describe(`revocation across instances (${dialect})`, () => {
    let t: TestApp;
    let secondStorage: Storage;
    let second: FastifyInstance;
    beforeAll(async () => {
      t = await buildTestApp(dialect);
      // A second instance of the service on the same database.
      secondStorage = openStorage({ databaseUrl: t.config.databaseUrl, dataDir: t.config.dataDir, poolSize: 2 });
      second = await t.anotherApp({ storage: secondStorage });
    });
    afterAll(async () => {
      await second.close();
      await secondStorage.close();
      await t.close();
    });

    it('a key created on one instance works on the other, and a revocation acts at once on both', async () => {
      const created = (await call(t, 'POST', KEYS_PATH, { payload: { scopes: ['copilots:read'] } })).json();
      const auth = `Bearer ${created.key}`;
      const onSecond = () => second.inject({ method: 'GET', url: COPILOTS_PATH, headers: { authorization: auth } });
      expect((await onSecond()).statusCode).toBe(200);
      expect((await call(t, 'GET', COPILOTS_PATH, { key: auth })).statusCode).toBe(200);

      expect((await call(t, 'DELETE', `${KEYS_PATH}/${created.id}`)).statusCode).toBe(204);

      const after = await onSecond();
      expect(after.statusCode).toBe(401);
      expect(after.json().error).toBe('unauthorized');
      expectError(await call(t, 'GET', COPILOTS_PATH, { key: auth }), 401, 'unauthorized');
    });

    it('a key id refused once works at once when a key with that id is created elsewhere', async () => {
      const id = 'laterCreatedKey1';
      const guess = `Bearer cms_${id}_${'a'.repeat(32)}`;
      expectError(await call(t, 'GET', COPILOTS_PATH, { key: guess }), 401, 'unauthorized');
      const created = await createApiKey(secondStorage.db, { scopes: ['copilots:read'] }, { fixedId: id });
      expect((await call(t, 'GET', COPILOTS_PATH, { key: `Bearer ${created.key}` })).statusCode).toBe(200);
    });

    it('a revocation written straight to the database (no service involved) acts at once', async () => {
      const created = (await call(t, 'POST', KEYS_PATH, { payload: { scopes: ['copilots:read'] } })).json();
      const auth = `Bearer ${created.key}`;
      expect((await call(t, 'GET', COPILOTS_PATH, { key: auth })).statusCode).toBe(200);
      await secondStorage.db.updateTable('api_keys').set({ revoked_at: nowTimestamp() }).where('id', '=', created.id).execute();
      expectError(await call(t, 'GET', COPILOTS_PATH, { key: auth }), 401, 'unauthorized');
    });

    it('a revocation on the second instance acts at once on the first', async () => {
      const created = (await call(t, 'POST', KEYS_PATH, { payload: { scopes: ['copilots:read'] } })).json();
      const auth = `Bearer ${created.key}`;
      expect((await call(t, 'GET', COPILOTS_PATH, { key: auth })).statusCode).toBe(200);
      const revoke = await second.inject({ method: 'DELETE', url: `${KEYS_PATH}/${created.id}`, headers: { authorization: t.admin } });
      expect(revoke.statusCode).toBe(204);
      expectError(await call(t, 'GET', COPILOTS_PATH, { key: auth }), 401, 'unauthorized');
    });
  });
}
