/**
 * API descriptions over HTTP (issue 3, DESIGN §4/§5/§8): upload (raw and multipart),
 * download, replacement, create-with-document, and every way an upload is refused.
 * The validator itself: validator.test.ts.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { findSwaggerDocument } from '../../src/storage/swagger-document.repository.js';
import { buildTestApp, type TestApp } from '../support/app.js';
import { DIALECTS } from '../support/databases.js';
import { HOSTILE_FILES, hostile, mediaTypeOf, multipart, putMultipart, putRaw, spec, STORED_NAME, uploadSpec } from '../support/documents.js';
import { call, copilotPath, createCopilot, expectCanonicalJson, expectCopilot, expectError, swaggerPath, validatorPath } from '../support/http.js';

const CREATE = '/backend/api/copilot/swagger';
const UNKNOWN_ID = '4f8a3c1e-9b2d-4e6f-8a1b-2c3d4e5f6a7b';

const MINIMAL_JSON =
  '{"openapi":"3.0.3","info":{"title":"Mini","version":"1"},"paths":{"/ping":{"get":{"operationId":"ping","summary":"Ping","description":"Answers pong","responses":{"200":{"description":"pong"}}}}}}';
const MINIMAL_YAML =
  'openapi: 3.0.3\ninfo: {title: Mini, version: "1"}\npaths:\n  /ping:\n    get: {operationId: ping, summary: Ping, description: Answers pong}\n';

for (const dialect of DIALECTS) {
  describe(`API descriptions (${dialect})`, () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await buildTestApp(dialect);
    });
    afterAll(async () => t?.close());
    beforeEach(() => t.validationCache.clear());

    describe('PUT …/swagger: accepted bodies', () => {
      it.each([
        ['application/json', 'petstore3.json', 'json'],
        ['application/json; charset=utf-8', 'trello.json', 'json'],
        ['application/yaml', 'petstore3.yaml', 'yaml'],
        ['application/x-yaml', 'petstore31.yaml', 'yaml'],
        ['text/yaml', 'openfaas-gateway.swagger2.yaml', 'yaml'],
      ])('raw %s: 200 with a generated .%s name; GET returns the exact bytes', async (type, file, ext) => {
        const before = await createCopilot(t, { name: `Raw ${type}` });
        const bytes = spec(file);
        const res = await putRaw(t, before.id, bytes, type);
        expect(res.statusCode, res.body).toBe(200);
        expectCanonicalJson(res);
        const after = expectCopilot(res.json());
        expect(after.id).toBe(before.id);
        expect(after.swagger_url).toMatch(STORED_NAME);
        expect(after.swagger_url).toMatch(new RegExp(`\\.${ext === 'json' ? 'json' : 'yaml'}$`));
        expect(after.updated_at).not.toBe(before.updated_at);
        expect((after.updated_at as string) > (before.updated_at as string)).toBe(true);
        expect(after.created_at).toBe(before.created_at);
        expect(after.name).toBe(before.name);

        // The copilot as read back carries the same swagger_url.
        expect((await call(t, 'GET', copilotPath(before.id))).json().swagger_url).toBe(after.swagger_url);

        const got = await call(t, 'GET', swaggerPath(before.id));
        expect(got.statusCode).toBe(200);
        expect(got.headers['content-type']).toBe(ext === 'json' ? 'application/json; charset=utf-8' : 'application/yaml; charset=utf-8');
        expect(Buffer.compare(got.rawPayload, bytes)).toBe(0);
        expect(String(got.headers['content-disposition'])).toContain(after.swagger_url as string);
      });

      it.each([
        ['file', 'petstore3.yaml', 'application/x-yaml', 'yaml'],
        ['swagger_file', 'uber.swagger2.json', 'application/json', 'json'],
        ['file', 'trello.json', 'application/octet-stream', 'json'], // format from the file name
        ['swagger_file', 'openfaas-gateway.swagger2.yaml', 'text/plain', 'yaml'],
      ])('multipart with the document in %s (%s sent as %s)', async (field, file, type, ext) => {
        const before = await createCopilot(t, { name: `Multipart ${field}` });
        const bytes = spec(file);
        const res = await putMultipart(t, before.id, [{ name: field, filename: file, type, content: bytes }]);
        expect(res.statusCode, res.body).toBe(200);
        const after = expectCopilot(res.json());
        expect(after.swagger_url).toMatch(STORED_NAME);
        expect((after.swagger_url as string).endsWith(`.${ext}`)).toBe(true);
        expect(after.updated_at).not.toBe(before.updated_at);

        const got = await call(t, 'GET', swaggerPath(before.id));
        expect(got.statusCode).toBe(200);
        expect(got.headers['content-type']).toBe(`application/${ext}; charset=utf-8`);
        expect(Buffer.compare(got.rawPayload, bytes)).toBe(0);
      });

      it('multipart: other text fields around the file are ignored', async () => {
        const c = await createCopilot(t);
        const res = await putMultipart(t, c.id, [
          { name: 'note', value: 'first' },
          { name: 'file', filename: 'mini.json', type: 'application/json', content: MINIMAL_JSON },
          { name: 'other', value: 'last' },
        ]);
        expect(res.statusCode, res.body).toBe(200);
        expect((await call(t, 'GET', swaggerPath(c.id))).body).toBe(MINIMAL_JSON);
      });

      it('multipart: more than 20 text fields is 400 saying so, not 413 "larger than this service accepts" (amplification sweep: a 2.6 KB body)', async () => {
        const c = await createCopilot(t);
        const fields = Array.from({ length: 50 }, (_, i) => ({ name: `f${i}`, value: 'x' }));
        const res = await putMultipart(t, c.id, [...fields, { name: 'file', filename: 'mini.json', type: 'application/json', content: MINIMAL_JSON }]);
        expectError(res, 400, 'invalid_request');
        expect(res.json().message).toMatch(/at most 20 text fields/);
      });

      it('a second upload replaces the first: new file name, old document row gone', async () => {
        const c = await createCopilot(t);
        const first = expectCopilot((await putRaw(t, c.id, MINIMAL_JSON, 'application/json')).json());
        const firstName = first.swagger_url as string;
        expect(await findSwaggerDocument(t.storage.readDb, firstName)).toBeDefined();

        const res = await putRaw(t, c.id, MINIMAL_YAML, 'application/yaml');
        expect(res.statusCode, res.body).toBe(200);
        const second = expectCopilot(res.json());
        expect(second.swagger_url).toMatch(/^[A-Za-z0-9]{20}\.yaml$/);
        expect(second.swagger_url).not.toBe(firstName);
        expect((second.updated_at as string) > (first.updated_at as string)).toBe(true);
        expect(await findSwaggerDocument(t.storage.readDb, firstName)).toBeUndefined();
        const row = await findSwaggerDocument(t.storage.readDb, second.swagger_url as string);
        expect(row?.copilot_id).toBe(c.id);

        const got = await call(t, 'GET', swaggerPath(c.id));
        expect(got.headers['content-type']).toBe('application/yaml; charset=utf-8');
        expect(got.body).toBe(MINIMAL_YAML);

        // Even the same bytes again get a fresh name (and the previous row goes).
        const third = expectCopilot((await putRaw(t, c.id, MINIMAL_YAML, 'application/yaml')).json());
        expect(third.swagger_url).not.toBe(second.swagger_url);
        expect(await findSwaggerDocument(t.storage.readDb, second.swagger_url as string)).toBeUndefined();
      });

      it('concurrent uploads to one copilot leave exactly one document row, the current one', async () => {
        const c = await createCopilot(t);
        const files = ['trello.json', 'conveyour.json', 'telegram_reduced.json', 'petstore3.json', 'uber.swagger2.json', 'nl_business_gov.json'];
        for (let round = 0; round < 3; round++) {
          const answers = await Promise.all(files.map((f) => putRaw(t, c.id, spec(f), 'application/json')));
          expect(answers.map((r) => r.statusCode)).toEqual(files.map(() => 200));
          const rows = await t.storage.db.selectFrom('swagger_documents').select('file_name').where('copilot_id', '=', c.id).execute();
          const current = (await call(t, 'GET', copilotPath(c.id))).json().swagger_url;
          expect(rows.map((r) => r.file_name)).toEqual([current]);
          const got = await call(t, 'GET', swaggerPath(c.id));
          expect(files.some((f) => Buffer.compare(got.rawPayload, spec(f)) === 0)).toBe(true);
        }
      });

      it('uploading to one copilot leaves another copilot’s document alone', async () => {
        const a = await createCopilot(t, { name: 'A' });
        const b = await createCopilot(t, { name: 'B' });
        const aName = (await uploadSpec(t, a.id, 'trello.json')).swagger_url;
        await uploadSpec(t, b.id, 'trello.json');
        await uploadSpec(t, b.id, 'petstore3.yaml');
        expect(await findSwaggerDocument(t.storage.readDb, aName)).toBeDefined();
        expect(Buffer.compare((await call(t, 'GET', swaggerPath(a.id))).rawPayload, spec('trello.json'))).toBe(0);
      });
    });

    describe('PUT …/swagger: refused documents → 400 invalid_swagger_file, nothing stored', () => {
      let target: Record<string, any>;
      let storedName: string;
      beforeAll(async () => {
        target = await createCopilot(t, { name: 'Hostile target' });
        storedName = (await putRaw(t, target.id, MINIMAL_JSON, 'application/json')).json().swagger_url;
      });

      /** The previous document is untouched and the service answers normally. */
      async function expectUnchangedAndHealthy(): Promise<void> {
        const got = await call(t, 'GET', swaggerPath(target.id));
        expect(got.statusCode).toBe(200);
        expect(got.body).toBe(MINIMAL_JSON);
        expect((await call(t, 'GET', copilotPath(target.id))).json().swagger_url).toBe(storedName);
        const health = await call(t, 'GET', '/healthz', { key: null });
        expect(health.statusCode).toBe(200);
        const validated = await call(t, 'GET', validatorPath(target.id));
        expect(validated.statusCode, validated.body).toBe(200);
      }

      async function expectRefused(bytes: Buffer | string, type: string): Promise<Record<string, unknown>> {
        // How soon: `npm run bench` (section 2, hostile documents), not a test's pass/fail.
        const body = expectError(await putRaw(t, target.id, bytes, type), 400, 'invalid_swagger_file');
        await expectUnchangedAndHealthy();
        return body;
      }

      it.each(HOSTILE_FILES)('hostile fixture %s', async (file) => {
        await expectRefused(hostile(file), mediaTypeOf(file));
      });

      it('truncated JSON (kubernetes.json): the parser’s position in details', async () => {
        const body = await expectRefused(spec('kubernetes.json'), 'application/json');
        expect(body.details).toMatchObject({ line: 154, column: 15 });
        expect(body.message).toMatch(/line 154, column 15/);
      });

      it('not JSON: the position of the error in details', async () => {
        const body = await expectRefused('{"openapi": "3.0.3",\n  paths: {}}', 'application/json');
        expect(body.details).toMatchObject({ line: 2, column: expect.any(Number) });
      });

      it('not YAML: the position of the error in details', async () => {
        const body = await expectRefused('openapi: 3.0.3\ninfo:\n  title: [unclosed\n  version: 1\n', 'application/yaml');
        expect(body.details).toMatchObject({ line: expect.any(Number), column: expect.any(Number) });
      });

      it.each([
        ['a scalar root (JSON)', '"openapi"', 'application/json', ''],
        ['a number root (JSON)', '42', 'application/json', ''],
        ['an array root (JSON)', '[{"openapi":"3.0.3"}]', 'application/json', ''],
        ['a scalar root (YAML)', 'just some words', 'application/yaml', ''],
        ['an object that is not OpenAPI', '{"hello":"world"}', 'application/json', undefined],
        ['paths a string', '{"openapi":"3.0.3","info":{"title":"x","version":"1"},"paths":"/a"}', 'application/json', '/paths'],
        ['paths null', '{"openapi":"3.0.3","info":{"title":"x","version":"1"},"paths":null}', 'application/json', '/paths'],
        ['paths an array', '{"openapi":"3.0.3","info":{"title":"x","version":"1"},"paths":["/a"]}', 'application/json', '/paths'],
        ['an operation a string', '{"openapi":"3.0.3","info":{"title":"x","version":"1"},"paths":{"/a":{"get":"x"}}}', 'application/json', '/paths/~1a/get'],
        ['unquoted swagger: 2.0', 'swagger: 2.0\ninfo: {title: x, version: "1"}\npaths: {}\n', 'application/yaml', '/swagger'],
      ])('%s', async (_what, text, type, pointer) => {
        const body = await expectRefused(text, type);
        if (pointer !== undefined) expect(body.details).toMatchObject({ pointer });
      });

      it.each([
        ['200,000 nested JSON arrays', '['.repeat(200_000), 'application/json'],
        ['200,000 nested JSON arrays, closed', `${'['.repeat(200_000)}${']'.repeat(200_000)}`, 'application/json'],
        ['100,000 nested JSON objects', `{"openapi":"3.0.3","paths":${'{"a":'.repeat(100_000)}1${'}'.repeat(100_001)}`, 'application/json'],
        ['200,000 nested YAML flow sequences', `openapi: 3.0.3\nx: ${'['.repeat(200_000)}`, 'application/yaml'],
        ['100,000 nested YAML flow mappings', `openapi: 3.0.3\nx: ${'{a: '.repeat(100_000)}1${'}'.repeat(100_000)}`, 'application/yaml'],
      ])('%s', async (_what, text, type) => {
        await expectRefused(text, type);
      });

      it.each([
        ['JSON', '{"openapi":"3.0.3","info":{"title":"x","version":"1"},"paths":{},"paths":{"/a":{}}}', 'application/json'],
        ['YAML', 'openapi: 3.0.3\ninfo: {title: x, version: "1"}\npaths: {}\npaths: {}\n', 'application/yaml'],
      ])('duplicate keys (%s)', async (_what, text, type) => {
        const body = await expectRefused(text, type);
        expect(String(body.message)).toMatch(/duplicate|repeats/i);
        expect(body.details).toMatchObject({ line: expect.any(Number), column: expect.any(Number) });
      });

      it.each([
        ['!!js/function', 'x-run: !!js/function "function () { return process.exit(1) }"'],
        ['!!js/undefined', 'x-run: !!js/undefined ""'],
        ['!!js/regexp', 'x-run: !!js/regexp /a+$/'],
        ['!!python/object/apply', 'x-run: !!python/object/apply:os.system ["echo owned"]'],
        ['a custom tag', 'x-run: !Thing {a: 1}'],
      ])('YAML tag %s', async (_what, line) => {
        await expectRefused(`openapi: 3.0.3\ninfo: {title: x, version: "1"}\npaths: {}\n${line}\n`, 'application/yaml');
      });

      it('an empty body', async () => {
        await expectRefused('', 'application/json');
        await expectRefused('  \n ', 'application/yaml');
      });

      it('YAML sent as application/json is read as JSON and refused', async () => {
        await expectRefused(MINIMAL_YAML, 'application/json');
      });

      it('the same hostile documents refused through multipart too', async () => {
        for (const file of ['billion-laughs.yaml', 'tag-js-function.yaml', 'duplicate-keys.json', 'scalar-root.json']) {
          const res = await putMultipart(t, target.id, [{ name: 'swagger_file', filename: file, type: mediaTypeOf(file), content: hostile(file) }]);
          expectError(res, 400, 'invalid_swagger_file');
        }
        const deep = await putMultipart(t, target.id, [{ name: 'file', filename: 'deep.json', type: 'application/json', content: '['.repeat(200_000) }]);
        expectError(deep, 400, 'invalid_swagger_file');
        await expectUnchangedAndHealthy();
      });

      it('a hostile document refused twice in a row gets the same answer', async () => {
        const a = await putRaw(t, target.id, hostile('billion-laughs.yaml'), 'application/yaml');
        const b = await putRaw(t, target.id, hostile('billion-laughs.yaml'), 'application/yaml');
        expectError(a, 400, 'invalid_swagger_file');
        expect(b.body).toBe(a.body);
      });
    });

    describe('PUT …/swagger: other refusals', () => {
      it.each([
        ['text/plain', MINIMAL_JSON],
        ['application/xml', '<openapi/>'],
        ['application/octet-stream', MINIMAL_JSON],
        ['application/x-www-form-urlencoded', 'openapi=3.0.3'],
      ])('%s → 415 unsupported_media_type', async (type, payload) => {
        const c = await createCopilot(t);
        expectError(await putRaw(t, c.id, payload, type), 415, 'unsupported_media_type');
        expect((await call(t, 'GET', copilotPath(c.id))).json().swagger_url).toBe('');
      });

      it('multipart without a file field → 400', async () => {
        const c = await createCopilot(t);
        expectError(await putMultipart(t, c.id, [{ name: 'name', value: 'no file here' }]), 400, 'invalid_request');
        expectError(
          await putMultipart(t, c.id, [{ name: 'document', filename: 'spec.json', type: 'application/json', content: MINIMAL_JSON }]),
          400,
          'invalid_request',
        );
        expectError(await putMultipart(t, c.id, []), 400, 'invalid_request');
        // A field named "file" without a filename is a text field, not a file.
        expectError(await putMultipart(t, c.id, [{ name: 'file', value: MINIMAL_JSON }]), 400, 'invalid_request');
        expect((await call(t, 'GET', copilotPath(c.id))).json().swagger_url).toBe('');
      });

      it('multipart with two files → 400 (not 413)', async () => {
        const c = await createCopilot(t);
        const doc = { filename: 'a.json', type: 'application/json', content: MINIMAL_JSON };
        expectError(
          await putMultipart(t, c.id, [
            { name: 'file', ...doc },
            { name: 'swagger_file', ...doc },
          ]),
          400,
          'invalid_request',
        );
        expectError(
          await putMultipart(t, c.id, [
            { name: 'attachment', filename: 'a.txt', type: 'text/plain', content: 'hi' },
            { name: 'file', ...doc },
          ]),
          400,
          'invalid_request',
        );
        expect((await call(t, 'GET', copilotPath(c.id))).json().swagger_url).toBe('');
      });

      it('a malformed multipart body → 400, not 500, and the service stays healthy', async () => {
        const c = await createCopilot(t);
        const { payload, contentType } = multipart([{ name: 'file', filename: 'a.json', type: 'application/json', content: MINIMAL_JSON }]);
        const put = (body: Buffer | string, type: string) => call(t, 'PUT', swaggerPath(c.id), { payload: body, headers: { 'content-type': type } });
        expectError(await put(payload.subarray(0, payload.length - 20), contentType), 400, 'invalid_request'); // truncated
        expectError(await put('garbage', 'multipart/form-data'), 400, 'invalid_request'); // no boundary
        expectError(await put('garbage', 'multipart/form-data; boundary=zzz'), 400, 'invalid_request'); // no part
        const res = await put(payload, contentType);
        expect(res.statusCode, res.body).toBe(200);
      });

      it('a body without Content-Type → 415; an empty JSON body → 400 invalid_swagger_file', async () => {
        const c = await createCopilot(t);
        const res = await t.app.inject({ method: 'PUT', url: swaggerPath(c.id), headers: { authorization: t.admin }, payload: MINIMAL_JSON });
        expectError(res, 415, 'unsupported_media_type');
        const empty = await t.app.inject({ method: 'PUT', url: swaggerPath(c.id), headers: { authorization: t.admin, 'content-type': 'application/json' } });
        expectError(empty, 400, 'invalid_swagger_file');
      });

      it('unknown, malformed or deleted copilot → 404 copilot_not_found (PUT and GET)', async () => {
        const deleted = await createCopilot(t, { name: 'Deleted' });
        await uploadSpec(t, deleted.id, 'trello.json');
        expect((await call(t, 'DELETE', copilotPath(deleted.id))).statusCode).toBe(200);
        for (const id of [UNKNOWN_ID, 'not-a-uuid', '1', `${UNKNOWN_ID}x`, deleted.id]) {
          expectError(await putRaw(t, id, MINIMAL_JSON, 'application/json'), 404, 'copilot_not_found');
          expectError(
            await putMultipart(t, id, [{ name: 'file', filename: 'a.json', type: 'application/json', content: MINIMAL_JSON }]),
            404,
            'copilot_not_found',
          );
          expectError(await call(t, 'GET', swaggerPath(id)), 404, 'copilot_not_found');
        }
      });

      it('GET of a copilot without a document → 422 swagger_missing', async () => {
        const c = await createCopilot(t);
        expectError(await call(t, 'GET', swaggerPath(c.id)), 422, 'swagger_missing');
      });
    });

    describe('PUT/GET …/swagger: 401 and 403 come before any body problem', () => {
      let c: Record<string, any>;
      let other: Record<string, any>;
      let readOnly: string;
      let otherBot: string;
      let kbOnly: string;
      beforeAll(async () => {
        c = await createCopilot(t, { name: 'Guarded' });
        other = await createCopilot(t, { name: 'Other' });
        readOnly = await t.key(['copilots:read']);
        otherBot = await t.key(['copilots:write', 'copilots:read'], [other.id]);
        kbOnly = await t.key(['knowledgebase:read', 'knowledgebase:write']);
      });

      const bodies: Array<[string, () => { payload: Buffer | string; type: string }]> = [
        ['a valid document', () => ({ payload: MINIMAL_JSON, type: 'application/json' })],
        ['a hostile document', () => ({ payload: hostile('billion-laughs.yaml'), type: 'application/yaml' })],
        ['truncated JSON', () => ({ payload: spec('kubernetes.json'), type: 'application/json' })],
        ['an unsupported type', () => ({ payload: MINIMAL_JSON, type: 'text/plain' })],
        [
          'multipart without a file',
          () => {
            const m = multipart([{ name: 'name', value: 'x' }]);
            return { payload: m.payload, type: m.contentType };
          },
        ],
      ];

      it.each(bodies)('no key, bad key → 401 with %s', async (_what, body) => {
        const { payload, type } = body();
        expectError(await putRaw(t, c.id, payload, type, null), 401, 'unauthorized');
        expectError(await putRaw(t, c.id, payload, type, 'Bearer cms_nope'), 401, 'unauthorized');
        expectError(await putRaw(t, UNKNOWN_ID, payload, type, null), 401, 'unauthorized');
      });

      it.each(bodies)('read-only key, key limited to another bot, knowledge-base key → 403 with %s', async (_what, body) => {
        const { payload, type } = body();
        expectError(await putRaw(t, c.id, payload, type, readOnly), 403, 'forbidden');
        expectError(await putRaw(t, c.id, payload, type, otherBot), 403, 'forbidden');
        expectError(await putRaw(t, c.id, payload, type, kbOnly), 403, 'forbidden');
      });

      it('nothing was stored by the refused calls', async () => {
        expect((await call(t, 'GET', copilotPath(c.id))).json().swagger_url).toBe('');
      });

      it('GET …/swagger: 401 without a key, 403 for another bot’s key or a knowledge-base key', async () => {
        await uploadSpec(t, c.id, 'trello.json');
        expectError(await call(t, 'GET', swaggerPath(c.id), { key: null }), 401, 'unauthorized');
        expectError(await call(t, 'GET', swaggerPath(c.id), { key: otherBot }), 403, 'forbidden');
        expectError(await call(t, 'GET', swaggerPath(c.id), { key: kbOnly }), 403, 'forbidden');
        expect((await call(t, 'GET', swaggerPath(c.id), { key: readOnly })).statusCode).toBe(200);
      });

      it('a write key limited to this bot may upload', async () => {
        const mine = await t.key(['copilots:write'], [c.id]);
        const res = await putRaw(t, c.id, MINIMAL_JSON, 'application/json', mine);
        expect(res.statusCode, res.body).toBe(200);
        expect(res.json().swagger_url).toMatch(STORED_NAME);
      });
    });

    describe('POST /backend/api/copilot/swagger', () => {
      // A copilot database of its own: "no copilot created" is checked as an empty list.
      let p: TestApp;
      beforeAll(async () => {
        p = await buildTestApp(dialect);
      });
      afterAll(async () => p?.close());

      const list = async () => {
        const res = await call(p, 'GET', '/backend/api/copilots');
        expect(res.statusCode).toBe(200);
        return res.json() as Array<Record<string, unknown>>;
      };

      it('bad documents → 400 invalid_swagger_file and no copilot created', async () => {
        for (const [file, content] of [
          ['kubernetes.json', spec('kubernetes.json')],
          ['billion-laughs.yaml', hostile('billion-laughs.yaml')],
          ['tag-js-function.yaml', hostile('tag-js-function.yaml')],
          ['paths-array.json', hostile('paths-array.json')],
          ['deep.json', Buffer.from('['.repeat(200_000))],
        ] as const) {
          const { payload, contentType } = multipart([
            { name: 'swagger_file', filename: file, type: mediaTypeOf(file), content },
            { name: 'name', value: 'Should not exist' },
            { name: 'website', value: 'https://example.com' },
            { name: 'prompt_message', value: 'Hi' },
          ]);
          expectError(await call(p, 'POST', CREATE, { payload, headers: { 'content-type': contentType } }), 400, 'invalid_swagger_file');
        }
        expect(await list()).toEqual([]);
      });

      it('missing or blank name → 400 and no copilot created', async () => {
        for (const fields of [[], [{ name: 'name', value: '   ' }], [{ name: 'name', value: '' }]]) {
          const { payload, contentType } = multipart([
            { name: 'swagger_file', filename: 'petstore3.json', type: 'application/json', content: spec('petstore3.json') },
            ...fields,
            { name: 'website', value: 'https://example.com' },
          ]);
          const body = expectError(await call(p, 'POST', CREATE, { payload, headers: { 'content-type': contentType } }), 400, 'invalid_request');
          expect(body.details).toMatchObject({ field: 'name' });
        }
        expect(await list()).toEqual([]);
      });

      it('a text field it does not take (enhanced_privacy, say) → 400 naming it, and no copilot created (the JSON create refuses unknown properties too)', async () => {
        const { payload, contentType } = multipart([
          { name: 'swagger_file', filename: 'trello.json', type: 'application/json', content: spec('trello.json') },
          { name: 'name', value: 'Private?' },
          { name: 'enhanced_privacy', value: '1' },
        ]);
        const body = expectError(await call(p, 'POST', CREATE, { payload, headers: { 'content-type': contentType } }), 400, 'invalid_request');
        expect(body.details).toEqual({ field: 'enhanced_privacy' });
        expect(body.message).toMatch(/swagger_file, name, website, prompt_message/);
        expect(await list()).toEqual([]);
      });

      it('a website that is not an http(s) URL → 400 and no copilot created', async () => {
        const { payload, contentType } = multipart([
          { name: 'swagger_file', filename: 'trello.json', type: 'application/json', content: spec('trello.json') },
          { name: 'name', value: 'Bad website' },
          { name: 'website', value: 'not a url' },
        ]);
        const body = expectError(await call(p, 'POST', CREATE, { payload, headers: { 'content-type': contentType } }), 400, 'invalid_request');
        expect(body.details).toMatchObject({ field: 'website' });
        expect(await list()).toEqual([]);
      });

      it('no file, two files, a malformed body → 400; not multipart → 415; no copilot created', async () => {
        const { payload, contentType } = multipart([{ name: 'name', value: 'No file' }]);
        expectError(await call(p, 'POST', CREATE, { payload, headers: { 'content-type': contentType } }), 400, 'invalid_request');
        const doc = { filename: 'a.json', type: 'application/json', content: MINIMAL_JSON };
        const two = multipart([
          { name: 'name', value: 'Two files' },
          { name: 'swagger_file', ...doc },
          { name: 'file', ...doc },
        ]);
        expectError(await call(p, 'POST', CREATE, { payload: two.payload, headers: { 'content-type': two.contentType } }), 400, 'invalid_request');
        const cut = multipart([
          { name: 'name', value: 'Cut' },
          { name: 'swagger_file', ...doc },
        ]);
        expectError(
          await call(p, 'POST', CREATE, { payload: cut.payload.subarray(0, cut.payload.length - 30), headers: { 'content-type': cut.contentType } }),
          400,
          'invalid_request',
        );
        expectError(await call(p, 'POST', CREATE, { payload: MINIMAL_JSON, headers: { 'content-type': 'application/json' } }), 415, 'unsupported_media_type');
        expectError(await call(p, 'POST', CREATE, { payload: MINIMAL_JSON, headers: { 'content-type': 'text/plain' } }), 415, 'unsupported_media_type');
        expect(await list()).toEqual([]);
      });

      it('a text field whose bytes are not UTF-8 → 400 naming it, and no copilot created (DESIGN §8: stored with U+FFFD before)', async () => {
        for (const [field, value] of [
          ['name', Buffer.from('Caf\xe9', 'latin1')],
          ['prompt_message', Buffer.from([0x48, 0x69, 0xed, 0xa0, 0x80])], // an encoded surrogate
        ] as const) {
          const { payload, contentType } = multipart([
            { name: 'swagger_file', filename: 'trello.json', type: 'application/json', content: spec('trello.json') },
            ...(field === 'name' ? [] : [{ name: 'name', value: 'Fine' }]),
            { name: field, value },
          ]);
          const body = expectError(await call(p, 'POST', CREATE, { payload, headers: { 'content-type': contentType } }), 400, 'invalid_request');
          expect(body.details).toMatchObject({ field });
        }
        expect(await list()).toEqual([]);
      });

      it('a prompt_message of 100,000 characters is stored whole, and one longer → 400; never cut short (the field limit counted bytes, and cut silently)', async () => {
        const send = (prompt: string) => {
          const { payload, contentType } = multipart([
            { name: 'swagger_file', filename: 'trello.json', type: 'application/json', content: spec('trello.json') },
            { name: 'name', value: 'Long prompt' },
            { name: 'prompt_message', value: prompt },
          ]);
          return call(p, 'POST', CREATE, { payload, headers: { 'content-type': contentType } });
        };
        for (const prompt of ['x'.repeat(100_001), 'x'.repeat(400_001)]) {
          const tooLong = expectError(await send(prompt), 400, 'invalid_request');
          expect(tooLong.details).toEqual({ field: 'prompt_message', max_length: 100_000 });
        }
        expect(await list()).toEqual([]);
        const prompt = '日本'.repeat(50_000); // 100,000 characters, 300,000 bytes
        const created = await send(prompt);
        expect(created.statusCode).toBe(201);
        const id = (created.json() as { id: string }).id;
        const stored = await call(p, 'GET', copilotPath(id));
        expect((stored.json() as { prompt_message: string }).prompt_message).toBe(prompt);
        expect((await call(p, 'DELETE', copilotPath(id))).statusCode).toBeLessThan(300);
      });

      it('401 without a key, 403 for a read-only key or a key limited to some bots', async () => {
        const { payload, contentType } = multipart([
          { name: 'swagger_file', filename: 'k.json', type: 'application/json', content: spec('kubernetes.json') },
          { name: 'name', value: 'x' },
        ]);
        const send = (key: string | null) => call(p, 'POST', CREATE, { payload, headers: { 'content-type': contentType }, key });
        expectError(await send(null), 401, 'unauthorized');
        expectError(await send(await p.key(['copilots:read'])), 403, 'forbidden');
        // A key limited to a bot (deleted again, so the list stays empty) may not create copilots.
        const bot = (await createCopilot(p, { name: 'limit' })).id;
        const limited = await p.key(['copilots:write'], [bot]);
        expect((await call(p, 'DELETE', copilotPath(bot))).statusCode).toBe(200);
        expectError(await send(limited), 403, 'forbidden');
        expect(await list()).toEqual([]);
      });

      it('201: the copilot with the fields applied and its document stored', async () => {
        const bytes = spec('petstore3.yaml');
        const { payload, contentType } = multipart([
          { name: 'swagger_file', filename: 'petstore.yaml', type: 'application/x-yaml', content: bytes },
          { name: 'name', value: 'Pet shop' },
          { name: 'website', value: 'https://petstore3.swagger.io' },
          { name: 'prompt_message', value: 'You sell pets.\nBe kind.' },
        ]);
        const res = await call(p, 'POST', CREATE, { payload, headers: { 'content-type': contentType } });
        expect(res.statusCode, res.body).toBe(201);
        expectCanonicalJson(res);
        const c = expectCopilot(res.json());
        expect(res.headers.location).toBe(copilotPath(c.id as string));
        expect(c).toMatchObject({
          name: 'Pet shop',
          website: 'https://petstore3.swagger.io',
          prompt_message: 'You sell pets.\nBe kind.',
          status: 'draft',
          deleted_at: null,
        });
        expect(c.swagger_url).toMatch(/^[A-Za-z0-9]{20}\.yaml$/);

        const got = await call(p, 'GET', swaggerPath(c.id as string));
        expect(got.statusCode).toBe(200);
        expect(got.headers['content-type']).toBe('application/yaml; charset=utf-8');
        expect(Buffer.compare(got.rawPayload, bytes)).toBe(0);

        const validated = await call(p, 'GET', validatorPath(c.id as string));
        expect(validated.statusCode).toBe(200);
        expect(validated.json().all_endpoints).toHaveLength(19);

        expect((await list()).map((x) => x.id)).toEqual([c.id]);
      });

      it('201 with only a name: website empty, the default prompt', async () => {
        const { payload, contentType } = multipart([
          { name: 'name', value: '  Trello helper  ' },
          { name: 'swagger_file', filename: 'trello.json', type: 'application/json', content: spec('trello.json') },
        ]);
        const res = await call(p, 'POST', CREATE, { payload, headers: { 'content-type': contentType } });
        expect(res.statusCode, res.body).toBe(201);
        const c = expectCopilot(res.json());
        expect(c.name).toBe('Trello helper');
        expect(c.website).toBe('');
        expect((c.prompt_message as string).length).toBeGreaterThan(20);
        expect(c.swagger_url).toMatch(/^[A-Za-z0-9]{20}\.json$/);
      });
    });

    describe('document size cap (MAX_DOCUMENT_BYTES=2048) → 413 payload_too_large', () => {
      let s: TestApp;
      let c: Record<string, any>;
      const big = Buffer.from(JSON.stringify({ openapi: '3.0.3', info: { title: 'big', version: '1', description: 'x'.repeat(3000) }, paths: {} }));
      const huge = Buffer.from(JSON.stringify({ openapi: '3.0.3', info: { title: 'huge', version: '1', description: 'x'.repeat(200_000) }, paths: {} }));
      beforeAll(async () => {
        s = await buildTestApp(dialect, { env: { MAX_DOCUMENT_BYTES: '2048' } });
        c = await createCopilot(s, { name: 'Small documents only' });
      });
      afterAll(async () => s?.close());

      it('a document at the cap is accepted', async () => {
        const doc = { openapi: '3.0.3', info: { title: 'fits', version: '1', description: '' }, paths: {} };
        doc.info.description = 'x'.repeat(2048 - JSON.stringify(doc).length);
        const bytes = Buffer.from(JSON.stringify(doc));
        expect(bytes.length).toBe(2048);
        const res = await putRaw(s, c.id, bytes, 'application/json');
        expect(res.statusCode, res.body).toBe(200);
      });

      it('raw body over the cap (slightly, and far)', async () => {
        expectError(await putRaw(s, c.id, big, 'application/json'), 413, 'payload_too_large');
        expectError(await putRaw(s, c.id, huge, 'application/json'), 413, 'payload_too_large');
        expectError(await putRaw(s, c.id, spec('petstore3.yaml'), 'application/yaml'), 413, 'payload_too_large');
      });

      it('multipart file over the cap, in file and swagger_file', async () => {
        for (const field of ['file', 'swagger_file']) {
          expectError(await putMultipart(s, c.id, [{ name: field, filename: 'big.json', type: 'application/json', content: big }]), 413, 'payload_too_large');
          expectError(await putMultipart(s, c.id, [{ name: field, filename: 'huge.json', type: 'application/json', content: huge }]), 413, 'payload_too_large');
        }
      });

      it('POST …/copilot/swagger over the cap: 413 and no copilot created', async () => {
        const { payload, contentType } = multipart([
          { name: 'swagger_file', filename: 'big.json', type: 'application/json', content: big },
          { name: 'name', value: 'Too big' },
        ]);
        expectError(await call(s, 'POST', CREATE, { payload, headers: { 'content-type': contentType } }), 413, 'payload_too_large');
        const names = (await call(s, 'GET', '/backend/api/copilots')).json().map((x: { name: string }) => x.name);
        expect(names).not.toContain('Too big');
      });

      it('401 comes before 413', async () => {
        expectError(await putRaw(s, c.id, huge, 'application/json', null), 401, 'unauthorized');
      });

      it('the document stored before is still there and the service answers', async () => {
        const got = await call(s, 'GET', swaggerPath(c.id));
        expect(got.statusCode).toBe(200);
        expect(got.rawPayload.length).toBe(2048);
        expect((await call(s, 'GET', validatorPath(c.id))).statusCode).toBe(200);
      });
    });
  });
}
