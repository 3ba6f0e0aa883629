import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStorage } from '../../src/storage/database.js';
import { buildTestApp, type TestApp } from '../support/app.js';
import { DIALECTS } from '../support/databases.js';
import { call, COPILOTS_PATH, copilotPath, createCopilot, expectError, expectNoLeaks, LEAKS } from '../support/http.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

for (const dialect of DIALECTS) {
  describe(`error answers (${dialect})`, () => {
    let t: TestApp;
    let id: string;
    /** Every error response of this file, checked together for leaks at the end. */
    const seen: LightMyRequestResponse[] = [];
    const expectErr = (res: LightMyRequestResponse, status: number, code: string) => {
      seen.push(res);
      return expectError(res, status, code);
    };

    beforeAll(async () => {
      t = await buildTestApp(dialect, { env: { BODY_LIMIT_BYTES: '1024' } });
      id = (await createCopilot(t, { name: 'Target' })).id;
    });
    afterAll(async () => t.close());

    describe('malformed JSON → 400 invalid_json', () => {
      const bodies = ['{', '{"name": "x",}', "{'name': 'x'}", '{"name": "x"} trailing', 'nul', '{"name": "\\x"}'];
      it.each(bodies)('POST copilots %j', async (payload) => {
        expectErr(await call(t, 'POST', COPILOTS_PATH, { payload, headers: { 'content-type': 'application/json' } }), 400, 'invalid_json');
      });

      it('PATCH copilot and POST keys too', async () => {
        expectErr(await call(t, 'PATCH', copilotPath(id), { payload: '{"name":', headers: { 'content-type': 'application/json' } }), 400, 'invalid_json');
        expectErr(await call(t, 'POST', '/backend/api/keys', { payload: '[1,', headers: { 'content-type': 'application/json' } }), 400, 'invalid_json');
      });

      it('valid JSON with a "__proto__" key, or "constructor" holding "prototype": 400 invalid_request naming the key, not "not valid JSON"', async () => {
        for (const payload of ['{"name":"p","__proto__":{"admin":true}}', '{"name":"p","constructor":{"prototype":{"x":1}}}']) {
          const res = await call(t, 'POST', COPILOTS_PATH, { payload, headers: { 'content-type': 'application/json' } });
          expectErr(res, 400, 'invalid_request');
          expect(res.json().message).toMatch(/__proto__/);
          expect(res.json().message).not.toMatch(/not valid JSON/);
        }
      });

      it('an empty body declared as JSON', async () => {
        expectErr(await call(t, 'POST', COPILOTS_PATH, { payload: '', headers: { 'content-type': 'application/json' } }), 400, 'invalid_json');
      });

      it('JSON with a charset parameter is still JSON', async () => {
        const res = await call(t, 'POST', COPILOTS_PATH, {
          payload: JSON.stringify({ name: 'Charset' }),
          headers: { 'content-type': 'application/json; charset=utf-8' },
        });
        expect(res.statusCode).toBe(201);
      });
    });

    describe('wrong content type → 415 unsupported_media_type', () => {
      it.each([
        ['text/plain', '{"name":"x"}'],
        ['text/plain', 'name=x'],
        ['application/x-www-form-urlencoded', 'name=x'],
        ['application/xml', '<name>x</name>'],
        ['multipart/form-data; boundary=x', '--x\r\nContent-Disposition: form-data; name="name"\r\n\r\nx\r\n--x--\r\n'],
        ['application/octet-stream', 'xxxx'],
      ])('POST copilots as %s', async (type, payload) => {
        expectErr(await call(t, 'POST', COPILOTS_PATH, { payload, headers: { 'content-type': type } }), 415, 'unsupported_media_type');
      });

      it('PATCH copilot as text/plain', async () => {
        expectErr(
          await call(t, 'PATCH', copilotPath(id), { payload: '{"name":"x"}', headers: { 'content-type': 'text/plain' } }),
          415,
          'unsupported_media_type',
        );
        expect((await call(t, 'GET', copilotPath(id))).json().name).toBe('Target');
      });

      it('POST keys as text/plain', async () => {
        expectErr(
          await call(t, 'POST', '/backend/api/keys', { payload: '{"scopes":["admin"]}', headers: { 'content-type': 'text/plain' } }),
          415,
          'unsupported_media_type',
        );
      });
    });

    describe('body over the limit → 413 payload_too_large', () => {
      it('POST copilots', async () => {
        const payload = JSON.stringify({ name: 'Big', prompt_message: 'x'.repeat(4000) });
        expectErr(await call(t, 'POST', COPILOTS_PATH, { payload, headers: { 'content-type': 'application/json' } }), 413, 'payload_too_large');
      });

      it('PATCH copilot', async () => {
        const payload = JSON.stringify({ prompt_message: 'y'.repeat(2000) });
        expectErr(await call(t, 'PATCH', copilotPath(id), { payload, headers: { 'content-type': 'application/json' } }), 413, 'payload_too_large');
      });

      it('a body just under the limit is accepted', async () => {
        const payload = JSON.stringify({ name: 'Fits', prompt_message: 'z'.repeat(900) });
        expect(Buffer.byteLength(payload)).toBeLessThan(1024);
        expect((await call(t, 'POST', COPILOTS_PATH, { payload, headers: { 'content-type': 'application/json' } })).statusCode).toBe(201);
      });
    });

    describe('unknown routes → 404 not_found, wrong methods → 405 (401 first on /backend without a key)', () => {
      it.each([
        ['GET', '/backend/', 404],
        ['GET', '/nope', 404],
        ['GET', '/backend', 404],
        ['GET', '/backend/api/copilot', 404],
        ['GET', '/backend/api/copilots/extra/segments', 404],
        ['PUT', COPILOTS_PATH, 405],
        ['POST', '/backend/api/nothing-here', 404],
        ['DELETE', '/backend/api/keys', 405],
      ])('%s %s', async (method, url, status) => {
        expectErr(await call(t, method as 'GET', url), status, status === 404 ? 'not_found' : 'method_not_allowed');
        if (url.startsWith('/backend')) expectErr(await call(t, method as 'GET', url, { key: null }), 401, 'unauthorized');
        else expectErr(await call(t, method as 'GET', url, { key: null }), 404, 'not_found');
      });
    });

    describe('validation errors', () => {
      it('carry details naming the field', async () => {
        const body = expectErr(await call(t, 'POST', COPILOTS_PATH, { payload: { name: 'x', enhanced_privacy: 'yes' } }), 400, 'invalid_request');
        expect(JSON.stringify(body.details ?? body.message)).toContain('enhanced_privacy');
      });

      it('for the query string too', async () => {
        const body = expectErr(await call(t, 'GET', `${COPILOTS_PATH}?limit=abc`), 400, 'invalid_request');
        expect(JSON.stringify(body)).toContain('limit');
      });

      it('a number in the query string or the path is written in decimal: 1e3, 0x10, 01, 1.0, +5 and " 5" → 400 naming it (HTTP sweep: each was read as a number)', async () => {
        expect((await call(t, 'GET', `${COPILOTS_PATH}?limit=5`)).statusCode).toBe(200);
        expect((await call(t, 'GET', `${COPILOTS_PATH}?limit=1000`)).statusCode).toBe(200);
        for (const value of ['1e3', '0x10', '01', '1.0', '%2B5', '%205', '5%20', '0b1', '0o7', '%0A3', '']) {
          const body = expectErr(await call(t, 'GET', `${COPILOTS_PATH}?limit=${value}`), 400, 'invalid_request');
          expect(JSON.stringify(body.details), value).toContain('/limit');
        }
        const copilot = await createCopilot(t, { name: 'Versions' });
        for (const version of ['0x1', '1e0', '01', '1.0']) {
          const body = expectErr(await call(t, 'GET', `${copilotPath(copilot.id)}/swagger/versions/${version}`), 400, 'invalid_request');
          expect(JSON.stringify(body.details), version).toContain('/version');
        }
      });

      it('a query parameter a route does not take → 400 naming it, on every /backend route (lists sweep: /keys?limit=1 was answered as if unsent, /copilots?foo=bar was refused)', async () => {
        const copilot = await createCopilot(t, { name: 'Query' });
        for (const path of ['/backend/api/keys', '/backend/api/keys/me', copilotPath(copilot.id), `${copilotPath(copilot.id)}/validator`, COPILOTS_PATH]) {
          const body = expectErr(await call(t, 'GET', `${path}?limit=1&foo=bar`), 400, 'invalid_request');
          expect(JSON.stringify(body), path).toMatch(/additional properties|foo|limit/);
          expect((await call(t, 'GET', path)).statusCode, path).not.toBe(400); // 422 for the validator: no document
        }
      });

      it('an audit filter date that no calendar has (2024-02-30, 2023-02-29, 24:00, an offset of +25:00) → 400 naming it; real ones are taken (HTTP sweep: 2024-02-30 was read as 1 March)', async () => {
        const audit = (query: string) => call(t, 'GET', `/backend/api/audit?${query}`);
        for (const good of ['2024-02-29', '2024-02-29T23:59:59Z', '2026-01-31T12:00:00.123%2B05:30', '2026-01-31t12:00z', '2026-01-31T12:00:00']) {
          expect((await audit(`since=${good}`)).statusCode, good).toBe(200);
        }
        for (const bad of [
          '2024-02-30',
          '2023-02-29',
          '2026-04-31T00:00:00Z',
          '2026-01-31T24:00:00Z',
          '2026-01-31T12:60:00Z',
          '2026-01-31T12:00:61Z',
          '2026-01-31T12:00:00%2B25:00',
          '2026-13-01',
          '2026-01-31T12:00:00Z junk',
          '2026-1-31',
          '2026-12-01%2007:00:00%20PST',
          '2026-12-01%2012:00%20PM',
          '2026-12-01%20z',
          '2026-12-01%20(.9)%2007:00',
        ]) {
          const body = expectErr(await audit(`until=${bad}`), 400, 'invalid_request');
          expect(body.details, bad).toEqual({ field: 'until' });
        }
      });
    });

    describe('x-request-id', () => {
      it('is echoed when the client sends one', async () => {
        const res = await call(t, 'GET', COPILOTS_PATH, { headers: { 'x-request-id': 'client-id.42:abc_DEF' } });
        expect(res.statusCode).toBe(200);
        expect(res.headers['x-request-id']).toBe('client-id.42:abc_DEF');
      });

      it('is echoed on error answers too', async () => {
        const res = await call(t, 'GET', '/nope', { headers: { 'x-request-id': 'trace-404' } });
        expectErr(res, 404, 'not_found');
        expect(res.headers['x-request-id']).toBe('trace-404');
        const unauthorized = await call(t, 'GET', COPILOTS_PATH, { key: null, headers: { 'x-request-id': 'trace-401' } });
        expectErr(unauthorized, 401, 'unauthorized');
        expect(unauthorized.headers['x-request-id']).toBe('trace-401');
      });

      it('is generated when the client sends none, different for each request', async () => {
        const a = await call(t, 'GET', COPILOTS_PATH);
        const b = await call(t, 'GET', '/healthz', { key: null });
        expect(a.headers['x-request-id']).toMatch(UUID);
        expect(b.headers['x-request-id']).toMatch(UUID);
        expect(a.headers['x-request-id']).not.toBe(b.headers['x-request-id']);
      });

      it('is replaced when the client sends an unsafe one', async () => {
        for (const unsafe of ['has spaces', 'x'.repeat(200), '<script>', 'a\u00e9']) {
          const res = await call(t, 'GET', COPILOTS_PATH, { headers: { 'x-request-id': unsafe } });
          expect(res.headers['x-request-id']).toMatch(UUID);
        }
      });
    });

    it('no error body so far has leaked internals', () => {
      expect(seen.length).toBeGreaterThan(30);
      for (const res of seen) {
        expectNoLeaks(res.body);
        expect(Object.keys(res.json()).every((k) => ['error', 'message', 'details'].includes(k))).toBe(true);
      }
    });
  });

  describe(`unexpected failures (${dialect})`, () => {
    let t: TestApp;
    let broken: FastifyInstance;
    beforeAll(async () => {
      t = await buildTestApp(dialect);
      // A second instance on the same database whose storage is closed under it.
      const storage = openStorage({ databaseUrl: t.config.databaseUrl, dataDir: t.config.dataDir, poolSize: 1 });
      broken = await t.anotherApp({ storage });
      await storage.close();
    });
    afterAll(async () => {
      await broken.close();
      await t.close();
    });

    it('answer 500 internal_error with a fixed message and nothing of the cause', async () => {
      const headers = { authorization: t.admin, 'content-type': 'application/json' };
      const responses = [
        await broken.inject({ method: 'GET', url: COPILOTS_PATH, headers }),
        await broken.inject({ method: 'POST', url: COPILOTS_PATH, headers, payload: JSON.stringify({ name: 'x' }) }),
        await broken.inject({ method: 'GET', url: '/backend/api/keys', headers }),
      ];
      for (const res of responses) {
        const body = expectError(res, 500, 'internal_error');
        expect(body.details).toBeUndefined();
        expect(res.body).not.toMatch(/destroyed|closed|connection|driver|kysely|pool/i);
      }
      // The instance with a working database is unaffected.
      expect((await call(t, 'GET', COPILOTS_PATH)).statusCode).toBe(200);
    });
  });
}

// The leak patterns must themselves catch what they are meant to catch.
describe('leak patterns', () => {
  it.each([
    'Error: boom\n    at Object.<anonymous> (/work/main/src/app.ts:12:3)',
    'at async Promise.all (index 0)\n    at file:///x.js:1:1',
    'select * from copilots where id = $1',
    'insert into "api_keys" ("id") values (?)',
    'relation "copilots" does not exist',
    'SqliteError: no such table: copilots',
    '/work/main/node_modules/fastify/lib/route.js',
    '/home/user/app/dist/server.js',
  ])('flags %j', (text) => {
    expect(LEAKS.some(([, pattern]) => pattern.test(text))).toBe(true);
  });

  it.each([
    'No copilot has this id.',
    'The request body is not valid JSON.',
    'No route GET /backend/api/nothing-here.',
    'This API key lacks the scope copilots:write.',
  ])('passes %j', (text) => {
    expect(LEAKS.some(([, pattern]) => pattern.test(text))).toBe(false);
  });
});
