import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type ApiChange, diffApiDescriptions, keptChanges, summariseChanges } from '../../../src/domain/api-changes/diff.js';
import { parseDocument } from '../../../src/domain/validator/index.js';
import { SPEC_FILES, SPECS_DIR } from '../../support/specs.js';

type Doc = Record<string, unknown>;

const oas3 = (paths: Doc, extra: Doc = {}): Doc => ({ openapi: '3.0.3', info: { title: 't', version: '1' }, paths, ...extra });
const swagger2 = (paths: Doc, extra: Doc = {}): Doc => ({ swagger: '2.0', info: { title: 't', version: '1' }, paths, ...extra });
/** An operation with an id and a 200 response, plus `fields`. */
const op = (operationId: string | undefined, fields: Doc = {}): Doc => ({ operationId, responses: { '200': { description: 'ok' } }, ...fields });
const query = (name: string, required?: boolean): Doc => ({ name, in: 'query', type: 'string', ...(required === undefined ? {} : { required }) });
const query3 = (name: string, required?: boolean): Doc => ({ name, in: 'query', schema: { type: 'string' }, ...(required === undefined ? {} : { required }) });

/** What a case table checks of each change: everything but the message. */
type Expected = Pick<ApiChange, 'kind' | 'breaking' | 'method' | 'path' | 'before' | 'after'>;
const shape = (changes: ApiChange[]): Expected[] =>
  changes.map(({ kind, breaking, method, path, before, after }) => ({ kind, breaking, method, path, before, after }));
const change = (kind: ApiChange['kind'], breaking: boolean, method: string | null, path: string | null, before: unknown, after: unknown): Expected => ({
  kind,
  breaking,
  method,
  path,
  before,
  after,
});

interface Case {
  name: string;
  before: Doc;
  after: Doc;
  expected: Expected[];
}

const pets = (get: Doc, more: Doc = {}): Doc => ({ '/pets': { get, ...more } });

// ---------------------------------------------------------------------------------------
// One table per kind; each has OpenAPI 3 and Swagger 2.0 rows.

const endpointCases: Case[] = [
  ...[
    ['OpenAPI 3', oas3],
    ['Swagger 2.0', swagger2],
  ].flatMap(([label, make]) => {
    const build = make as typeof oas3;
    return [
      {
        name: `${label}: endpoint added`,
        before: build(pets(op('listPets'))),
        after: build(pets(op('listPets'), { post: op('addPet') })),
        expected: [change('endpoint-added', false, 'POST', '/pets', null, { operationId: 'addPet' })],
      },
      {
        name: `${label}: endpoint removed`,
        before: build(pets(op('listPets'), { post: op('addPet') })),
        after: build(pets(op('listPets'))),
        expected: [change('endpoint-removed', true, 'POST', '/pets', { operationId: 'addPet' }, null)],
      },
      {
        name: `${label}: path parameter renamed (no parameter change reported)`,
        before: build({ '/pets/{id}': { parameters: [{ name: 'id', in: 'path', required: true, type: 'string' }], get: op('getPet') } }),
        after: build({ '/pets/{petId}': { parameters: [{ name: 'petId', in: 'path', required: true, type: 'string' }], get: op('getPet') } }),
        expected: [change('path-parameter-renamed', false, 'GET', '/pets/{petId}', '/pets/{id}', '/pets/{petId}')],
      },
      {
        name: `${label}: same path, other method is a removal and an addition`,
        before: build(pets(op('listPets'))),
        after: build({ '/pets': { put: op('listPets') } }),
        expected: [
          change('endpoint-added', false, 'PUT', '/pets', null, { operationId: 'listPets' }),
          change('endpoint-removed', true, 'GET', '/pets', { operationId: 'listPets' }, null),
        ],
      },
      {
        name: `${label}: operationId changed`,
        before: build(pets(op('listPets'))),
        after: build(pets(op('getPets'))),
        expected: [change('operation-id-changed', true, 'GET', '/pets', 'listPets', 'getPets')],
      },
      {
        name: `${label}: operationId added where there was none`,
        before: build(pets(op(undefined))),
        after: build(pets(op('listPets'))),
        expected: [change('operation-id-changed', true, 'GET', '/pets', null, 'listPets')],
      },
      {
        name: `${label}: blank operationId is as missing`,
        before: build(pets(op(undefined))),
        after: build(pets(op('  '))),
        expected: [],
      },
    ];
  }),
];

const parameterCases: Case[] = [
  ...[
    ['OpenAPI 3', oas3, query3],
    ['Swagger 2.0', swagger2, query],
  ].flatMap(([label, make, q]) => {
    const build = make as typeof oas3;
    const param = q as typeof query;
    const refs = label === 'OpenAPI 3' ? (p: Doc) => ({ components: { parameters: { Limit: p } } }) : (p: Doc) => ({ parameters: { Limit: p } });
    const refTo = label === 'OpenAPI 3' ? '#/components/parameters/Limit' : '#/parameters/Limit';
    return [
      {
        name: `${label}: required parameter added`,
        before: build(pets(op('listPets'))),
        after: build(pets(op('listPets', { parameters: [param('tenant', true)] }))),
        expected: [change('parameter-added', true, 'GET', '/pets', null, { name: 'tenant', in: 'query', required: true })],
      },
      {
        name: `${label}: optional parameter added`,
        before: build(pets(op('listPets', { parameters: [param('limit')] }))),
        after: build(pets(op('listPets', { parameters: [param('limit'), param('offset', false)] }))),
        expected: [change('parameter-added', false, 'GET', '/pets', null, { name: 'offset', in: 'query', required: false })],
      },
      {
        name: `${label}: parameter removed`,
        before: build(pets(op('listPets', { parameters: [param('limit', true), param('offset')] }))),
        after: build(pets(op('listPets', { parameters: [param('offset')] }))),
        expected: [change('parameter-removed', false, 'GET', '/pets', { name: 'limit', in: 'query', required: true }, null)],
      },
      {
        name: `${label}: parameter made required`,
        before: build(pets(op('listPets', { parameters: [param('limit')] }))),
        after: build(pets(op('listPets', { parameters: [param('limit', true)] }))),
        expected: [
          change(
            'parameter-made-required',
            true,
            'GET',
            '/pets',
            { name: 'limit', in: 'query', required: false },
            { name: 'limit', in: 'query', required: true },
          ),
        ],
      },
      {
        name: `${label}: parameter made optional`,
        before: build(pets(op('listPets', { parameters: [param('limit', true)] }))),
        after: build(pets(op('listPets', { parameters: [param('limit', false)] }))),
        expected: [
          change(
            'parameter-made-optional',
            false,
            'GET',
            '/pets',
            { name: 'limit', in: 'query', required: true },
            { name: 'limit', in: 'query', required: false },
          ),
        ],
      },
      {
        name: `${label}: the same name in another place is another parameter`,
        before: build(pets(op('listPets', { parameters: [param('limit')] }))),
        after: build(pets(op('listPets', { parameters: [{ ...param('limit'), in: 'header' }] }))),
        expected: [
          change('parameter-added', false, 'GET', '/pets', null, { name: 'limit', in: 'header', required: false }),
          change('parameter-removed', false, 'GET', '/pets', { name: 'limit', in: 'query', required: false }, null),
        ],
      },
      {
        name: `${label}: header names compare without case`,
        before: build(pets(op('listPets', { parameters: [{ ...param('X-Tenant'), in: 'header' }] }))),
        after: build(pets(op('listPets', { parameters: [{ ...param('x-tenant'), in: 'header' }] }))),
        expected: [],
      },
      {
        name: `${label}: path-level parameter made required reaches every method`,
        before: build({ '/pets': { parameters: [param('tenant')], get: op('listPets'), post: op('addPet') } }),
        after: build({ '/pets': { parameters: [param('tenant', true)], get: op('listPets'), post: op('addPet') } }),
        expected: ['GET', 'POST'].map((m) =>
          change(
            'parameter-made-required',
            true,
            m,
            '/pets',
            { name: 'tenant', in: 'query', required: false },
            { name: 'tenant', in: 'query', required: true },
          ),
        ),
      },
      {
        name: `${label}: a $ref parameter made required in its component`,
        before: build(pets(op('listPets', { parameters: [{ $ref: refTo }] })), refs(param('limit'))),
        after: build(pets(op('listPets', { parameters: [{ $ref: refTo }] })), refs(param('limit', true))),
        expected: [
          change(
            'parameter-made-required',
            true,
            'GET',
            '/pets',
            { name: 'limit', in: 'query', required: false },
            { name: 'limit', in: 'query', required: true },
          ),
        ],
      },
      {
        name: `${label}: an inline parameter replaced by an equal $ref one is no change`,
        before: build(pets(op('listPets', { parameters: [param('limit', true)] }))),
        after: build(pets(op('listPets', { parameters: [{ $ref: refTo }] })), refs(param('limit', true))),
        expected: [],
      },
    ];
  }),
];

const requestBodyCases: Case[] = [
  ...[true, false].flatMap((required) => [
    {
      name: `OpenAPI 3: request body added, required ${required}`,
      before: oas3({ '/pets': { post: op('addPet') } }),
      after: oas3({ '/pets': { post: op('addPet', { requestBody: { required, content: { 'application/json': {} } } }) } }),
      expected: [change('request-body-added', required, 'POST', '/pets', null, { required })],
    },
    {
      name: `Swagger 2.0: request body added, required ${required}`,
      before: swagger2({ '/pets': { post: op('addPet') } }),
      after: swagger2({ '/pets': { post: op('addPet', { parameters: [{ name: 'pet', in: 'body', required, schema: {} }] }) } }),
      expected: [change('request-body-added', required, 'POST', '/pets', null, { required })],
    },
  ]),
  {
    name: 'OpenAPI 3: request body removed',
    before: oas3({ '/pets': { post: op('addPet', { requestBody: { required: true, content: {} } }) } }),
    after: oas3({ '/pets': { post: op('addPet') } }),
    expected: [change('request-body-removed', false, 'POST', '/pets', { required: true }, null)],
  },
  {
    name: 'Swagger 2.0: request body removed',
    before: swagger2({ '/pets': { post: op('addPet', { parameters: [{ name: 'pet', in: 'body', schema: {} }] }) } }),
    after: swagger2({ '/pets': { post: op('addPet') } }),
    expected: [change('request-body-removed', false, 'POST', '/pets', { required: false }, null)],
  },
  {
    name: 'OpenAPI 3: request body made required',
    before: oas3({ '/pets': { post: op('addPet', { requestBody: { content: {} } }) } }),
    after: oas3({ '/pets': { post: op('addPet', { requestBody: { required: true, content: {} } }) } }),
    expected: [change('request-body-made-required', true, 'POST', '/pets', { required: false }, { required: true })],
  },
  {
    name: 'Swagger 2.0: form body made required (a formData field became required)',
    before: swagger2({ '/pets': { post: op('addPet', { parameters: [{ name: 'name', in: 'formData', type: 'string' }] }) } }),
    after: swagger2({ '/pets': { post: op('addPet', { parameters: [{ name: 'name', in: 'formData', type: 'string', required: true }] }) } }),
    expected: [change('request-body-made-required', true, 'POST', '/pets', { required: false }, { required: true })],
  },
  {
    name: 'OpenAPI 3: request body made optional',
    before: oas3({ '/pets': { post: op('addPet', { requestBody: { required: true, content: {} } }) } }),
    after: oas3({ '/pets': { post: op('addPet', { requestBody: { required: false, content: {} } }) } }),
    expected: [change('request-body-made-optional', false, 'POST', '/pets', { required: true }, { required: false })],
  },
  {
    name: 'Swagger 2.0: body made optional',
    before: swagger2({ '/pets': { post: op('addPet', { parameters: [{ name: 'pet', in: 'body', required: true, schema: {} }] }) } }),
    after: swagger2({ '/pets': { post: op('addPet', { parameters: [{ name: 'pet', in: 'body', schema: {} }] }) } }),
    expected: [change('request-body-made-optional', false, 'POST', '/pets', { required: true }, { required: false })],
  },
  {
    name: 'OpenAPI 3: a $ref request body made required in its component',
    before: oas3(
      { '/pets': { post: op('addPet', { requestBody: { $ref: '#/components/requestBodies/Pet' } }) } },
      { components: { requestBodies: { Pet: { content: {} } } } },
    ),
    after: oas3(
      { '/pets': { post: op('addPet', { requestBody: { $ref: '#/components/requestBodies/Pet' } }) } },
      { components: { requestBodies: { Pet: { required: true, content: {} } } } },
    ),
    expected: [change('request-body-made-required', true, 'POST', '/pets', { required: false }, { required: true })],
  },
  {
    name: 'Swagger 2.0: a $ref body parameter made required in its definition',
    before: swagger2(
      { '/pets': { post: op('addPet', { parameters: [{ $ref: '#/parameters/Pet' }] }) } },
      { parameters: { Pet: { name: 'pet', in: 'body', schema: {} } } },
    ),
    after: swagger2(
      { '/pets': { post: op('addPet', { parameters: [{ $ref: '#/parameters/Pet' }] }) } },
      { parameters: { Pet: { name: 'pet', in: 'body', required: true, schema: {} } } },
    ),
    expected: [change('request-body-made-required', true, 'POST', '/pets', { required: false }, { required: true })],
  },
];

const responseCases: Case[] = [
  ...[
    ['OpenAPI 3', oas3],
    ['Swagger 2.0', swagger2],
  ].flatMap(([label, make]) => {
    const build = make as typeof oas3;
    const responses = (...statuses: string[]): Doc => Object.fromEntries(statuses.map((s) => [s, { description: s }]));
    return [
      {
        name: `${label}: response removed`,
        before: build(pets(op('listPets', { responses: responses('200', '404') }))),
        after: build(pets(op('listPets', { responses: responses('200') }))),
        expected: [change('response-removed', true, 'GET', '/pets', '404', null)],
      },
      {
        name: `${label}: response added`,
        before: build(pets(op('listPets', { responses: responses('200') }))),
        after: build(pets(op('listPets', { responses: responses('200', 'default') }))),
        expected: [change('response-added', false, 'GET', '/pets', null, 'default')],
      },
      {
        name: `${label}: status ranges compare without case, x- keys are not responses`,
        before: build(pets(op('listPets', { responses: { ...responses('2xx'), 'x-note': {} } }))),
        after: build(pets(op('listPets', { responses: responses('2XX') }))),
        expected: [],
      },
    ];
  }),
];

const documentCases: Case[] = [
  {
    name: 'OpenAPI 3: auth type changed',
    before: oas3({}, { components: { securitySchemes: { key: { type: 'apiKey', in: 'header', name: 'X-Key' } } } }),
    after: oas3({}, { components: { securitySchemes: { oauth: { type: 'oauth2', flows: {} } } } }),
    expected: [change('auth-type-changed', true, null, null, 'apiKey', 'oauth2')],
  },
  {
    name: 'OpenAPI 3: auth added where there was none',
    before: oas3({}),
    after: oas3({}, { components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } } }),
    expected: [change('auth-type-changed', true, null, null, 'none', 'http')],
  },
  {
    name: 'Swagger 2.0: auth type changed',
    before: swagger2({}, { securityDefinitions: { basic: { type: 'basic' } } }),
    after: swagger2({}, { securityDefinitions: { key: { type: 'apiKey', in: 'header', name: 'X-Key' } } }),
    expected: [change('auth-type-changed', true, null, null, 'http', 'apiKey')],
  },
  {
    name: 'OpenAPI 3: the applied scheme changes with top-level security',
    before: oas3({}, { components: { securitySchemes: { key: { type: 'apiKey' }, oauth: { type: 'oauth2' } } } }),
    after: oas3({}, { security: [{ oauth: [] }], components: { securitySchemes: { key: { type: 'apiKey' }, oauth: { type: 'oauth2' } } } }),
    expected: [change('auth-type-changed', true, null, null, 'apiKey', 'oauth2')],
  },
  {
    name: 'OpenAPI 3: server changed',
    before: oas3({}, { servers: [{ url: 'https://api.example.com/v1' }] }),
    after: oas3({}, { servers: [{ url: 'https://api.example.com/v2' }] }),
    expected: [change('server-changed', true, null, null, 'https://api.example.com/v1', 'https://api.example.com/v2')],
  },
  {
    name: 'OpenAPI 3: server variable default changed',
    before: oas3({}, { servers: [{ url: 'https://{region}.example.com', variables: { region: { default: 'eu' } } }] }),
    after: oas3({}, { servers: [{ url: 'https://{region}.example.com', variables: { region: { default: 'us' } } }] }),
    expected: [change('server-changed', true, null, null, 'https://eu.example.com', 'https://us.example.com')],
  },
  {
    name: 'OpenAPI 3: server removed',
    before: oas3({}, { servers: [{ url: 'https://api.example.com' }] }),
    after: oas3({}),
    expected: [change('server-changed', true, null, null, 'https://api.example.com', null)],
  },
  {
    name: 'OpenAPI 3: a trailing slash is the same server',
    before: oas3({}, { servers: [{ url: 'https://api.example.com/v1/' }] }),
    after: oas3({}, { servers: [{ url: 'https://api.example.com/v1' }] }),
    expected: [],
  },
  {
    name: 'Swagger 2.0: host changed',
    before: swagger2({}, { host: 'api.example.com', basePath: '/v1' }),
    after: swagger2({}, { host: 'api2.example.com', basePath: '/v1' }),
    expected: [change('server-changed', true, null, null, 'https://api.example.com/v1', 'https://api2.example.com/v1')],
  },
  {
    name: 'Swagger 2.0: scheme changed',
    before: swagger2({}, { host: 'api.example.com', schemes: ['http'] }),
    after: swagger2({}, { host: 'api.example.com', schemes: ['https'] }),
    expected: [change('server-changed', true, null, null, 'http://api.example.com', 'https://api.example.com')],
  },
];

describe.each([
  ['endpoints and operationIds', endpointCases],
  ['parameters', parameterCases],
  ['request bodies', requestBodyCases],
  ['responses', responseCases],
  ['auth type and server', documentCases],
])('%s', (_group, cases) => {
  it.each(cases.map((c) => [c.name, c] as const))('%s', (_name, c) => {
    const changes = diffApiDescriptions(c.before, c.after);
    expect(shape(changes)).toEqual(c.expected);
    for (const ch of changes) expect(ch.message).toMatch(/^\S.*\.$/);
    expect(diffApiDescriptions(c.before, c.before)).toEqual([]);
    expect(diffApiDescriptions(c.after, c.after)).toEqual([]);
  });
});

describe('diffApiDescriptions', () => {
  it('finds nothing between a Swagger 2.0 document and its OpenAPI 3 equivalent', () => {
    const before = swagger2(
      {
        '/pets/{id}': {
          parameters: [{ name: 'id', in: 'path', required: true, type: 'string' }],
          put: op('updatePet', {
            parameters: [query('dryRun'), { name: 'pet', in: 'body', required: true, schema: {} }],
            responses: { '200': { description: 'ok', schema: {} }, '404': { description: 'gone' } },
          }),
        },
      },
      { host: 'api.example.com', basePath: '/v1', securityDefinitions: { basic: { type: 'basic' } } },
    );
    const after = oas3(
      {
        '/pets/{petId}': {
          parameters: [{ name: 'petId', in: 'path', required: true, schema: { type: 'string' } }],
          put: op('updatePet', {
            parameters: [query3('dryRun')],
            requestBody: { required: true, content: { 'application/json': { schema: {} } } },
            responses: { '200': { description: 'ok', content: {} }, '404': { description: 'gone' } },
          }),
        },
      },
      { servers: [{ url: 'https://api.example.com/v1' }], components: { securitySchemes: { basic: { type: 'http', scheme: 'basic' } } } },
    );
    expect(shape(diffApiDescriptions(before, after))).toEqual([change('path-parameter-renamed', false, 'PUT', '/pets/{petId}', '/pets/{id}', '/pets/{petId}')]);
  });

  it('orders document-wide changes first, then the newer endpoints in order, then removals in the older order', () => {
    const before = oas3(
      { '/a': { get: op('a'), delete: op('deleteA') }, '/b': { get: op('b') }, '/c': { get: op('c') } },
      { servers: [{ url: 'https://one.example' }] },
    );
    const after = oas3(
      { '/c': { get: op('c2'), post: op('newC') }, '/a': { get: op('a', { parameters: [query3('q', true)] }) } },
      { servers: [{ url: 'https://two.example' }], components: { securitySchemes: { k: { type: 'apiKey' } } } },
    );
    expect(diffApiDescriptions(before, after).map((c) => `${c.kind} ${c.method} ${c.path}`)).toEqual([
      'auth-type-changed null null',
      'server-changed null null',
      'operation-id-changed GET /c',
      'endpoint-added POST /c',
      'parameter-added GET /a',
      'endpoint-removed DELETE /a',
      'endpoint-removed GET /b',
    ]);
  });

  it('pairs templated paths exactly first, then in document order', () => {
    const before = oas3({ '/p/{x}': { get: op('x') } });
    const after = oas3({ '/p/{y}': { get: op('y') }, '/p/{x}': { get: op('x') } });
    expect(shape(diffApiDescriptions(before, after))).toEqual([change('endpoint-added', false, 'GET', '/p/{y}', null, { operationId: 'y' })]);
    expect(shape(diffApiDescriptions(after, before))).toEqual([change('endpoint-removed', true, 'GET', '/p/{y}', { operationId: 'y' }, null)]);
  });

  it('never throws on odd values below operations', () => {
    const odd = [
      { parameters: 'nope', requestBody: 'text', responses: [] },
      { parameters: [null, 1, 'x', { name: 3, in: 'query' }, { $ref: '#/nowhere' }, { $ref: 'other.yaml#/p' }], requestBody: { $ref: '#/loop' }, responses: 7 },
      { parameters: [{ $ref: '#/components/parameters/A' }], requestBody: null, responses: { '200': null } },
    ];
    const extra = {
      loop: { $ref: '#/loop' },
      components: { parameters: { A: { $ref: '#/components/parameters/B' }, B: { $ref: '#/components/parameters/A' } } },
    };
    for (const a of odd) {
      for (const b of odd) {
        expect(() => diffApiDescriptions(oas3({ '/x': { get: a } }, extra), oas3({ '/x': { get: b } }, extra))).not.toThrow();
        expect(() => diffApiDescriptions(swagger2({ '/x': { get: a } }, extra), swagger2({ '/x': { get: b } }, extra))).not.toThrow();
      }
      expect(diffApiDescriptions(oas3({ '/x': { get: a } }, extra), oas3({ '/x': { get: a } }, extra))).toEqual([]);
    }
  });

  it('throws the validator error for a root the validator refuses (callers pass accepted documents)', () => {
    expect(() => diffApiDescriptions({ openapi: 3 }, oas3({}))).toThrow(/openapi/);
    expect(() => diffApiDescriptions(oas3({}), null)).toThrow();
  });
});

describe('summariseChanges', () => {
  it('counts breaking and other changes', () => {
    expect(summariseChanges([])).toEqual({ breaking: 0, other: 0 });
    const changes = diffApiDescriptions(
      oas3({ '/a': { get: op('a') }, '/b': { get: op('b') } }),
      oas3({ '/a': { get: op('a2', { parameters: [query3('q')] }) }, '/c': { get: op('c') } }),
    );
    // operation-id-changed (breaking), parameter-added optional, endpoint-added, endpoint-removed (breaking)
    expect(summariseChanges(changes)).toEqual({ breaking: 2, other: 2 });
  });
});

// ---------------------------------------------------------------------------------------
// Real documents (test/fixtures/specs).

const load = (file: string): Doc => parseDocument({ bytes: readFileSync(SPECS_DIR + file), fileName: file }) as Doc;

describe('real API descriptions', () => {
  const files = SPEC_FILES.filter((f) => /\.(json|yaml)$/.test(f) && f !== 'kubernetes.json');

  it.each(files)('%s against itself: no change', (file) => {
    expect(diffApiDescriptions(load(file), load(file))).toEqual([]);
  });

  it('petstore3.json against a copy with an operation removed, a required query parameter added, the server changed', () => {
    const before = load('petstore3.json');
    const after = structuredClone(before) as any;
    delete after.paths['/pet/{petId}'].delete;
    after.paths['/pet/findByStatus'].get.parameters.push({ name: 'tenant', in: 'query', required: true, schema: { type: 'string' } });
    after.servers[0].url = 'https://petstore.example.com/api/v4';
    const changes = diffApiDescriptions(before, after);
    expect(shape(changes)).toEqual([
      change('server-changed', true, null, null, 'https://petstore3.swagger.io/api/v3', 'https://petstore.example.com/api/v4'),
      change('parameter-added', true, 'GET', '/pet/findByStatus', null, { name: 'tenant', in: 'query', required: true }),
      change('endpoint-removed', true, 'DELETE', '/pet/{petId}', { operationId: 'deletePet' }, null),
    ]);
    expect(summariseChanges(changes)).toEqual({ breaking: 3, other: 0 });
    // The other way round: the removal is an addition, the required parameter a removal (neither breaks a copilot).
    expect(shape(diffApiDescriptions(after, before)).map((c) => [c.kind, c.breaking])).toEqual([
      ['server-changed', true],
      ['parameter-removed', false],
      ['endpoint-added', false],
    ]);
  });

  it('openfaas-gateway.swagger2.yaml (Swagger 2.0) against a modified copy', () => {
    const before = load('openfaas-gateway.swagger2.yaml');
    const after = structuredClone(before) as any;
    delete after.paths['/system/functions'].post;
    const listing = after.paths['/system/functions'].get;
    listing.parameters = [...(listing.parameters ?? []), { name: 'namespace', in: 'query', required: true, type: 'string' }];
    after.host = 'gateway.example.com:8080';
    expect(shape(diffApiDescriptions(before, after))).toEqual([
      change('server-changed', true, null, null, null, 'http://gateway.example.com:8080/'),
      change('parameter-added', true, 'GET', '/system/functions', null, { name: 'namespace', in: 'query', required: true }),
      change('endpoint-removed', true, 'POST', '/system/functions', { operationId: null }, null),
    ]);
  });
});

// ---------------------------------------------------------------------------------------
// Property: what one direction calls removed, the other calls added.

const METHODS = ['get', 'put', 'post', 'delete', 'patch'];
const arbitraryPaths = fc.dictionary(
  fc.constantFrom('/a', '/a/{id}', '/a/{key}', '/b', '/b/{id}/c', '/b/{x}/c', '/c/{y}'),
  fc.dictionary(
    fc.constantFrom(...METHODS),
    fc.record({
      operationId: fc.option(fc.constantFrom('one', 'two'), { nil: undefined }),
      parameters: fc.array(fc.record({ name: fc.constantFrom('q', 'r'), in: fc.constantFrom('query', 'header'), required: fc.boolean() }), { maxLength: 2 }),
      responses: fc.constantFrom({}, { '200': {} }, { '200': {}, '404': {} }),
    }),
    { maxKeys: 3 },
  ),
  { maxKeys: 5 },
);
const arbitraryDocument = fc.tuple(fc.boolean(), arbitraryPaths).map(([v2, paths]) => (v2 ? swagger2(paths) : oas3(paths)));

describe('property', () => {
  it('every endpoint-removed of diff(b, a) is an endpoint-added of diff(a, b), and the other way round', () => {
    const endpoints = (changes: ApiChange[], kind: ApiChange['kind']) =>
      changes
        .filter((c) => c.kind === kind)
        .map((c) => `${c.method} ${c.path}`)
        .sort();
    fc.assert(
      fc.property(arbitraryDocument, arbitraryDocument, (a, b) => {
        const forward = diffApiDescriptions(a, b);
        const backward = diffApiDescriptions(b, a);
        expect(endpoints(forward, 'endpoint-added')).toEqual(endpoints(backward, 'endpoint-removed'));
        expect(endpoints(forward, 'endpoint-removed')).toEqual(endpoints(backward, 'endpoint-added'));
        expect(diffApiDescriptions(a, a)).toEqual([]);
      }),
      { numRuns: 300 },
    );
  });
});

describe('property: odd values', () => {
  it('never throws, whatever is below the operations, and finds nothing between a document and itself', () => {
    const anything = fc.anything({ maxDepth: 3, withNullPrototype: true });
    const operation = fc.record(
      { operationId: anything, parameters: fc.oneof(anything, fc.array(anything, { maxLength: 3 })), requestBody: anything, responses: anything },
      { requiredKeys: [] },
    );
    const document = fc
      .tuple(
        fc.boolean(),
        fc.dictionary(fc.constantFrom('/a', '/a/{id}', '/b'), fc.dictionary(fc.constantFrom(...METHODS), operation, { maxKeys: 2 }), { maxKeys: 3 }),
      )
      .map(([v2, paths]) => (v2 ? swagger2(paths) : oas3(paths)));
    fc.assert(
      fc.property(document, document, (a, b) => {
        const changes = diffApiDescriptions(a, b);
        for (const c of changes) expect(typeof c.message).toBe('string');
        expect(diffApiDescriptions(a, a)).toEqual([]);
      }),
      { numRuns: 300 },
    );
  });
});

describe('order within an endpoint', () => {
  it('lists parameters in the newer order then the removed ones, request body, added then removed responses', () => {
    const before = oas3({ '/x': { post: op('x', { parameters: [query3('gone1'), query3('keep'), query3('gone2')], responses: { '200': {}, '404': {} } }) } });
    const after = oas3({
      '/x': {
        post: op('x', {
          parameters: [query3('new1', true), query3('keep', true), query3('new2')],
          requestBody: { content: {} },
          responses: { '201': {}, '200': {} },
        }),
      },
    });
    expect(diffApiDescriptions(before, after).map((c) => `${c.kind} ${JSON.stringify(c.after ?? c.before)}`)).toEqual([
      'parameter-added {"name":"new1","in":"query","required":true}',
      'parameter-made-required {"name":"keep","in":"query","required":true}',
      'parameter-added {"name":"new2","in":"query","required":false}',
      'parameter-removed {"name":"gone1","in":"query","required":false}',
      'parameter-removed {"name":"gone2","in":"query","required":false}',
      'request-body-added {"required":false}',
      'response-added "201"',
      'response-removed "404"',
    ]);
  });
});

describe('keptChanges', () => {
  const c = (breaking: boolean, n: number): ApiChange => ({
    kind: 'endpoint-added',
    breaking,
    method: 'GET',
    path: `/${n}`,
    message: '',
    before: null,
    after: null,
  });
  it('keeps every change up to the bound; past it the breaking ones first, then the others, each in its place, with the counts of all', () => {
    const all = [c(false, 0), c(true, 1), c(false, 2), c(true, 2), c(false, 4), c(true, 5)];
    expect(keptChanges(all, 6)).toEqual({ changes: all, breaking: 3, other: 3 });
    expect(keptChanges(all, 4)).toEqual({ changes: [all[0], all[1], all[3], all[5]], breaking: 3, other: 3 });
    expect(keptChanges(all, 2)).toEqual({ changes: [all[1], all[3]], breaking: 3, other: 3 });
  });
});
