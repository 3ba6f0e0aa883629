/**
 * DESIGN §7–§8 at the edge of authentication: two Authorization headers are a malformed
 * credential (401, before any other 4xx), and every 401 says how to authenticate with
 * `WWW-Authenticate: Bearer` (RFC 9110 §15.5.2, RFC 6750 §3), wherever it is made: the access
 * hook, the key check of unknown paths and unreadable URLs, /metrics with METRICS_TOKEN.
 */
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, keyIdOf, listenOnLoopback, type TestApp } from '../support/app.js';
import { DIALECTS } from '../support/databases.js';
import { call, COPILOTS_PATH, copilotPath, createCopilot, expectError, KEYS_PATH } from '../support/http.js';

const METRICS_TOKEN = 'metrics-token-0123456789';

/** Sends one raw HTTP/1.1 request (Connection: close) and parses the answer: status, headers, JSON body (or `{text}`). */
function rawRequest(port: number, text: string): Promise<{ status: number; headers: Record<string, string>; body: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let response = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      response += chunk;
    });
    socket.on('error', reject);
    socket.on('close', () => {
      const [head, ...rest] = response.split('\r\n\r\n');
      const lines = head!.split('\r\n');
      const headers = Object.fromEntries(lines.slice(1).map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
      const text = rest.join('\r\n\r\n');
      let body: Record<string, unknown>;
      try {
        body = JSON.parse(text) as Record<string, unknown>;
      } catch {
        body = { text }; // not JSON (a 200 from /metrics): the assertions on the error body fail on it
      }
      resolve({ status: Number(lines[0]!.split(' ')[1]), headers, body });
    });
    socket.write(text, 'latin1');
  });
}

for (const dialect of DIALECTS) {
  describe(`the 401 answers: two Authorization headers, WWW-Authenticate (${dialect})`, () => {
    let t: TestApp;
    let port: number;
    let id: string;
    beforeAll(async () => {
      t = await buildTestApp(dialect, { env: { METRICS_TOKEN } });
      id = (await createCopilot(t)).id;
      port = await listenOnLoopback(t);
    });
    afterAll(async () => t?.close());

    /** A request with two Authorization headers (the second in lower case: one name all the same). */
    const twoHeaders = (line: string, first: string, second: string, more: { headers?: string; body?: string } = {}) =>
      rawRequest(
        port,
        `${line}\r\nHost: x\r\nAuthorization: ${first}\r\nauthorization: ${second}\r\n${more.headers ?? ''}Connection: close\r\n\r\n${more.body ?? ''}`,
      );

    it('two Authorization headers answer 401 unauthorized with WWW-Authenticate, valid or not, before every other 4xx', async () => {
      const other = await t.key(['copilots:read']);
      const cases: Array<{ what: string; line: string; keys: [string, string]; headers?: string; body?: string }> = [
        { what: 'two valid keys', line: `GET ${COPILOTS_PATH} HTTP/1.1`, keys: [t.admin, t.admin] },
        { what: 'a valid key and another', line: `GET ${COPILOTS_PATH} HTTP/1.1`, keys: [t.admin, other] },
        { what: 'a valid key and a bad one', line: `GET ${copilotPath(id)} HTTP/1.1`, keys: [t.admin, 'Bearer nope'] },
        { what: 'two bad ones', line: `GET ${COPILOTS_PATH} HTTP/1.1`, keys: ['Bearer nope', 'Basic dXNlcjpwYXNz'] },
        // 400 (malformed JSON), 404 (unknown route) and 405 (wrong method) come after the 401.
        {
          what: 'a body that is not JSON',
          line: `POST ${COPILOTS_PATH} HTTP/1.1`,
          keys: [t.admin, t.admin],
          headers: 'Content-Type: application/json\r\nContent-Length: 3\r\n',
          body: '{"a',
        },
        { what: 'an unknown route', line: 'GET /backend/api/nothing-here HTTP/1.1', keys: [t.admin, t.admin] },
        { what: 'a wrong method', line: `PUT ${COPILOTS_PATH} HTTP/1.1`, keys: [t.admin, t.admin] },
      ];
      for (const { what, line, keys, ...more } of cases) {
        const res = await twoHeaders(line, keys[0], keys[1], more);
        expect(res.status, `${what}: ${JSON.stringify(res.body)}`).toBe(401);
        expect(Object.keys(res.body), what).toEqual(['error', 'message']);
        expect(res.body.error, what).toBe('unauthorized');
        expect(res.body.message, what).toMatch(/one Authorization header/);
        expect(res.headers['www-authenticate'], what).toBe('Bearer');
      }
    });

    it('/metrics with METRICS_TOKEN refuses two Authorization headers as /backend does, even when the first is the token (operator sweep: it read the first)', async () => {
      for (const keys of [
        [`Bearer ${METRICS_TOKEN}`, 'Bearer nope'],
        ['Bearer nope', `Bearer ${METRICS_TOKEN}`],
        [`Bearer ${METRICS_TOKEN}`, `Bearer ${METRICS_TOKEN}`],
      ] as const) {
        const res = await twoHeaders('GET /metrics HTTP/1.1', keys[0], keys[1]);
        expect(res.status, keys.join(' + ')).toBe(401);
        expect(res.body.error).toBe('unauthorized');
        expect(res.body.message).toMatch(/one Authorization header/);
        expect(res.headers['www-authenticate']).toBe('Bearer');
      }
    });

    it('every 401 carries WWW-Authenticate: Bearer; other errors do not', async () => {
      const revoked = await t.key(['admin']);
      expect((await call(t, 'DELETE', `${KEYS_PATH}/${keyIdOf(revoked)}`)).statusCode).toBe(204);
      const unauthorized: Array<[string, Promise<Awaited<ReturnType<typeof call>>>]> = [
        ['no key', call(t, 'GET', COPILOTS_PATH, { key: null })],
        ['a malformed key', call(t, 'GET', copilotPath(id), { key: 'Bearer cms_short' })],
        ['a revoked key', call(t, 'POST', COPILOTS_PATH, { key: revoked, payload: { name: 'x' } })],
        ['Basic credentials', call(t, 'GET', `${KEYS_PATH}/me`, { key: 'Basic dXNlcjpwYXNz' })],
        ['an unknown /backend path', call(t, 'GET', '/backend/api/nothing-here', { key: null })],
        ['an undecodable escape', call(t, 'GET', '/backend/api/copilot/%E0%A4%A', { key: null })],
        ['/metrics without its token', call(t, 'GET', '/metrics', { key: null })],
      ];
      for (const [what, pending] of unauthorized) {
        const res = await pending;
        expectError(res, 401, 'unauthorized');
        expect(res.headers['www-authenticate'], what).toBe('Bearer');
      }
      const reader = await t.key(['copilots:read']);
      for (const res of [
        await call(t, 'POST', COPILOTS_PATH, { key: reader, payload: { name: 'x' } }), // 403
        await call(t, 'GET', copilotPath('4f8a3c1e-9b2d-4e6f-8a1b-2c3d4e5f6a7b')), // 404
      ]) {
        expect(res.statusCode).toBeGreaterThanOrEqual(403);
        expect(res.headers['www-authenticate']).toBeUndefined();
      }
    });
  });
}
