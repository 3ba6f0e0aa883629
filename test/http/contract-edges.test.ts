/**
 * Issue 14 §1–§3: every answer in the contract's shape, the same on both databases — no
 * 5xx from client input (missing bodies, NUL, broken Unicode), the framework's and the HTTP
 * parser's own refusals, wrong methods, unknown routes, doubled credentials, unknown fields.
 */
import net from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { openStorage } from '../../src/storage/database.js';
import { buildTestApp, listenOnLoopback, type TestApp } from '../support/app.js';
import { createTestDatabase, DIALECTS } from '../support/databases.js';
import { multipart } from '../support/documents.js';
import { call, COPILOTS_PATH, copilotPath, createCopilot, expectError, KEYS_PATH } from '../support/http.js';

const kb = (id: string) => `/backend/knowledgebase/b/${id}`;

/** Sends raw bytes on one connection and collects everything until the server closes it (or `settleMs` of silence). */
function raw(port: number, text: string, settleMs = 1500): Promise<{ response: string; closed: boolean }> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    let response = '';
    let timer: NodeJS.Timeout | undefined;
    const done = (closed: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      resolve({ response, closed });
    };
    const arm = () => {
      clearTimeout(timer);
      timer = setTimeout(() => done(false), settleMs);
    };
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      response += chunk;
      arm();
    });
    socket.on('close', () => done(true));
    socket.on('error', () => undefined);
    socket.write(text, 'latin1');
    arm();
  });
}

function parseRaw(response: string): { status: number; headers: Record<string, string>; body: Record<string, unknown> } {
  const [head, ...rest] = response.split('\r\n\r\n');
  const lines = head!.split('\r\n');
  const status = Number(lines[0]!.split(' ')[1]);
  const headers = Object.fromEntries(lines.slice(1).map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
  return { status, headers, body: JSON.parse(rest.join('\r\n\r\n')) as Record<string, unknown> };
}

function expectContractBody(body: Record<string, unknown>, code: string): void {
  expect(Object.keys(body).slice(0, 2)).toEqual(['error', 'message']);
  expect(body.error).toBe(code);
  expect(typeof body.message).toBe('string');
}

for (const dialect of DIALECTS) {
  describe(`contract edges (${dialect})`, () => {
    let t: TestApp;
    let id: string;
    let port: number;
    beforeAll(async () => {
      t = await buildTestApp(dialect);
      id = (await createCopilot(t, { name: 'Edges' })).id;
      port = await listenOnLoopback(t);
    });
    afterAll(async () => t.close());

    describe('§1 no 5xx from client input', () => {
      it('PUT …/swagger with no body and no Content-Type answers 400 invalid_swagger_file', async () => {
        for (const headers of [{}, { 'content-length': '0' }]) {
          const res = await t.app.inject({ method: 'PUT', url: `${copilotPath(id)}/swagger`, headers: { authorization: t.admin, ...headers } });
          const body = expectError(res, 400, 'invalid_swagger_file');
          expect(body.message).toMatch(/empty/i);
        }
      });

      it('every answer says its type is not to be sniffed: JSON, errors (401, 404, 405) and the service’s OpenAPI document', async () => {
        const answers = [
          await call(t, 'GET', copilotPath(id)),
          await call(t, 'GET', copilotPath(id), { key: null }),
          await call(t, 'GET', '/backend/api/nowhere'),
          await call(t, 'PUT', COPILOTS_PATH),
          await call(t, 'GET', '/backend/openapi.json'),
        ];
        for (const res of answers) expect(res.headers['x-content-type-options'], `${res.statusCode} ${res.body.slice(0, 60)}`).toBe('nosniff');
      });

      it('no /backend answer is kept by a browser or a proxy (Cache-Control: no-store): a copilot holds its token, a new key its secret; the dashboard keeps its own rules (a11y sweep)', async () => {
        const answers = [
          await call(t, 'GET', copilotPath(id)),
          await call(t, 'POST', KEYS_PATH, { payload: { scopes: ['copilots:read'] } }),
          await call(t, 'GET', copilotPath(id), { key: null }),
          await call(t, 'GET', '/backend/api/nowhere'),
          await call(t, 'GET', `${copilotPath(id)}/swagger`),
        ];
        for (const res of answers) expect(res.headers['cache-control'], `${res.statusCode} ${res.body.slice(0, 60)}`).toBe('no-store');
        expect((await t.app.inject({ method: 'GET', url: '/' })).headers['cache-control']).toBe('no-cache');
      });

      it("refuses control and invisible formatting characters in the names shown to others (a copilot's, a key's)", async () => {
        const cases: Array<[string, () => Promise<import('fastify').LightMyRequestResponse>, string]> = [
          ['create name, a bidi override', () => call(t, 'POST', COPILOTS_PATH, { payload: { name: 'KB \u202eevil' } }), 'U+202E'],
          ['patch name, a bell', () => call(t, 'PATCH', copilotPath(id), { payload: { name: 'a\u0007b' } }), 'U+0007'],
          ['key name, an isolate', () => call(t, 'POST', '/backend/api/keys', { payload: { scopes: ['copilots:read'], name: 'k\u2066ey' } }), 'U+2066'],
        ];
        for (const [label, send, character] of cases) {
          const body = expectError(await send(), 400, 'invalid_request');
          expect(body.message, label).toBe(`The field name must not contain control or invisible formatting characters (${character}).`);
          expect(body.details, label).toEqual({ field: 'name' });
        }
        const { payload, contentType } = multipart([
          {
            name: 'swagger_file',
            filename: 'a.json',
            type: 'application/json',
            content: Buffer.from('{"openapi":"3.0.0","info":{"title":"t","version":"1"},"paths":{}}'),
          },
          { name: 'name', value: 'x\u200by' },
        ]);
        const res = await call(t, 'POST', '/backend/api/copilot/swagger', { payload, headers: { 'content-type': contentType } });
        expect(expectError(res, 400, 'invalid_request').details).toEqual({ field: 'name' });
        expect((await call(t, 'GET', copilotPath(id))).json().name).toBe('Edges');
        // Words and emoji that need a joiner stay allowed.
        expect((await call(t, 'PATCH', copilotPath(id), { payload: { name: 'Edges \u{1F468}\u200d\u{1F469}' } })).statusCode).toBe(200);
        expect((await call(t, 'PATCH', copilotPath(id), { payload: { name: 'Edges' } })).statusCode).toBe(200);
      });

      it('refuses NUL in every string and parameter with 400 naming the field, identically on both databases', async () => {
        const nul = 'a\u0000b';
        const cases: Array<[string, () => Promise<import('fastify').LightMyRequestResponse>, string]> = [
          ['create name', () => call(t, 'POST', COPILOTS_PATH, { payload: { name: nul } }), 'name'],
          ['create prompt_message', () => call(t, 'POST', COPILOTS_PATH, { payload: { name: 'x', prompt_message: nul } }), 'prompt_message'],
          ['patch name', () => call(t, 'PATCH', copilotPath(id), { payload: { name: nul } }), 'name'],
          ['key name', () => call(t, 'POST', '/backend/api/keys', { payload: { scopes: ['copilots:read'], name: nul } }), 'name'],
          ['key bots', () => call(t, 'POST', '/backend/api/keys', { payload: { scopes: ['copilots:read'], bots: [nul] } }), 'bots'],
          ['list q', () => call(t, 'GET', `${COPILOTS_PATH}?q=a%00b`), 'q'],
          ['list cursor', () => call(t, 'GET', `${COPILOTS_PATH}?cursor=a%00b`), 'cursor'],
          ['links cursor', () => call(t, 'GET', `${kb(id)}?cursor=a%00b`), 'cursor'],
          ['audit bot_id', () => call(t, 'GET', '/backend/api/audit?bot_id=a%00b'), 'bot_id'],
          ['key id', () => call(t, 'DELETE', '/backend/api/keys/a%00b'), 'id'],
          ['search q', () => call(t, 'GET', `${kb(id)}/search?q=a%00b`), 'q'],
        ];
        for (const [label, send, field] of cases) {
          const body = expectError(await send(), 400, 'invalid_request');
          expect(JSON.stringify(body.details), label).toContain(field);
        }
        const { payload, contentType } = multipart([
          {
            name: 'swagger_file',
            filename: 'a.json',
            type: 'application/json',
            content: Buffer.from('{"openapi":"3.0.0","info":{"title":"t","version":"1"},"paths":{}}'),
          },
          { name: 'name', value: nul },
        ]);
        const res = await call(t, 'POST', '/backend/api/copilot/swagger', { payload, headers: { 'content-type': contentType } });
        expect(JSON.stringify(expectError(res, 400, 'invalid_request').details)).toContain('name');
      });

      it('refuses text that is not well-formed Unicode (lone surrogates) with 400', async () => {
        for (const text of ['{"name":"x\\ud800y"}', '{"name":"x\\udfffy"}', '{"name":"ok","prompt_message":"\\ud83d"}']) {
          expectError(await call(t, 'POST', COPILOTS_PATH, { payload: text, headers: { 'content-type': 'application/json' } }), 400, 'invalid_request');
        }
        // A well-formed pair is fine and stored as sent.
        const res = await call(t, 'POST', COPILOTS_PATH, { payload: '{"name":"x\\ud83d\\ude00y"}', headers: { 'content-type': 'application/json' } });
        expect(res.statusCode).toBe(201);
        expect((await call(t, 'GET', copilotPath(res.json().id))).json().name).toBe('x\u{1F600}y');
      });
    });

    describe("§2 the framework's and the parser's refusals in the contract's shape", () => {
      it('a bad URL escape answers 400 in the contract shape (401 first without a key)', async () => {
        expectError(await call(t, 'GET', '/backend/api/copilot/%zz'), 400, 'invalid_request');
        expectError(await call(t, 'GET', '/backend/api/copilot/%zz', { key: null }), 401, 'unauthorized');
        expectError(await call(t, 'DELETE', '/backend/api/keys/%', { key: null }), 401, 'unauthorized');
      });

      it('a path parameter over the router limit answers 414 in the contract shape (401 first without a key)', async () => {
        const long = 'a'.repeat(5000);
        expectError(await call(t, 'GET', copilotPath(long)), 414, 'uri_too_long');
        expectError(await call(t, 'GET', copilotPath(long), { key: null }), 401, 'unauthorized');
      });

      it('headers too large: 431 in the contract shape with Connection: close', async () => {
        const { response, closed } = await raw(port, `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
        const parsed = parseRaw(response);
        expect(parsed.status).toBe(431);
        expect(parsed.headers.connection).toBe('close');
        expectContractBody(parsed.body, 'headers_too_large');
        expect(closed).toBe(true);
      });

      it.each([
        ['a bad request line', 'GARBAGE\r\n\r\n'],
        ['a control character in a header', 'GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: a\u0001b\r\n\r\n'],
        ['a bad Content-Length', 'POST /backend/api/copilots HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n'],
        [
          'Content-Length with Transfer-Encoding',
          'POST /backend/api/copilots HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
        ],
      ])('%s: 400 in the contract shape with Connection: close', async (_label, request) => {
        const { response, closed } = await raw(port, request);
        const parsed = parseRaw(response);
        expect(parsed.status).toBe(400);
        expect(parsed.headers.connection).toBe('close');
        expectContractBody(parsed.body, 'invalid_request');
        expect(closed).toBe(true);
      });

      it('an Expect header other than 100-continue is ignored: the request is answered as without it', async () => {
        // Node answered 417 with no body (RFC 9110 lets a server ignore an expectation it does not know).
        const { response } = await raw(port, `GET /backend/api/copilot/${id} HTTP/1.1\r\nHost: x\r\nExpect: x\r\nConnection: close\r\n\r\n`);
        const parsed = parseRaw(response);
        expect(parsed.status).toBe(401);
        expectContractBody(parsed.body, 'unauthorized');
        const known = await raw(port, `GET /healthz HTTP/1.1\r\nHost: x\r\nExpect: something-else\r\nConnection: close\r\n\r\n`);
        expect(parseRaw(known.response).status).toBe(200);
      });

      it('CONNECT is answered as any method the route does not take: 405 with Allow, or 404, in the contract shape', async () => {
        // Node closed the connection without an answer.
        const known = parseRaw((await raw(port, `CONNECT /backend/api/copilots HTTP/1.1\r\nHost: x\r\nAuthorization: ${t.admin}\r\n\r\n`)).response);
        expect(known.status).toBe(405);
        expect(String(known.headers.allow).split(/,\s*/).sort()).toEqual(['GET', 'HEAD', 'POST']);
        expectContractBody(known.body, 'method_not_allowed');
        // Without a key, 401 first, as for every method on /backend.
        expect(parseRaw((await raw(port, 'CONNECT /backend/api/copilots HTTP/1.1\r\nHost: x\r\n\r\n')).response).status).toBe(401);
        const unknown = parseRaw((await raw(port, 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n')).response);
        expect(unknown.status).toBe(404);
        expectContractBody(unknown.body, 'not_found');
      });
    });

    it("/backend/openapi.json lists the parser's, router's and database's refusals on every route that can produce them", async () => {
      const doc = (await call(t, 'GET', '/backend/openapi.json')).json() as { paths: Record<string, Record<string, { responses: Record<string, unknown> }>> };
      let operations = 0;
      for (const [path, item] of Object.entries(doc.paths)) {
        if (!path.startsWith('/backend/api') && !path.startsWith('/backend/knowledgebase')) continue;
        for (const [method, operation] of Object.entries(item)) {
          operations++;
          for (const status of ['408', '431', '503']) expect(operation.responses[status], `${method} ${path} ${status}`).toBeDefined();
          if (path.includes('{')) expect(operation.responses['414'], `${method} ${path} 414`).toBeDefined();
        }
      }
      expect(operations).toBeGreaterThan(10);
    });

    describe('§3 methods, routes and headers', () => {
      it('a wrong method on an existing path answers 405 with Allow', async () => {
        const res = await call(t, 'PUT', COPILOTS_PATH, { payload: { name: 'x' } });
        expectError(res, 405, 'method_not_allowed');
        expect(String(res.headers.allow).split(/,\s*/).sort()).toEqual(['GET', 'HEAD', 'POST']);
        const onOne = await call(t, 'POST', copilotPath(id));
        expectError(onOne, 405, 'method_not_allowed');
        expect(String(onOne.headers.allow)).toContain('PATCH');
        expectError(await call(t, 'PUT', COPILOTS_PATH, { key: null }), 401, 'unauthorized');
      });

      it('an unknown route answers 404 whatever its body', async () => {
        const res = await call(t, 'POST', '/backend/api/nothing-here', { payload: '{"broken":', headers: { 'content-type': 'application/json' } });
        expectError(res, 404, 'not_found');
      });

      it('a path with a trailing slash is another path: 404, not a 405 that allows the method asked for', async () => {
        // Was 405 "GET is not allowed here; use GET, HEAD, POST." with that Allow header.
        for (const path of [`${COPILOTS_PATH}/`, `${copilotPath(id)}/`]) {
          const res = await call(t, 'GET', path);
          expectError(res, 404, 'not_found');
          expect(res.headers.allow, path).toBeUndefined();
        }
      });

      it('two Authorization headers answer 401 (a malformed credential), with WWW-Authenticate', async () => {
        const { response } = await raw(
          port,
          `GET ${COPILOTS_PATH} HTTP/1.1\r\nHost: x\r\nAuthorization: ${t.admin}\r\nAuthorization: Bearer other\r\nConnection: close\r\n\r\n`,
        );
        const parsed = parseRaw(response);
        expect(parsed.status).toBe(401);
        expect(parsed.headers['www-authenticate']).toBe('Bearer');
        expectContractBody(parsed.body, 'unauthorized');
      });

      it('knowledge-base bodies refuse unknown fields', async () => {
        for (const method of ['POST', 'DELETE'] as const) {
          const res = await call(t, method, kb(id), { payload: { links: ['https://a.example/'], pad: 'x'.repeat(100) } });
          expectError(res, 400, 'invalid_request');
        }
      });
    });
  });

  describe(`database unreachable (${dialect})`, () => {
    it('answers 503 service_unavailable with Retry-After, in the contract shape', async () => {
      const t = await buildTestApp(dialect);
      const admin = t.admin;
      try {
        const config = loadConfig({
          DATA_DIR: t.config.dataDir,
          LOG_LEVEL: 'silent',
          ...(dialect === 'postgres' && { DATABASE_URL: 'postgres://postgres@127.0.0.1:1/nowhere' }),
        });
        if (dialect === 'postgres') {
          const storage = openStorage({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolSize: 1 });
          const app = await t.anotherApp({ config, storage });
          try {
            const res = await app.inject({ method: 'GET', url: COPILOTS_PATH, headers: { authorization: admin } });
            expectError(res, 503, 'service_unavailable');
            expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
          } finally {
            await app.close();
            await storage.close();
          }
          // A database that takes no connections (55000), one gone (3D000), a role gone (28000):
          // a request meets a database it cannot use right now, as when it is out of reach.
          const closed = await createTestDatabase('postgres');
          const superuser = new pg.Client({ connectionString: closed.databaseUrl!.replace(/\/[^/]*$/, '/postgres') });
          await superuser.connect();
          try {
            const name = new URL(closed.databaseUrl!).pathname.slice(1);
            await superuser.query(`alter database "${name}" allow_connections false`);
            const elsewhere = (path: string, user = 'postgres') => `postgres://${user}@127.0.0.1:5432/${path}`;
            for (const url of [closed.databaseUrl!, elsewhere('cms_no_such_database'), elsewhere(name, 'cms_no_such_role')]) {
              const storage = openStorage({ databaseUrl: url, dataDir: config.dataDir, poolSize: 1 });
              const app = await t.anotherApp({ config: { ...config, databaseUrl: url }, storage });
              try {
                const res = await app.inject({ method: 'GET', url: COPILOTS_PATH, headers: { authorization: admin } });
                expectError(res, 503, 'service_unavailable');
                expect(Number(res.headers['retry-after']), url).toBeGreaterThan(0);
              } finally {
                await app.close();
                await storage.close();
              }
            }
            await superuser.query(`alter database "${name}" allow_connections true`);
          } finally {
            await superuser.end();
            await closed.drop();
          }
          // A copilot's row locked by another session (psql left in a transaction) past the lock
          // timeout: busy, 503, where the PATCH waited without bound and held a connection.
          const copilot = await createCopilot(t);
          const locking = openStorage({ databaseUrl: t.config.databaseUrl, dataDir: config.dataDir, poolSize: 2, lockTimeoutMs: 300 });
          const lockingApp = await t.anotherApp({ config: t.config, storage: locking });
          const holder = new pg.Client({ connectionString: t.config.databaseUrl! });
          await holder.connect();
          try {
            await holder.query('begin');
            await holder.query('select id from copilots where id = $1 for update', [copilot.id]);
            const res = await lockingApp.inject({
              method: 'PATCH',
              url: copilotPath(copilot.id),
              headers: { authorization: admin, 'content-type': 'application/json' },
              payload: JSON.stringify({ name: 'locked' }),
            });
            expectError(res, 503, 'service_unavailable');
            await holder.query('rollback');
            const after = await lockingApp.inject({
              method: 'PATCH',
              url: copilotPath(copilot.id),
              headers: { authorization: admin, 'content-type': 'application/json' },
              payload: JSON.stringify({ name: 'unlocked' }),
            });
            expect(after.statusCode, after.body).toBe(200);
          } finally {
            await holder.end();
            await lockingApp.close();
            await locking.close();
          }
          // A deadlock with another session (soak sweep: a DELETE against a crawl's page being
          // stored): PostgreSQL ends one transaction. A request's that loses runs again once the
          // other has gone on (inTransaction), rather than answering 500 (before) or 503. Here the
          // other session holds the crawl's row the DELETE cancels last, then asks for the pending
          // link's row the DELETE has cancelled first.
          const victim = await createCopilot(t);
          const linkId = crypto.randomUUID();
          const db = t.storage.db as any;
          await db.insertInto('knowledge_bases').values({ bot_id: victim.id, created_at: 'x', updated_at: 'x' }).execute();
          await db
            .insertInto('kb_links')
            .values({
              id: linkId,
              bot_id: victim.id,
              url: 'https://docs.example/a',
              status: 'pending',
              error: null,
              passages: 0,
              attempts: 0,
              generation: 0,
              run_after: 'x',
              created_at: 'x',
              updated_at: 'x',
            })
            .execute();
          const crawlId = crypto.randomUUID();
          await db
            .insertInto('crawls')
            .values({
              id: crawlId,
              bot_id: victim.id,
              mode: 'links',
              start_url: 'https://docs.example/',
              origin: 'https://docs.example',
              path_prefix: '/',
              max_pages: 1,
              max_depth: 0,
              include_patterns: '[]',
              exclude_patterns: '[]',
              state: 'running',
              next_fetch_at: 'x',
              run_after: 'x',
              created_at: 'x',
              updated_at: 'x',
            })
            .execute();
          const other = new pg.Client({ connectionString: t.config.databaseUrl! });
          await other.connect();
          try {
            await other.query('begin');
            await other.query('select id from crawls where id = $1 for update', [crawlId]);
            const deleting = call(t, 'DELETE', copilotPath(victim.id));
            // The DELETE waits for the crawl's row first, so its deadlock check runs first.
            await new Promise((resolve) => setTimeout(resolve, 500));
            const crossing = other.query('update kb_links set attempts = attempts where id = $1', [linkId]).catch((err: { code?: string }) => err.code);
            // The DELETE's transaction was the one ended: the other session's update goes through.
            expect(await crossing).toMatchObject({ rowCount: 1 });
            // Run again, the DELETE waits for the other session, then deletes.
            await other.query('rollback');
            const res = await deleting;
            expect(res.statusCode, res.body).toBe(200);
          } finally {
            await other.end();
          }
          expectError(await call(t, 'GET', copilotPath(victim.id)), 404, 'copilot_not_found');
        } else {
          // The writer's lock held by another connection beyond the busy timeout.
          const blocker = openStorage({ databaseUrl: null, dataDir: t.config.dataDir });
          const connection = await blocker.db.connection().execute(async (c) => {
            await (await import('kysely')).sql`begin exclusive`.execute(c);
            try {
              const res = await call(t, 'POST', COPILOTS_PATH, { payload: { name: 'locked out' } });
              expectError(res, 503, 'service_unavailable');
              expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
            } finally {
              await (await import('kysely')).sql`rollback`.execute(c);
            }
            return true;
          });
          expect(connection).toBe(true);
          await blocker.close();
          expect((await call(t, 'POST', COPILOTS_PATH, { payload: { name: 'back' } })).statusCode).toBe(201);
        }
      } finally {
        await t.close();
      }
    });
  });
}
