/**
 * GET /backend/api/copilot/:id/validator over HTTP (issue 3, DESIGN §5): every real
 * document of test/fixtures/specs, stored or fetched from a URL under the guarded-fetch
 * rules, the errors, the address policy, anonymous reads and the content-keyed cache.
 */
import { createHash } from 'node:crypto';
import { ServerResponse } from 'node:http';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { renderFresh, type Validations } from '../../src/domain/validator/index.js';
import { jsonPathParameterBomb, yamlAliasBomb } from '../domain/validator/answer-bombs.js';
import { buildTestApp, type TestApp } from '../support/app.js';
import { DIALECTS } from '../support/databases.js';
import { expectValidation, flagCount, hostile, putRaw, setSwaggerUrl, SPEC_COUNTS, spec, timed, uploadSpec } from '../support/documents.js';
import { call, copilotPath, createCopilot, expectError, swaggerPath, validatorPath } from '../support/http.js';
import { PageServer } from '../support/pages.js';

const UNKNOWN_ID = '4f8a3c1e-9b2d-4e6f-8a1b-2c3d4e5f6a7b';
const MiB = 1024 * 1024;
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');
const SPEC_FILES = Object.keys(SPEC_COUNTS);

/** Serves every fixture of test/fixtures/specs, and the odd pages the tests need. */
function servePages(pages: PageServer): void {
  for (const file of SPEC_FILES) {
    pages.set(`/specs/${file}`, { type: file.endsWith('.json') ? 'application/json' : 'application/yaml', body: spec(file) });
  }
  // A YAML document under a path without extension: the media type decides.
  pages.set('/openapi', { type: 'application/yaml', body: spec('petstore3.yaml') });
  pages.set('/openapi-yml', { type: 'application/x-yaml; charset=utf-8', body: spec('openfaas-gateway.swagger2.yaml') });
  pages.set('/gone', { status: 404, type: 'text/plain', body: 'Not here' });
  pages.set('/broken', { status: 500, type: 'text/plain', body: 'Internal Server Error at /srv/app/index.js:12' });
  pages.set('/not-openapi.json', { type: 'application/json', body: '{"hello":"world","paths":{}}' });
  pages.set('/page.html', { type: 'text/html; charset=utf-8', body: '<!doctype html><html><body><h1>Docs</h1></body></html>' });
  pages.set('/bomb.yaml', { type: 'application/yaml', body: hostile('billion-laughs.yaml') });
  pages.set('/deep.json', { type: 'application/json', body: '['.repeat(200_000) });
  pages.set('/alias-bomb.yaml', { type: 'application/yaml', body: yamlAliasBomb() });
  // /r/0 → /r/1 → … → /r/6, which serves the document: /r/0 takes 6 redirects, /r/1 five.
  for (let i = 0; i < 6; i++) {
    pages.set(`/r/${i}`, (_req, res) => {
      res.writeHead(302, { location: `/r/${i + 1}` }).end();
    });
  }
  pages.set('/r/6', { type: 'application/json', body: spec('trello.json') });
  pages.set('/to-metadata', (_req, res) => {
    res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' }).end();
  });
  pages.set('/to-ftp', (_req, res) => {
    res.writeHead(302, { location: 'ftp://example.com/openapi.json' }).end();
  });
}

for (const dialect of DIALECTS) {
  describe(`validator (${dialect})`, () => {
    let t: TestApp;
    let pages: PageServer;
    beforeAll(async () => {
      pages = await PageServer.start();
      servePages(pages);
      t = await buildTestApp(dialect);
    });
    afterAll(async () => {
      await t?.close();
      await pages?.close();
    });
    beforeEach(() => t.validationCache.clear());

    describe('stored documents: every real spec', () => {
      it.each(SPEC_FILES)('%s: the README counts, flag maps pointing at identical endpoints', async (file) => {
        const expected = SPEC_COUNTS[file]!;
        const c = await createCopilot(t, { name: file });
        await uploadSpec(t, c.id, file);
        const res = await call(t, 'GET', validatorPath(c.id));
        const body = expectValidation(res, c.id);
        expect(body.chatbot_id).toBe(c.id);
        expect(body.all_endpoints).toHaveLength(expected.ops);
        const v = body.validations;
        expect(flagCount(v.endpoints_without_operation_id), 'no operationId').toBe(expected.noOperationId);
        expect(flagCount(v.endpoints_without_description), 'no description').toBe(expected.noDescription);
        expect(flagCount(v.endpoints_without_name), 'no summary').toBe(expected.noSummary);
        expect(v.auth_type).toBe(expected.authType);
        for (const endpoint of body.all_endpoints) {
          expect(Object.keys(endpoint)).toEqual(['operationId', 'type', 'name', 'description', 'requestBody', 'requestParameters', 'responseBody', 'path']);
        }
        // Issue 18: the readiness and the rule findings, the validator's own, in the documented order.
        expect(Object.keys(v)).toEqual([
          'endpoints_without_operation_id',
          'endpoints_without_description',
          'endpoints_without_name',
          'auth_type',
          'base_url',
          'readiness',
          'findings',
        ]);
        const fresh = JSON.parse(renderFresh({ bytes: spec(file), fileName: file }).toString());
        const rv = v as unknown as Validations;
        expect(rv.readiness).toEqual(fresh.validations.readiness);
        expect(rv.findings).toEqual(fresh.validations.findings);
        expect(Object.keys(rv.readiness.platforms)).toEqual(['openai', 'gpt_actions', 'anthropic', 'gemini', 'mcp', 'copilot_studio']);
        for (const f of rv.findings) expect(Object.keys(f)).toEqual(['rule', 'severity', 'endpoint', 'pointer', 'message', 'platforms', 'fix']);
      });

      it('readiness and findings of a document with known problems', async () => {
        const c = await createCopilot(t);
        await uploadSpec(t, c.id, 'uber.swagger2.json');
        const validations = expectValidation(await call(t, 'GET', validatorPath(c.id)), c.id).validations as unknown as Validations;
        expect(validations.findings.filter((f) => f.rule === 'operation-id-missing')).toHaveLength(5);
        expect(validations.readiness.platforms.gpt_actions).toMatchObject({ ready: false });
        expect(validations.readiness.platforms.openai).toEqual({ ready: true, blocking: 0, warnings: 0 });
        expect(validations.readiness.score).toBeLessThan(100);
        expect(validations.readiness.worst_endpoints.length).toBeGreaterThan(0);
      });

      it('an upload then a validation of the same copilot by a read-only key and a key limited to it', async () => {
        const c = await createCopilot(t);
        await uploadSpec(t, c.id, 'trello.json');
        for (const key of [await t.key(['copilots:read']), await t.key(['copilots:read'], [c.id])]) {
          expectValidation(await call(t, 'GET', validatorPath(c.id), { key }), c.id);
        }
      });

      it('the answer follows a replaced document', async () => {
        const c = await createCopilot(t);
        await uploadSpec(t, c.id, 'trello.json');
        expect(expectValidation(await call(t, 'GET', validatorPath(c.id)), c.id).all_endpoints).toHaveLength(12);
        await uploadSpec(t, c.id, 'telegram_reduced.json');
        expect(expectValidation(await call(t, 'GET', validatorPath(c.id)), c.id).all_endpoints).toHaveLength(4);
      });
    });

    describe('errors', () => {
      it('copilot without a document → 422 swagger_missing', async () => {
        const c = await createCopilot(t);
        expectError(await call(t, 'GET', validatorPath(c.id)), 422, 'swagger_missing');
      });

      it('a swagger_url naming a stored file that does not exist → 422 swagger_missing', async () => {
        const c = await createCopilot(t);
        await setSwaggerUrl(t, c.id, 'AAAAAAAAAAAAAAAAAAAA.json');
        expectError(await call(t, 'GET', validatorPath(c.id)), 422, 'swagger_missing');
      });

      it('unknown, malformed or deleted id → 404 copilot_not_found', async () => {
        const deleted = await createCopilot(t);
        await uploadSpec(t, deleted.id, 'trello.json');
        expectValidation(await call(t, 'GET', validatorPath(deleted.id)), deleted.id); // cached now
        expect((await call(t, 'DELETE', copilotPath(deleted.id))).statusCode).toBe(200);
        for (const id of [UNKNOWN_ID, 'not-a-uuid', '0', "1' or '1'='1", deleted.id]) {
          expectError(await call(t, 'GET', validatorPath(encodeURIComponent(id))), 404, 'copilot_not_found');
        }
      });

      it('401 without or with a bad key, 403 for another bot’s key or a knowledge-base key (before 404/422)', async () => {
        const c = await createCopilot(t);
        const other = await createCopilot(t);
        expectError(await call(t, 'GET', validatorPath(c.id), { key: null }), 401, 'unauthorized');
        expectError(await call(t, 'GET', validatorPath(UNKNOWN_ID), { key: null }), 401, 'unauthorized');
        expectError(await call(t, 'GET', validatorPath(c.id), { key: 'Bearer cms_nope' }), 401, 'unauthorized');
        expectError(await call(t, 'GET', validatorPath(c.id), { key: await t.key(['copilots:read'], [other.id]) }), 403, 'forbidden');
        expectError(await call(t, 'GET', validatorPath(c.id), { key: await t.key(['knowledgebase:read']) }), 403, 'forbidden');
      });
    });

    describe('swagger_url as a URL (127.0.0.0/8 allowed, as in the tests’ default)', () => {
      it('a JSON document served by a web server → 200, the same answer as stored', async () => {
        const c = await createCopilot(t);
        await setSwaggerUrl(t, c.id, pages.url('/specs/petstore3.json'));
        const body = expectValidation(await call(t, 'GET', validatorPath(c.id)), c.id);
        expect(body.all_endpoints).toHaveLength(19);
        expect(body.validations.auth_type).toBe('oauth2');

        const stored = await createCopilot(t);
        await uploadSpec(t, stored.id, 'petstore3.json');
        const storedRes = await call(t, 'GET', validatorPath(stored.id));
        expect(storedRes.body.replace(stored.id, c.id)).toBe(JSON.stringify(body));
      });

      it.each(SPEC_FILES)('%s fetched from a URL: the README counts', async (file) => {
        const expected = SPEC_COUNTS[file]!;
        const c = await createCopilot(t);
        await setSwaggerUrl(t, c.id, pages.url(`/specs/${file}`));
        const body = expectValidation(await call(t, 'GET', validatorPath(c.id)), c.id);
        expect(body.all_endpoints).toHaveLength(expected.ops);
        expect(flagCount(body.validations.endpoints_without_operation_id)).toBe(expected.noOperationId);
        expect(flagCount(body.validations.endpoints_without_description)).toBe(expected.noDescription);
        expect(flagCount(body.validations.endpoints_without_name)).toBe(expected.noSummary);
        expect(body.validations.auth_type).toBe(expected.authType);
      });

      it('YAML served as application/yaml (or application/x-yaml) under a path without extension → 200', async () => {
        const c = await createCopilot(t);
        await setSwaggerUrl(t, c.id, pages.url('/openapi'));
        expect(expectValidation(await call(t, 'GET', validatorPath(c.id)), c.id).all_endpoints).toHaveLength(19);
        await setSwaggerUrl(t, c.id, pages.url('/openapi-yml'));
        expect(expectValidation(await call(t, 'GET', validatorPath(c.id)), c.id).all_endpoints).toHaveLength(16);
      });

      it('the document is fetched again on every validation (no stale answer for a URL)', async () => {
        const c = await createCopilot(t);
        pages.set('/changing', { type: 'application/json', body: spec('trello.json') });
        await setSwaggerUrl(t, c.id, pages.url('/changing'));
        expect(expectValidation(await call(t, 'GET', validatorPath(c.id)), c.id).all_endpoints).toHaveLength(12);
        pages.set('/changing', { type: 'application/json', body: spec('telegram_reduced.json') });
        expect(expectValidation(await call(t, 'GET', validatorPath(c.id)), c.id).all_endpoints).toHaveLength(4);
        expect(pages.count('/changing')).toBe(2);
      });

      it.each([
        ['/gone', 404],
        ['/broken', 500],
      ])('the server answering %s with HTTP %i → 502 swagger_fetch_failed', async (path, status) => {
        const c = await createCopilot(t);
        await setSwaggerUrl(t, c.id, pages.url(path));
        const body = expectError(await call(t, 'GET', validatorPath(c.id)), 502, 'swagger_fetch_failed');
        expect(body.details).toMatchObject({ reason: 'http_status', status });
        expect(JSON.stringify(body)).not.toContain('Internal Server Error'); // the remote body is not echoed
      });

      it('nothing listening on the port → 502 swagger_fetch_failed', async () => {
        const closed = await PageServer.start();
        const url = closed.url('/x');
        await closed.close();
        const c = await createCopilot(t);
        await setSwaggerUrl(t, c.id, url);
        const body = expectError(await call(t, 'GET', validatorPath(c.id)), 502, 'swagger_fetch_failed');
        expect(body.details).toMatchObject({ reason: 'network' });
      });

      it.each(['/not-openapi.json', '/page.html', '/bomb.yaml', '/deep.json'])(
        'a URL serving %s (not an OpenAPI document) → 400 invalid_swagger_file',
        async (path) => {
          const c = await createCopilot(t);
          await setSwaggerUrl(t, c.id, pages.url(path));
          expectError(await call(t, 'GET', validatorPath(c.id)), 400, 'invalid_swagger_file');
          expect((await call(t, 'GET', '/healthz', { key: null })).statusCode).toBe(200);
        },
      );

      it('5 redirects are followed → 200; 6 → 502 swagger_fetch_failed', async () => {
        const c = await createCopilot(t);
        await setSwaggerUrl(t, c.id, pages.url('/r/1'));
        expect(expectValidation(await call(t, 'GET', validatorPath(c.id)), c.id).all_endpoints).toHaveLength(12);
        const before = pages.count('/r/6');
        await setSwaggerUrl(t, c.id, pages.url('/r/0'));
        const body = expectError(await call(t, 'GET', validatorPath(c.id)), 502, 'swagger_fetch_failed');
        expect(body.details).toMatchObject({ reason: 'too_many_redirects' });
        expect(pages.count('/r/6')).toBe(before); // the sixth hop was never requested
      });

      it('a redirect to a metadata address or to an ftp: URL → 400 address_not_allowed (each hop re-checked)', async () => {
        const c = await createCopilot(t);
        await setSwaggerUrl(t, c.id, pages.url('/to-metadata'));
        expectError(await call(t, 'GET', validatorPath(c.id)), 400, 'address_not_allowed');
        await setSwaggerUrl(t, c.id, pages.url('/to-ftp'));
        expectError(await call(t, 'GET', validatorPath(c.id)), 400, 'address_not_allowed');
      });

      it('GET …/swagger of a copilot whose swagger_url is a URL → 422 swagger_missing (nothing is proxied)', async () => {
        const c = await createCopilot(t);
        await setSwaggerUrl(t, c.id, pages.url('/specs/trello.json'));
        const before = pages.count('/specs/trello.json');
        expectError(await call(t, 'GET', swaggerPath(c.id)), 422, 'swagger_missing');
        expect(pages.count('/specs/trello.json')).toBe(before);
      });
    });

    describe('fetch limits (FETCH_TIMEOUT_MS=300, MAX_DOCUMENT_BYTES=4096)', () => {
      let s: TestApp;
      beforeAll(async () => {
        s = await buildTestApp(dialect, { env: { FETCH_TIMEOUT_MS: '300', MAX_DOCUMENT_BYTES: '4096' } });
      });
      afterAll(async () => s?.close());

      it('a server that stalls past the timeout → 502 swagger_fetch_failed, soon after the timeout', async () => {
        const c = await createCopilot(s);
        pages.set('/stall', { type: 'application/json', body: spec('telegram_reduced.json') });
        const hold = pages.hold('/stall');
        try {
          await setSwaggerUrl(s, c.id, pages.url('/stall'));
          const { res, ms } = await timed(() => call(s, 'GET', validatorPath(c.id)));
          const body = expectError(res, 502, 'swagger_fetch_failed');
          expect(body.details).toMatchObject({ reason: 'timeout' });
          expect(ms).toBeGreaterThanOrEqual(250);
          expect(ms).toBeLessThan(2000);
        } finally {
          hold.release();
        }
      });

      it('a server that sends headers then stalls the body → 502', async () => {
        const c = await createCopilot(s);
        pages.set('/trickle', (_req, res) => {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.write('{"openapi":"3.0.3",');
          // never ends: the page server's close() destroys the socket
        });
        await setSwaggerUrl(s, c.id, pages.url('/trickle'));
        const { res, ms } = await timed(() => call(s, 'GET', validatorPath(c.id)));
        expect(expectError(res, 502, 'swagger_fetch_failed').details).toMatchObject({ reason: 'timeout' });
        expect(ms).toBeLessThan(2000);
      });

      it('a document larger than MAX_DOCUMENT_BYTES → 502 swagger_fetch_failed (too_large)', async () => {
        const c = await createCopilot(s);
        await setSwaggerUrl(s, c.id, pages.url('/specs/petstore3.json'));
        expect(expectError(await call(s, 'GET', validatorPath(c.id)), 502, 'swagger_fetch_failed').details).toMatchObject({ reason: 'too_large' });
      });

      it('the service still answers after', async () => {
        const c = await createCopilot(s);
        await setSwaggerUrl(s, c.id, pages.url('/specs/webhook-example.oas31.json'));
        expectValidation(await call(s, 'GET', validatorPath(c.id)), c.id);
      });
    });

    describe('address policy with FETCH_ALLOW_NETWORKS empty', () => {
      let s: TestApp;
      beforeAll(async () => {
        s = await buildTestApp(dialect, { env: { FETCH_ALLOW_NETWORKS: '' } });
      });
      afterAll(async () => s?.close());

      it('the configuration really is empty', () => {
        expect(s.config.fetchAllowNetworks).toEqual([]);
      });

      const port = () => new URL(pages.origin).port;
      const refusedUrls: Array<[string, () => string]> = [
        ['the page server by its address', () => pages.url('/specs/trello.json')],
        ['localhost', () => `http://localhost:${port()}/specs/trello.json`],
        ['localhost, port 80', () => 'http://localhost/'],
        ['the metadata address', () => 'http://169.254.169.254/latest/meta-data'],
        ['IPv6 loopback', () => `http://[::1]:${port()}/specs/trello.json`],
        ['IPv6 loopback, port 80', () => 'http://[::1]/'],
        ['IPv4-mapped IPv6 loopback', () => `http://[::ffff:127.0.0.1]:${port()}/specs/trello.json`],
        ['decimal IPv4', () => `http://2130706433:${port()}/specs/trello.json`],
        ['decimal IPv4, port 80', () => 'http://2130706433/'],
        ['octal/hex IPv4', () => `http://0x7f.0.0.01:${port()}/specs/trello.json`],
        ['short IPv4', () => `http://127.1:${port()}/specs/trello.json`],
        ['private network', () => 'http://10.0.0.1/openapi.json'],
        ['unspecified address', () => `http://0.0.0.0:${port()}/specs/trello.json`],
      ];

      it.each(refusedUrls)('%s → 400 address_not_allowed, and the server saw no request', async (_what, url) => {
        const before = pages.count('/specs/trello.json');
        const c = await createCopilot(s);
        await setSwaggerUrl(s, c.id, url());
        expectError(await call(s, 'GET', validatorPath(c.id)), 400, 'address_not_allowed');
        expect(pages.count('/specs/trello.json')).toBe(before);
      });

      it('the same URL is fine where 127.0.0.0/8 is allowed (the refusal is the policy)', async () => {
        const c = await createCopilot(t);
        await setSwaggerUrl(t, c.id, pages.url('/specs/trello.json'));
        expectValidation(await call(t, 'GET', validatorPath(c.id)), c.id);
      });

      it('stored documents do not depend on the policy', async () => {
        const c = await createCopilot(s);
        await uploadSpec(s, c.id, 'trello.json');
        expectValidation(await call(s, 'GET', validatorPath(c.id)), c.id);
      });
    });

    describe('ALLOW_ANONYMOUS_READ=true', () => {
      let s: TestApp;
      let c: Record<string, any>;
      beforeAll(async () => {
        s = await buildTestApp(dialect, { env: { ALLOW_ANONYMOUS_READ: 'true' } });
        c = await createCopilot(s, { name: 'Public' });
        await uploadSpec(s, c.id, 'petstore3.yaml');
      });
      afterAll(async () => s?.close());

      it('opens the validator to callers without a key', async () => {
        expect(expectValidation(await call(s, 'GET', validatorPath(c.id), { key: null }), c.id).all_endpoints).toHaveLength(19);
      });

      it('anonymous errors are still the contract’s: 404, 422', async () => {
        expectError(await call(s, 'GET', validatorPath(UNKNOWN_ID), { key: null }), 404, 'copilot_not_found');
        const empty = await createCopilot(s);
        expectError(await call(s, 'GET', validatorPath(empty.id), { key: null }), 422, 'swagger_missing');
      });

      it('still rejects a bad key', async () => {
        expectError(await call(s, 'GET', validatorPath(c.id), { key: 'Bearer nonsense' }), 401, 'unauthorized');
      });

      it('does not open GET …/swagger, nor the upload', async () => {
        expectError(await call(s, 'GET', swaggerPath(c.id), { key: null }), 401, 'unauthorized');
        expectError(await putRaw(s, c.id, spec('trello.json'), 'application/json', null), 401, 'unauthorized');
      });
    });

    describe('the answer is bounded and served from the cached bytes (issue 13 §1)', () => {
      afterEach(() => {
        vi.restoreAllMocks();
      });

      it('the 1 MiB YAML alias document (472 MB of answer) is refused at upload: 400 invalid_swagger_file saying why, nothing stored', async () => {
        const c = await createCopilot(t);
        const bytes = yamlAliasBomb();
        const body = expectError(await putRaw(t, c.id, bytes, 'application/yaml'), 400, 'invalid_swagger_file');
        expect(body.message).toMatch(/answer for this document would be at least \d+ characters long, over the limit of 10485760 /);
        expect(body.details).toEqual({ max_answer_chars: 10 * MiB, estimated_answer_chars: expect.any(Number), document_bytes: MiB });
        expect((body.details as { estimated_answer_chars: number }).estimated_answer_chars).toBeGreaterThan(400_000_000);
        expect((await call(t, 'GET', copilotPath(c.id))).json().swagger_url).toBe('');
        expectError(await call(t, 'GET', validatorPath(c.id)), 422, 'swagger_missing');
        // The same bytes again: the refusal comes from the cache.
        const before = t.validationCache.stats();
        expect(expectError(await putRaw(t, c.id, bytes, 'application/yaml'), 400, 'invalid_swagger_file').details).toEqual(body.details);
        expect(t.validationCache.stats()).toMatchObject({ hits: before.hits + 1, misses: before.misses });
      });

      it('the 12 MB JSON document whose path-level parameter goes into 8 methods is refused at upload', async () => {
        const c = await createCopilot(t);
        const bytes = jsonPathParameterBomb();
        const body = expectError(await putRaw(t, c.id, bytes, 'application/json'), 400, 'invalid_swagger_file');
        expect(body.details).toMatchObject({ max_answer_chars: 10 * bytes.length, document_bytes: bytes.length });
        expect((body.details as { estimated_answer_chars: number }).estimated_answer_chars).toBeGreaterThan(32 * (bytes.length - 1_000));
        expect((await call(t, 'GET', copilotPath(c.id))).json().swagger_url).toBe('');
      });

      it('a swagger_url document over the bound is refused when validated, and the refusal is cached (fetched again, not parsed again)', async () => {
        const c = await createCopilot(t);
        await setSwaggerUrl(t, c.id, pages.url('/alias-bomb.yaml'));
        const fetchesBefore = pages.count('/alias-bomb.yaml');
        const first = expectError(await call(t, 'GET', validatorPath(c.id)), 400, 'invalid_swagger_file');
        expect(first.details).toMatchObject({ max_answer_chars: 10 * MiB, document_bytes: MiB });
        const afterFirst = t.validationCache.stats();
        expect(afterFirst.entries).toBe(1);
        const second = expectError(await call(t, 'GET', validatorPath(c.id)), 400, 'invalid_swagger_file');
        expect(second).toEqual(first);
        expect(t.validationCache.stats()).toMatchObject({ entries: 1, hits: afterFirst.hits + 1, misses: afterFirst.misses });
        expect(pages.count('/alias-bomb.yaml')).toBe(fetchesBefore + 2);
      });

      it('an answer larger than the whole validation cache is rendered once: every repeated GET is a hit', async () => {
        const small = await buildTestApp(dialect, { env: { VALIDATION_CACHE_BYTES: String(64 * 1024) } }); // slack.json answers 645 KB
        try {
          const c = await createCopilot(small);
          await uploadSpec(small, c.id, 'slack.json');
          const afterUpload = small.validationCache.stats();
          expect(afterUpload.entries).toBe(1);
          expect(afterUpload.bytes).toBeGreaterThan(64 * 1024);
          const first = await call(small, 'GET', validatorPath(c.id));
          expectValidation(first, c.id);
          for (let i = 1; i <= 3; i++) {
            const again = await call(small, 'GET', validatorPath(c.id));
            expect(again.body).toBe(first.body);
          }
          expect(small.validationCache.stats()).toMatchObject({ entries: 1, hits: afterUpload.hits + 4, misses: afterUpload.misses });
        } finally {
          await small.close();
        }
      });

      it('sends chatbot_id and then the cached bytes themselves as separate chunks (no joined copy of the answer)', async () => {
        const c = await createCopilot(t);
        await uploadSpec(t, c.id, 'slack.json');
        const cached = t.validationCache.cached(sha256(spec('slack.json')))!;
        expect(cached).toBeDefined();
        // The answer came from its task thread as bytes of their own (moved, not a view into a larger buffer).
        expect(cached.byteOffset).toBe(0);
        expect(cached.buffer.byteLength).toBe(cached.length);
        const write = vi.spyOn(ServerResponse.prototype, 'write');
        const res = await call(t, 'GET', validatorPath(c.id));
        const chunks = write.mock.calls.map(([chunk]) => chunk as unknown);
        vi.restoreAllMocks();
        expectValidation(res, c.id);
        // The answer goes out as a view of the cache's own memory, after the copilot's id.
        const body = chunks.find((chunk) => Buffer.isBuffer(chunk) && chunk.buffer === cached.buffer) as Buffer | undefined;
        expect(body, "a chunk sharing the cached answer's memory").toBeDefined();
        expect(body!.length).toBe(cached.length - 1);
        expect(chunks.some((chunk) => (typeof chunk === 'string' || Buffer.isBuffer(chunk)) && chunk.length >= cached.length)).toBe(false);
        expect(Buffer.concat(chunks.map((chunk) => Buffer.from(chunk as Buffer))).toString('utf8')).toBe(res.body);
      });

      it.each([...SPEC_FILES, 'non-ASCII'])('%s: the bytes on the wire are exactly the chatbot_id, then the rendered answer after its "{"', async (file) => {
        const c = await createCopilot(t);
        const bytes =
          file === 'non-ASCII' ? Buffer.from('openapi: 3.0.3\npaths:\n  /é:\n    get:\n      summary: "Prix en € 😀 \\u2028 \\"x\\""\n') : spec(file);
        expect((await putRaw(t, c.id, bytes, file.endsWith('.json') ? 'application/json' : 'application/yaml')).statusCode).toBe(200);
        const res = await call(t, 'GET', validatorPath(c.id));
        const expected = Buffer.concat([
          Buffer.from(`{"chatbot_id":"${c.id}",`),
          renderFresh({ bytes, fileName: file === 'non-ASCII' ? 'a.yaml' : file }).subarray(1),
        ]);
        expect(res.statusCode).toBe(200);
        expect(res.rawPayload.equals(expected)).toBe(true);
        expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
        expect(res.headers['content-length']).toBe(String(expected.length));
        expect(res.headers['transfer-encoding']).toBeUndefined();
        const head = await call(t, 'HEAD', validatorPath(c.id));
        expect(head.statusCode).toBe(200);
        expect(head.headers['content-length']).toBe(String(expected.length));
        expect(head.rawPayload.length).toBe(0);
      });
    });

    describe('cache (by content)', () => {
      it('the second validation of an unchanged document is byte-identical and a cache hit', async () => {
        const c = await createCopilot(t);
        await uploadSpec(t, c.id, 'slack.json');
        const first = await call(t, 'GET', validatorPath(c.id));
        expectValidation(first, c.id);
        // Counted loosely: how many lookups one miss takes is the cache's business.
        const afterFirst = t.validationCache.stats();
        // The upload validated the document (one parse, a miss); the first GET is already a hit.
        expect(afterFirst.misses).toBeGreaterThan(0);
        expect(afterFirst.hits).toBe(1);
        expect(afterFirst.entries).toBe(1);

        const second = await call(t, 'GET', validatorPath(c.id));
        expect(second.statusCode).toBe(200);
        expect(second.body).toBe(first.body);
        const afterSecond = t.validationCache.stats();
        expect(afterSecond.hits).toBe(afterFirst.hits + 1);
        expect(afterSecond.misses).toBe(afterFirst.misses);

        const third = await call(t, 'GET', validatorPath(c.id));
        expect(third.body).toBe(first.body);
        expect(t.validationCache.stats()).toMatchObject({ hits: afterFirst.hits + 2, misses: afterFirst.misses, entries: 1 });
      });

      it('a stored document validated again (not cached) skips the nesting scan its upload ran; a fetched one is scanned', async () => {
        const stored = await createCopilot(t);
        await uploadSpec(t, stored.id, 'petstore3.json');
        const fetched = await createCopilot(t);
        await setSwaggerUrl(t, fetched.id, pages.url('/specs/trello.json'));
        t.validationCache.clear();
        const render = vi.spyOn(t.taskThreads, 'answerOnThreadMovingBytes');
        try {
          expectValidation(await call(t, 'GET', validatorPath(stored.id)), stored.id);
          expectValidation(await call(t, 'GET', validatorPath(fetched.id)), fetched.id);
          expect(render.mock.calls.map(([, , opts]) => opts.scanNestingFirst ?? true)).toEqual([false, true]);
        } finally {
          render.mockRestore();
        }
      });

      it('two copilots with identical bytes share the entry; each answer carries its own chatbot_id', async () => {
        const a = await createCopilot(t, { name: 'A' });
        const b = await createCopilot(t, { name: 'B' });
        await uploadSpec(t, a.id, 'petstore3.json');
        await uploadSpec(t, b.id, 'petstore3.json');
        const ra = await call(t, 'GET', validatorPath(a.id));
        expectValidation(ra, a.id);
        const stats = t.validationCache.stats();
        expect(stats.misses).toBeGreaterThan(0);
        expect(stats.entries).toBe(1);

        const rb = await call(t, 'GET', validatorPath(b.id));
        expectValidation(rb, b.id);
        expect(t.validationCache.stats()).toMatchObject({ hits: stats.hits + 1, misses: stats.misses, entries: 1 });
        expect(rb.body).not.toContain(a.id);
        expect(rb.body).toBe(ra.body.replace(`"chatbot_id":"${a.id}"`, `"chatbot_id":"${b.id}"`));
      });

      it('a replaced document is not answered from the old entry', async () => {
        const c = await createCopilot(t);
        await uploadSpec(t, c.id, 'trello.json');
        expect(expectValidation(await call(t, 'GET', validatorPath(c.id)), c.id).all_endpoints).toHaveLength(12);
        const afterFirst = t.validationCache.stats();
        await uploadSpec(t, c.id, 'conveyour.json');
        expect(expectValidation(await call(t, 'GET', validatorPath(c.id)), c.id).all_endpoints).toHaveLength(10);
        const afterSecond = t.validationCache.stats();
        // Each upload parses its new bytes once (a miss); each GET after it is a hit.
        expect(afterSecond).toMatchObject({ hits: 2, entries: 2 });
        expect(afterSecond.misses).toBeGreaterThan(afterFirst.misses);
        // Back to the first bytes: no parse at all, neither on upload nor on GET.
        await uploadSpec(t, c.id, 'trello.json');
        expect(expectValidation(await call(t, 'GET', validatorPath(c.id)), c.id).all_endpoints).toHaveLength(12);
        expect(t.validationCache.stats()).toMatchObject({ misses: afterSecond.misses, hits: 4, entries: 2 });
      });

      it('the same bytes uploaded as JSON and as YAML give the same endpoints', async () => {
        // JSON is YAML: the bytes of petstore3.json sent as application/yaml are read as YAML.
        const a = await createCopilot(t);
        const b = await createCopilot(t);
        expect((await putRaw(t, a.id, spec('trello.json'), 'application/json')).statusCode).toBe(200);
        const res = await putRaw(t, b.id, spec('trello.json'), 'application/yaml');
        expect(res.statusCode, res.body).toBe(200);
        expect(res.json().swagger_url).toMatch(/\.yaml$/);
        const ra = expectValidation(await call(t, 'GET', validatorPath(a.id)), a.id);
        const rb = expectValidation(await call(t, 'GET', validatorPath(b.id)), b.id);
        expect(rb.all_endpoints).toEqual(ra.all_endpoints);
        expect(rb.validations).toEqual(ra.validations);
      });
    });
  });
}
