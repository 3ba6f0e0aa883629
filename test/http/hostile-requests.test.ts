/**
 * Every route, hostile input (DESIGN §8: nothing a client sends produces a 5xx, and bad input is
 * answered alike on SQLite and PostgreSQL). A fixed, seeded sample of requests walks every
 * operation of the service's own /backend/openapi.json with the admin key: path parameters that
 * are real ids or hostile text (NUL, broken UTF-8, lone surrogates, numbers out of range, long
 * text), query parameters of the same kinds (repeated too), bodies of the operation's own
 * fields holding values of every JSON type, malformed JSON and YAML, odd media types, odd
 * methods and headers. Each answer is below 500, and each refusal is the contract's error body
 * with nothing internal in it. Then the two databases' answers are compared: the same status
 * and error code for every request.
 *
 * Every URL a request carries is refused before any connection (a private address, a scheme
 * that is not http(s)) or names a closed port on loopback: no traffic leaves the machine.
 */
import fc from 'fast-check';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, keyIdOf, type TestApp } from '../support/app.js';
import { DIALECTS } from '../support/databases.js';
import { call, createCopilot, expectNoLeaks, kbPath, swaggerPath } from '../support/http.js';

const SEED = 20261128;
/** Requests per database (about a second's worth); HOSTILE_REQUESTS asks for more. */
const REQUESTS = Number(process.env.HOSTILE_REQUESTS ?? 600);

interface Operation {
  method: string;
  path: string;
  pathParams: string[];
  queryParams: string[];
  bodyFields: string[];
  mediaTypes: string[];
}

/** A request, with symbolic ids (`@copilot`, …) that each database's run replaces by its own. */
interface Hostile {
  method: string;
  url: string;
  headers: Record<string, string>;
  payload?: string;
}

// Text already encoded for a URL: broken UTF-8, an encoded NUL and surrogate, numbers out of range, …
const RAW_TEXT = [
  '',
  '%20',
  '%00',
  'a%00b',
  '%ED%A0%80',
  '%FF',
  '%C0%AF',
  '%',
  '%zz',
  '..%2F..%2Fetc',
  '-1',
  '0',
  '1.5',
  '1e309',
  'NaN',
  'Infinity',
  '9'.repeat(40),
  '0x10',
  'null',
  'true',
  '%5B%5D',
  '%F0%9F%92%A9',
  "'%3B%20drop%20table%20copilots%3B--",
  'x'.repeat(3000),
  '00000000-0000-0000-0000-000000000000',
  '@copilot',
  '@COPILOT',
  '@key',
  '@crawl',
];

// JSON values for a body's fields: every type, and text a database or a URL parser may mishandle.
const VALUES: unknown[] = [
  null,
  true,
  false,
  0,
  -1,
  1.5,
  1e308,
  -1e308,
  2 ** 53 + 1,
  '',
  ' ',
  'x'.repeat(20_000),
  'a\u0000b',
  '\ud800',
  'a\udfffb',
  '\u202e\u0007',
  [],
  {},
  [[[[]]]],
  { a: { b: { c: {} } } },
  ['x', 1, null],
  Array.from({ length: 3000 }, (_, i) => `http://127.0.0.1:1/p${i}`),
  'http://127.0.0.1:1/x',
  'http://[::1]:1/x',
  'http://10.0.0.1/x',
  'http://169.254.169.254/latest/meta-data',
  'http://0.0.0.0/',
  'file:///etc/passwd',
  'javascript:alert(1)',
  'ftp://127.0.0.1:1/',
  ['http://127.0.0.1:1/a', 'http://10.1.1.1/b'],
  ['copilots:read', 'nope'],
  ['*'],
  '@copilot',
  ['@copilot'],
];

// Whole bodies that are not what any route takes.
const RAW_BODIES = [
  '',
  '{',
  '[',
  '{"a":',
  'null',
  '"text"',
  '123',
  '{"name":"\\ud800"}',
  '{"name":"a\\u0000b"}',
  '{"name":"a","name":"b"}',
  '{"__proto__":{"admin":true},"name":"p"}',
  '{"constructor":{"prototype":{"x":1}}}',
  `${'['.repeat(5000)}${']'.repeat(5000)}`,
  `{"links":[${'"http://127.0.0.1:1/x",'.repeat(2000)}"http://127.0.0.1:1/y"]}`,
  'openapi: 3.0.0\ninfo: {title: t, version: "1"}\npaths: {"/a": {get: {responses: {"200": {description: ok}}}}}',
  'a: &a [*a, *a]\nb: *a',
  '!!js/function "function () {}"',
  'openapi: 3.0.0\npaths: 1',
  '- - - -\n\t- x',
  '\u0000\u0001\u0002',
  '\ufeff{"name":"bom"}',
  '--x\r\nContent-Disposition: form-data; name="file"; filename="a.json"\r\n\r\n{"swagger":"2.0"}\r\n--x--\r\n',
  '--x\r\nContent-Disposition: form-data; name="file"\r\n\r\n',
];

const MEDIA_TYPES = [
  'application/json',
  'application/json; charset=utf-16',
  'application/json; charset=latin1',
  'text/plain',
  'application/yaml',
  'multipart/form-data; boundary=x',
  'multipart/form-data',
  'application/x-www-form-urlencoded',
  'application/octet-stream',
  '*/*',
  'application/',
];

/** A valid body per operation that takes one, so that a hostile field meets the checks behind the schema's. */
const VALID_BODIES: Record<string, Record<string, unknown>> = {
  'POST /backend/api/copilots': { name: 'Hostile', swagger_url: 'http://127.0.0.1:1/openapi.json' },
  'PATCH /backend/api/copilot/{id}': { name: 'Renamed', smart_sync: 1 },
  'PUT /backend/api/copilot/{id}/swagger': { openapi: '3.0.0', info: { title: 't', version: '1' }, paths: {} },
  'POST /backend/api/keys': { scopes: ['copilots:read'], bots: ['@copilot'] },
  'POST /backend/knowledgebase/b/{bot_id}': { links: ['http://127.0.0.1:1/a'] },
  'DELETE /backend/knowledgebase/b/{bot_id}': { links: ['http://127.0.0.1:1/a'] },
  'POST /backend/knowledgebase/b/{bot_id}/crawl': { url: 'http://127.0.0.1:1/docs/', max_pages: 5 },
};

const ODD_METHODS = ['OPTIONS', 'HEAD', 'TRACE', 'PATCH', 'PUT', 'DELETE', 'POST'];

const ODD_HEADERS: Array<Record<string, string>> = [
  {},
  { accept: 'application/xml' },
  { accept: 'text/html;q=0, */*;q=0' },
  { 'accept-encoding': 'br;q=2, gzip;q=-1' },
  { 'if-none-match': '*' },
  { 'if-none-match': '"\u00ff"' },
  { 'if-modified-since': 'yesterday' },
  { range: 'bytes=0-1' },
  { 'x-request-id': 'r'.repeat(2000) },
  { 'x-forwarded-for': '1.2.3.4, ::ffff:10.0.0.1, bogus' },
  { 'content-encoding': 'gzip' },
  { 'transfer-encoding': 'chunked' },
  { 'x-http-method-override': 'DELETE' },
];

/** The operations of /backend/openapi.json: method, path template, parameters, body fields and media types. */
function operationsOf(doc: { paths: Record<string, Record<string, any>>; components?: { schemas?: Record<string, any> } }): Operation[] {
  const ops: Operation[] = [];
  const schemaOf = (schema: any): any => (typeof schema?.$ref === 'string' ? doc.components?.schemas?.[schema.$ref.split('/').pop()] : schema);
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      const params = (op.parameters ?? []) as Array<{ in: string; name: string }>;
      const content = (op.requestBody?.content ?? {}) as Record<string, { schema?: unknown }>;
      const fields = new Set<string>();
      for (const media of Object.values(content)) for (const name of Object.keys(schemaOf(media.schema)?.properties ?? {})) fields.add(name);
      ops.push({
        method: method.toUpperCase(),
        path,
        pathParams: params.filter((p) => p.in === 'path').map((p) => p.name),
        queryParams: params.filter((p) => p.in === 'query').map((p) => p.name),
        bodyFields: [...fields],
        mediaTypes: Object.keys(content),
      });
    }
  }
  return ops;
}

/** The seeded sample of hostile requests over these operations. */
function hostileRequests(ops: Operation[]): Hostile[] {
  const text = fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(...RAW_TEXT) },
    { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 40 }).map(encodeURIComponent) },
  );
  const value = fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...VALUES) }, { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) });
  const request = fc
    .record({
      op: fc.nat(ops.length - 1),
      pathValues: fc.array(text, { minLength: 4, maxLength: 4 }),
      query: fc.array(fc.tuple(fc.nat(9), text), { maxLength: 4 }),
      bodyKind: fc.constantFrom('fields', 'fields', 'fields', 'raw', 'json', 'none'),
      fields: fc.array(fc.tuple(fc.nat(19), value), { maxLength: 3 }),
      raw: fc.constantFrom(...RAW_BODIES),
      json: fc.jsonValue({ maxDepth: 4 }),
      media: fc.option(fc.constantFrom(...MEDIA_TYPES), { nil: undefined }),
      oddMethod: fc.oneof({ weight: 9, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fc.constantFrom(...ODD_METHODS) }),
      headers: fc.constantFrom(...ODD_HEADERS),
    })
    .map((r): Hostile => {
      const op = ops[r.op]!;
      let path = op.path;
      // The copilot every request targets is deleted by none of them: another one is.
      const destroys = op.method === 'DELETE' || op.path.endsWith('/purge');
      op.pathParams.forEach((name, i) => {
        path = path.replace(`{${name}}`, destroys && r.pathValues[i] === '@copilot' ? '@victim' : r.pathValues[i]!);
      });
      // A declared parameter (or one nobody declared), maybe twice.
      const query = r.query.map(([n, v]) => `${op.queryParams[n % Math.max(1, op.queryParams.length + 1)] ?? 'unknown'}=${v}`);
      const url = query.length > 0 ? `${path}?${query.join('&')}` : path;
      let payload: string | undefined;
      if (r.bodyKind === 'fields') {
        // The operation's own valid body, with some fields replaced or added.
        const body: Record<string, unknown> = { ...VALID_BODIES[`${op.method} ${op.path}`] };
        for (const [n, v] of r.fields) body[op.bodyFields[n % Math.max(1, op.bodyFields.length)] ?? 'unknown'] = v;
        payload = JSON.stringify(body);
      } else if (r.bodyKind === 'raw') payload = r.raw;
      else if (r.bodyKind === 'json') payload = JSON.stringify(r.json);
      const media = r.media ?? op.mediaTypes[0] ?? (payload !== undefined ? 'application/json' : undefined);
      return {
        method: r.oddMethod ?? op.method,
        url,
        headers: { ...r.headers, ...(media !== undefined && payload !== undefined && { 'content-type': media }) },
        ...(payload !== undefined && { payload }),
      };
    });
  return fc.sample(request, { seed: SEED, numRuns: REQUESTS });
}

/** Each database's outcome per request: `status error_code`. */
const outcomes = new Map<string, string[]>();

for (const dialect of DIALECTS) {
  describe(`hostile requests to every route (${dialect})`, () => {
    let t!: TestApp;
    const ids: Record<string, string> = {};
    beforeAll(async () => {
      t = await buildTestApp(dialect);
      const copilot = await createCopilot(t, { name: 'Target' });
      ids.copilot = copilot.id;
      ids.victim = (await createCopilot(t, { name: 'Victim' })).id;
      const put = await call(t, 'PUT', swaggerPath(copilot.id), {
        payload: { openapi: '3.0.0', info: { title: 't', version: '1' }, paths: { '/a': { get: { responses: { 200: { description: 'ok' } } } } } },
      });
      expect(put.statusCode, put.body).toBe(200);
      const links = await call(t, 'POST', kbPath(copilot.id), { payload: { links: ['http://127.0.0.1:1/page'] } });
      expect(links.statusCode, links.body).toBeLessThan(300);
      const crawl = await call(t, 'POST', `${kbPath(copilot.id)}/crawl`, { payload: { url: 'http://127.0.0.1:1/docs/' } });
      expect(crawl.statusCode, crawl.body).toBeLessThan(300);
      ids.crawl = crawl.json().crawl_id;
      // Another key (never the admin key the requests use, which a DELETE would revoke).
      ids.key = keyIdOf(await t.key(['copilots:read']));
    }, 60_000);
    afterAll(async () => {
      await t?.close();
    });

    it('answers every one below 500, each refusal in the contract’s error body', async () => {
      const doc = (await call(t, 'GET', '/backend/openapi.json')).json();
      const ops = operationsOf(doc);
      const requests = hostileRequests(ops);
      const failures: string[] = [];
      const seen: string[] = [];
      for (const r of requests) {
        const url = r.url.replace(/@(copilot|COPILOT|victim|key|crawl)/g, (_, name: string) => (name === 'COPILOT' ? ids.copilot!.toUpperCase() : ids[name]!));
        const payload = r.payload?.replace(/@copilot/g, ids.copilot!);
        let res: LightMyRequestResponse;
        try {
          res = await t.app.inject({
            method: r.method as InjectOptions['method'],
            url,
            headers: { authorization: t.admin, ...r.headers },
            ...(payload !== undefined && { payload }),
          });
        } catch (err) {
          failures.push(`${r.method} ${url.slice(0, 200)}: inject threw ${String(err)}`);
          seen.push('threw');
          continue;
        }
        const where = `${r.method} ${url.slice(0, 200)} ${JSON.stringify(r.headers).slice(0, 200)} ${String(payload).slice(0, 200)}`;
        let code = '';
        if (res.statusCode >= 500) failures.push(`${res.statusCode} for ${where}: ${res.body.slice(0, 300)}`);
        if (res.statusCode >= 400 && r.method !== 'HEAD') {
          try {
            const body = res.json() as Record<string, unknown>;
            code = String(body.error);
            const keys = Object.keys(body);
            if (keys[0] !== 'error' || keys[1] !== 'message' || keys.length > 3 || (keys.length === 3 && keys[2] !== 'details')) {
              failures.push(`${res.statusCode} body not the error shape for ${where}: ${res.body.slice(0, 300)}`);
            }
            expectNoLeaks(res.body);
          } catch (err) {
            failures.push(`${res.statusCode} for ${where}: ${String(err).slice(0, 300)}`);
          }
        }
        seen.push(`${res.statusCode} ${code}`.trim());
      }
      outcomes.set(dialect, seen);
      if (process.env.HOSTILE_STATS) {
        // How the answers spread (a run of many: HOSTILE_REQUESTS=20000 HOSTILE_STATS=1).
        const counts = new Map<string, number>();
        for (const outcome of seen) counts.set(outcome, (counts.get(outcome) ?? 0) + 1);
        console.log([...counts].sort((x, y) => y[1] - x[1]));
      }
      expect(failures).toEqual([]);
    }, 120_000);
  });
}

if (DIALECTS.length > 1) {
  describe('hostile requests on both databases', () => {
    it('are answered alike: the same status and error code for each', () => {
      const [a, b] = DIALECTS.map((d) => outcomes.get(d));
      expect(a, 'each database’s run completed').toBeDefined();
      expect(b, 'each database’s run completed').toBeDefined();
      const differ = a!.flatMap((x, i) => (x === b![i] ? [] : [`request ${i}: ${DIALECTS[0]} ${x}, ${DIALECTS[1]} ${b![i]}`]));
      expect(differ).toEqual([]);
    });
  });
}
