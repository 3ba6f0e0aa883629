import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStorage } from '../../src/storage/database.js';
import { buildTestApp, type TestApp } from '../support/app.js';
import { DIALECTS } from '../support/databases.js';
import { call, COPILOT_KEYS, expectError } from '../support/http.js';

type Json = Record<string, any>;

/** Follows a local `#/components/...` reference. */
function resolve(doc: Json, schema: Json): Json {
  if (typeof schema.$ref !== 'string') return schema;
  expect(schema.$ref.startsWith('#/')).toBe(true);
  const target = schema.$ref
    .slice(2)
    .split('/')
    .reduce((node: Json | undefined, part: string) => node?.[part.replace(/~1/g, '/').replace(/~0/g, '~')], doc);
  expect(target, `unresolved ${schema.$ref}`).toBeDefined();
  return target as Json;
}

const jsonSchemaOf = (response: Json): Json => response.content['application/json'].schema;

for (const dialect of DIALECTS) {
  describe(`operations endpoints (${dialect})`, () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await buildTestApp(dialect);
    });
    afterAll(async () => t.close());

    it('GET /healthz answers 200 without a key', async () => {
      const res = await call(t, 'GET', '/healthz', { key: null });
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({ status: 'ok' });
    });

    it('GET /readyz answers 200 while the database is reachable', async () => {
      const res = await call(t, 'GET', '/readyz', { key: null });
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({ status: 'ready' });
    });

    describe('GET /metrics', () => {
      it('serves Prometheus text with http_requests_total by route template', async () => {
        await call(t, 'GET', '/healthz', { key: null });
        await call(t, 'GET', `/backend/api/copilot/${'0'.repeat(8)}-0000-4000-8000-${'0'.repeat(12)}`);
        const res = await call(t, 'GET', '/metrics', { key: null });
        expect(res.statusCode).toBe(200);
        expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
        expect(res.body).toContain('# TYPE http_requests_total counter');
        expect(res.body).toMatch(/^http_requests_total\{method="GET",route="\/healthz",status="200"\} \d+$/m);
        // The template, never the concrete id.
        expect(res.body).toMatch(/^http_requests_total\{method="GET",route="\/backend\/api\/copilot\/:id",status="404"\} 1$/m);
        expect(res.body).toContain('# TYPE http_request_duration_seconds histogram');
        expect(res.body).toMatch(/^process_cpu_user_seconds_total /m);
      });

      it("reports the app's own task threads (busy, idle, queued, refused)", async () => {
        await t.taskThreads.run('validate', [{ bytes: Buffer.from('{"openapi":"3.0.3","paths":{}}'), fileName: 'a.json' }, {}]);
        expect(t.taskThreads.stats().threads).toBeGreaterThan(0);
        const body = (await call(t, 'GET', '/metrics', { key: null })).body;
        expect(body).toContain('# TYPE task_threads gauge');
        const { threads, busy, queued, refused } = t.taskThreads.stats();
        expect(body).toMatch(new RegExp(`^task_threads\\{state="busy"\\} ${busy}$`, 'm'));
        expect(body).toMatch(new RegExp(`^task_threads\\{state="idle"\\} ${threads - busy}$`, 'm'));
        expect(body).toMatch(new RegExp(`^task_threads\\{state="queued"\\} ${queued}$`, 'm'));
        expect(body).toMatch(new RegExp(`^task_threads\\{state="refused"\\} ${refused}$`, 'm'));
      });

      it('keeps labels bounded: unknown URLs share one label', async () => {
        await call(t, 'GET', '/no/such/path/abc123');
        await call(t, 'GET', '/another/unknown');
        const body = (await call(t, 'GET', '/metrics', { key: null })).body;
        expect(body).not.toContain('abc123');
        expect(body).not.toContain('/another/unknown');
        expect(body).toMatch(/^http_requests_total\{method="GET",route="[^"]*",status="404"\} [2-9]\d*$/m);
      });

      it('every sample line is well formed', async () => {
        const body = (await call(t, 'GET', '/metrics', { key: null })).body;
        for (const line of body.split('\n').filter((l) => l !== '' && !l.startsWith('#'))) {
          // Values as Go's ParseFloat reads them (prom-client writes NaN as "Nan").
          expect(line).toMatch(/^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[^}]*\})? (-?[0-9.]+(e[+-]?\d+)?|nan|[+-]inf)$/i);
        }
      });
    });

    describe('GET /backend/openapi.json', () => {
      let doc: Json;
      beforeAll(async () => {
        const res = await call(t, 'GET', '/backend/openapi.json', { key: null });
        expect(res.statusCode).toBe(200);
        expect(res.headers['content-type']).toMatch(/^application\/json/);
        doc = res.json();
      });

      it('is an OpenAPI 3.1 document with the bearer scheme', () => {
        expect(doc.openapi).toMatch(/^3\.1\.\d+$/);
        expect(doc.info.title).toBeTruthy();
        expect(doc.info.version).toBeTruthy();
        expect(doc.components.securitySchemes.bearer).toMatchObject({ type: 'http', scheme: 'bearer' });
        expect(doc.security).toEqual([{ bearer: [] }]);
      });

      it('lists the copilot and key routes with their methods', () => {
        expect(Object.keys(doc.paths['/backend/api/copilots'])).toEqual(expect.arrayContaining(['get', 'post']));
        expect(Object.keys(doc.paths['/backend/api/copilot/{id}'])).toEqual(expect.arrayContaining(['get', 'patch', 'delete']));
        expect(Object.keys(doc.paths['/backend/api/keys'])).toEqual(expect.arrayContaining(['get', 'post']));
        expect(Object.keys(doc.paths['/backend/api/keys/{id}'])).toEqual(expect.arrayContaining(['delete']));
        for (const path of ['/healthz', '/readyz', '/metrics', '/backend/openapi.json']) expect(doc.paths[path]?.get, path).toBeDefined();
      });

      it('describes the error responses of every copilot route with the shared error schema', () => {
        const expected: Array<[string, string, string[]]> = [
          ['/backend/api/copilots', 'get', ['400', '401', '403', '500']],
          ['/backend/api/copilots', 'post', ['400', '401', '403', '413', '415', '500']],
          ['/backend/api/copilot/{id}', 'get', ['400', '401', '403', '404', '500']],
          ['/backend/api/copilot/{id}', 'patch', ['400', '401', '403', '404', '413', '415', '500']],
          ['/backend/api/copilot/{id}', 'delete', ['400', '401', '403', '404', '500']],
          ['/backend/api/keys', 'post', ['400', '401', '403', '500']],
          ['/backend/api/keys/{id}', 'delete', ['401', '403', '404', '500']],
        ];
        for (const [path, method, statuses] of expected) {
          const responses = doc.paths[path][method].responses as Json;
          expect(Object.keys(responses), `${method} ${path}`).toEqual(expect.arrayContaining(statuses));
          for (const status of statuses) {
            const schema = resolve(doc, jsonSchemaOf(responses[status]));
            expect(schema.type, `${method} ${path} ${status}`).toBe('object');
            expect(Object.keys(schema.properties)).toEqual(['error', 'message', 'details']);
            expect(schema.required).toEqual(['error', 'message']);
            expect(responses[status].description).toMatch(/^Error: [a-z_]+(, [a-z_]+)*$/);
          }
        }
        expect(doc.paths['/backend/api/copilot/{id}'].get.responses['404'].description).toContain('copilot_not_found');
        expect(doc.paths['/backend/api/copilots'].get.responses['400'].description).toContain('invalid_cursor');
        expect(doc.paths['/backend/api/keys/{id}'].delete.responses['404'].description).toContain('key_not_found');
      });

      it('publishes the copilot schema as a shared component, fields in the interface order', () => {
        const list = jsonSchemaOf(doc.paths['/backend/api/copilots'].get.responses['200']);
        expect(list.type).toBe('array');
        expect(list.items.$ref).toMatch(/^#\/components\/schemas\//);
        const copilot = resolve(doc, list.items);
        expect(copilot.title).toBe('Copilot');
        expect(Object.keys(copilot.properties)).toEqual([...COPILOT_KEYS]);
        expect(copilot.required).toEqual([...COPILOT_KEYS]);
        expect(copilot.properties.enhanced_privacy).toMatchObject({ type: 'integer', minimum: 0, maximum: 1 });
        expect(copilot.properties.created_at.pattern).toBe('^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{6}Z$');
        // The same component everywhere a copilot is answered.
        for (const [path, method, status] of [
          ['/backend/api/copilots', 'post', '201'],
          ['/backend/api/copilot/{id}', 'get', '200'],
          ['/backend/api/copilot/{id}', 'patch', '200'],
          ['/backend/api/copilot/{id}', 'delete', '200'],
        ] as const) {
          expect(jsonSchemaOf(doc.paths[path][method].responses[status]).$ref, `${method} ${path}`).toBe(list.items.$ref);
        }
        const titles = Object.values(doc.components.schemas as Record<string, Json>).map((s) => s.title);
        expect(titles).toEqual(expect.arrayContaining(['Copilot', 'Error', 'ApiKey']));
      });

      it('publishes the request schemas that validate input', () => {
        const create = resolve(doc, doc.paths['/backend/api/copilots'].post.requestBody.content['application/json'].schema);
        expect(create).toMatchObject({ type: 'object', additionalProperties: false, required: ['name'] });
        const patch = resolve(doc, doc.paths['/backend/api/copilot/{id}'].patch.requestBody.content['application/json'].schema);
        expect(patch).toMatchObject({ type: 'object', additionalProperties: false, minProperties: 1 });
        const params = doc.paths['/backend/api/copilots'].get.parameters as Json[];
        expect(params.map((p) => p.name)).toEqual(expect.arrayContaining(['limit', 'cursor', 'status', 'q']));
        expect(params.find((p) => p.name === 'limit')!.schema).toMatchObject({ minimum: 1, maximum: 1000 });
      });

      it('marks the open operations endpoints as needing no key', () => {
        for (const path of ['/healthz', '/readyz', '/metrics', '/backend/openapi.json']) {
          expect(doc.paths[path].get.security, path).toEqual([]);
        }
        // Every other operation names the scope its key needs.
        expect(doc.paths['/backend/api/copilots'].post.security).toEqual([{ bearer: ['copilots:write'] }]);
      });
    });

    it.runIf(dialect === 'postgres')('GET /readyz says so when every connection of the pool is held, rather than that the database is gone', async () => {
      const storage = openStorage({ databaseUrl: t.config.databaseUrl, dataDir: t.config.dataDir, poolSize: 1, connectTimeoutMs: 300 });
      const held = await t.anotherApp({ storage });
      try {
        expect((await held.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
        // The pool's one connection, held by an open transaction (as by a statement waiting on a locked row).
        await storage.db.transaction().execute(async (trx) => {
          await sql`select 1`.execute(trx);
          const body = expectError(await held.inject({ method: 'GET', url: '/readyz' }), 503, 'service_unavailable');
          expect(body.message).toMatch(/^Every database connection of this instance is in use \(1 in use, \d+ waiting\)/);
        });
        expect((await held.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
      } finally {
        await held.close();
        await storage.close();
      }
    });

    it('GET /readyz answers 503 service_unavailable when the database is gone, while /healthz stays 200', async () => {
      // A second instance on the same database whose storage is closed under it.
      const storage = openStorage({ databaseUrl: t.config.databaseUrl, dataDir: t.config.dataDir, poolSize: 1 });
      const broken = await t.anotherApp({ storage });
      try {
        expect((await broken.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
        await storage.close();
        expectError(await broken.inject({ method: 'GET', url: '/readyz' }), 503, 'service_unavailable');
        expect((await broken.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
        // What an operator needs most then: the process's metrics and the pool's; the series read
        // from the database are left out of the scrape, not the scrape itself.
        const metrics = await broken.inject({ method: 'GET', url: '/metrics' });
        expect(metrics.statusCode, metrics.body.slice(0, 200)).toBe(200);
        expect(metrics.body).toContain('process_cpu_seconds_total');
        expect(metrics.body).toContain('database_connections{state="waiting"}');
        expect(metrics.body).not.toMatch(/^kb_links\{/m);
        expect(metrics.body).toMatch(/^kb_passages_to_delete Nan$/m); // prom-client writes NaN so
      } finally {
        await broken.close();
      }
    });
  });
}
