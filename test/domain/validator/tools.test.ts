import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseDocument, validateDocument } from '../../../src/domain/validator/index.js';
import { DESCRIPTION_MAX, MAX_SCHEMA_DEPTH, SCHEMA_KEY, TOOL_PLATFORM_IDS, toolDefinitions, type ToolPlatform } from '../../../src/domain/validator/tools.js';
import { applyOverlay, fixesOverlay } from '../../../src/domain/validator/overlay.js';
import { expectAppError, FIXTURES, source } from './helpers.js';
import { SPEC_FILES, SPECS_DIR } from '../../support/specs.js';
import { toolSchemaAjv } from '../../support/tool-schemas.js';

/** Tool definitions (issue 18 B): names, descriptions, input schemas, for every platform. */

type Json = Record<string, any>;
const info = { title: 't', version: '1' };
const SERVER = [{ url: 'https://api.example.com' }];
const oas3 = (paths: Json, extra: Json = {}) => ({ openapi: '3.0.3', info, servers: SERVER, paths, ...extra });
const oas31 = (paths: Json, extra: Json = {}) => ({ openapi: '3.1.0', info, servers: SERVER, paths, ...extra });
const swagger2 = (paths: Json, extra: Json = {}) => ({ swagger: '2.0', info, host: 'api.example.com', schemes: ['https'], paths, ...extra });
const parse = (doc: unknown) => parseDocument(source(JSON.stringify(doc), 'x.json'));
const tools = (doc: unknown, platform: ToolPlatform = 'openai') => toolDefinitions(parse(doc), platform);

const NAME_PATTERN: Record<ToolPlatform, RegExp> = {
  openai: /^[A-Za-z0-9_-]{1,64}$/,
  anthropic: /^[A-Za-z0-9_-]{1,128}$/,
  gemini: /^[A-Za-z_][A-Za-z0-9_.-]{0,63}$/,
  mcp: /^[A-Za-z0-9_.-]{1,128}$/,
};

const SPECS = SPEC_FILES.map((f) => ({ label: f, path: SPECS_DIR + f, file: f }));

function readSpec(path: string, file: string): unknown | null {
  try {
    return parseDocument({ bytes: readFileSync(path), fileName: file });
  } catch {
    return null; // a truncated corpus file (kubernetes.json): nothing to generate
  }
}

describe('every spec of the corpus, every platform', () => {
  it.each(SPECS)('$label: one tool per endpoint, names valid and unique, every schema compiles', ({ path, file }) => {
    const doc = readSpec(path, file);
    if (doc === null) return;
    const endpoints = validateDocument(doc).all_endpoints;
    for (const platform of TOOL_PLATFORM_IDS) {
      const list = toolDefinitions(doc, platform);
      expect(list).toHaveLength(endpoints.length);
      const ajv = toolSchemaAjv(platform);
      const names = new Set<string>();
      list.forEach((tool, i) => {
        expect(Object.keys(tool)).toEqual(['name', 'description', SCHEMA_KEY[platform], 'endpoint', 'method', 'path']);
        expect(tool.name, `${platform} ${tool.name}`).toMatch(NAME_PATTERN[platform]);
        names.add(tool.name);
        expect(tool.description.length).toBeLessThanOrEqual(DESCRIPTION_MAX[platform]);
        expect(tool.description.trim()).not.toBe('');
        expect([tool.endpoint, tool.method, tool.path]).toEqual([i, endpoints[i]!.type, endpoints[i]!.path]);
        const schema = (tool as Json)[SCHEMA_KEY[platform]];
        expect(schema.type).toBe('object');
        expect(() => ajv.compile(schema), `${platform} ${tool.name}`).not.toThrow();
        if (platform === 'gemini') expectGeminiSubset(schema);
      });
      expect(names.size).toBe(list.length);
    }
  });
});

/** The fields of Gemini's `Schema` (docs/platform-rules.md) but propertyOrdering, which is never written. */
const GEMINI_KEYWORDS = new Set([
  ...['type', 'format', 'title', 'description', 'nullable', 'enum', 'items', 'properties', 'required', 'anyOf', 'default', 'example'],
  ...['pattern', 'minimum', 'maximum', 'minLength', 'maxLength', 'minItems', 'maxItems', 'minProperties', 'maxProperties'],
]);
function expectGeminiSubset(schema: Json): void {
  for (const key of Object.keys(schema)) expect(GEMINI_KEYWORDS.has(key), key).toBe(true);
  expect(typeof schema.type === 'string' || schema.type === undefined).toBe(true);
  expect(schema.nullable === true || schema.nullable === undefined).toBe(true);
  if (schema.enum) expect(schema.enum.every((v: unknown) => typeof v === 'string')).toBe(true);
  if (schema.items) expectGeminiSubset(schema.items);
  for (const p of Object.values(schema.properties ?? {})) expectGeminiSubset(p as Json);
  for (const m of schema.anyOf ?? []) expectGeminiSubset(m as Json);
}

describe('names', () => {
  it('keeps a valid operationId; a missing one gets the name operation-id-missing proposes', () => {
    const doc = oas3({ '/pets/{petId}': { get: { operationId: 'getPet' }, delete: {} } });
    const fix = validateDocument(parse(doc)).validations.findings.find((f) => f.rule === 'operation-id-missing')!.fix;
    expect(fix).toBe('delete_pets_by_petId');
    for (const platform of TOOL_PLATFORM_IDS) expect(tools(doc, platform).map((t) => t.name)).toEqual(['getPet', 'delete_pets_by_petId']);
  });

  it('renames an id only on the platforms whose rule it breaks', () => {
    const doc = oas3({ '/a': { get: { operationId: 'pets.list' }, post: { operationId: 'list pets' } } });
    expect(tools(doc, 'openai').map((t) => t.name)).toEqual(['pets_list', 'list_pets']);
    expect(tools(doc, 'anthropic').map((t) => t.name)).toEqual(['pets_list', 'list_pets']);
    expect(tools(doc, 'mcp').map((t) => t.name)).toEqual(['pets.list', 'list_pets']);
    expect(tools(doc, 'gemini').map((t) => t.name)).toEqual(['pets.list', 'list_pets']);
  });

  it('caps long ids at 64 for openai and gemini, keeps them to 128 for anthropic and mcp', () => {
    const long = `op${'x'.repeat(98)}`;
    const doc = oas3({ '/a': { get: { operationId: long } } });
    expect(tools(doc, 'openai')[0]!.name).toBe(long.slice(0, 64));
    expect(tools(doc, 'gemini')[0]!.name).toBe(long.slice(0, 64));
    expect(tools(doc, 'anthropic')[0]!.name).toBe(long);
    expect(tools(doc, 'mcp')[0]!.name).toBe(long);
  });

  it('duplicates: the first keeps its id, the others get unique names', () => {
    const doc = oas3({ '/a': { get: { operationId: 'list' }, post: { operationId: 'list' } }, '/b': { get: { operationId: 'list' } } });
    const names = tools(doc).map((t) => t.name);
    expect(names[0]).toBe('list');
    expect(new Set(names).size).toBe(3);
  });
});

describe('descriptions', () => {
  it('summary and description, one when equal, else METHOD path', () => {
    const doc = oas3({
      '/a': {
        get: { operationId: 'a', summary: 'List pets', description: 'Returns every pet.' },
        post: { operationId: 'b', summary: 'Same.', description: 'Same.' },
        put: { operationId: 'c' },
        patch: { operationId: 'd', description: 'Only a description' },
      },
    });
    expect(tools(doc).map((t) => t.description)).toEqual(['List pets. Returns every pet.', 'Same.', 'PUT /a', 'Only a description']);
  });

  it('is cut as the platform requires', () => {
    const text = 'A sentence about pets. '.repeat(300);
    const doc = oas3({ '/a': { get: { operationId: 'a', description: text } } });
    for (const platform of TOOL_PLATFORM_IDS) {
      const d = tools(doc, platform)[0]!.description;
      expect(d.length).toBeLessThanOrEqual(DESCRIPTION_MAX[platform]);
      expect(d.length).toBeGreaterThan(DESCRIPTION_MAX[platform] / 2);
    }
  });
});

describe('input schemas', () => {
  const pets = {
    components: {
      schemas: {
        Pet: {
          type: 'object',
          required: ['id', 'name'],
          properties: {
            id: { type: 'integer', format: 'int64', readOnly: true },
            name: { type: 'string', example: 'Rex', nullable: true },
            age: { type: 'integer', minimum: 0, exclusiveMinimum: true },
            tag: { type: 'string', pattern: '[\\w-.]+', xml: { name: 'tag' }, 'x-internal': true },
            parent: { $ref: '#/components/schemas/Pet' },
            owner: { $ref: '#/components/schemas/Nowhere' },
            remote: { $ref: 'other.yaml#/Pet' },
          },
          discriminator: { propertyName: 'name' },
        },
      },
      parameters: { Limit: { name: 'limit', in: 'query', schema: { type: 'integer' }, description: 'At most this many' } },
    },
  };

  it('path, query and header parameters, the JSON body under body, refs resolved and cut', () => {
    const doc = oas3(
      {
        '/pets/{petId}': {
          parameters: [{ name: 'petId', in: 'path', schema: { type: 'string' } }],
          put: {
            operationId: 'updatePet',
            parameters: [
              { $ref: '#/components/parameters/Limit' },
              { name: 'X-Trace', in: 'header', schema: { type: 'string' } },
              { name: 'Accept', in: 'header', schema: { type: 'string' } },
              { name: 'session', in: 'cookie', schema: { type: 'string' } },
              { name: 'body', in: 'query', required: true, schema: { type: 'boolean' } },
            ],
            requestBody: {
              required: true,
              description: 'The pet',
              content: { 'application/xml': {}, 'application/json': { schema: { $ref: '#/components/schemas/Pet' } } },
            },
          },
        },
      },
      pets,
    );
    const schema = tools(doc)[0]!.parameters as Json;
    expect(Object.keys(schema.properties)).toEqual(['petId', 'limit', 'X-Trace', 'query_body', 'body']);
    expect(schema.required).toEqual(['petId', 'query_body', 'body']);
    expect(schema.additionalProperties).toBe(false);
    expect(schema.properties.limit).toEqual({ type: 'integer', description: 'At most this many' });
    const body = schema.properties.body;
    expect(body.description).toBe('The pet');
    expect(Object.keys(body.properties)).toEqual(['name', 'age', 'tag', 'parent', 'owner', 'remote']); // id is read-only
    expect(body.required).toEqual(['name']);
    expect(body.properties.name).toEqual({ type: ['string', 'null'], examples: ['Rex'] });
    expect(body.properties.age).toEqual({ type: 'integer', exclusiveMinimum: 0 });
    expect(body.properties.tag).toEqual({ type: 'string' }); // not a valid `u` pattern; xml, x- dropped
    expect(body.properties.parent.description).toMatch(/^Recursive reference to #\/components\/schemas\/Pet/);
    expect(body.properties.owner.description).toMatch(/^Unresolved reference/);
    expect(body.properties.remote.description).toMatch(/^External reference other.yaml#\/Pet/);
    expect(body.discriminator).toBeUndefined();
    expect(() => toolSchemaAjv('openai').compile(schema)).not.toThrow();
  });

  it('an operation without parameters takes an empty object', () => {
    const doc = oas3({ '/a': { get: { operationId: 'a' } } });
    expect(tools(doc, 'mcp')[0]!.inputSchema).toEqual({ type: 'object', properties: {}, additionalProperties: false });
    expect(tools(doc, 'gemini')[0]!.parameters).toEqual({ type: 'object', properties: {} });
  });

  it('Swagger 2.0: body and formData parameters become the body; x-nullable, type file', () => {
    const doc = swagger2(
      {
        '/pets': {
          post: {
            operationId: 'addPet',
            parameters: [{ $ref: '#/parameters/Body' }, { name: 'q', in: 'query', type: 'array', items: { type: 'string' } }, { $ref: '#/parameters/Limit' }],
          },
        },
        '/upload': {
          post: { operationId: 'upload', consumes: ['multipart/form-data'], parameters: [{ name: 'file', in: 'formData', type: 'file', required: true }] },
        },
      },
      {
        parameters: {
          Body: { name: 'pet', in: 'body', required: true, schema: { $ref: '#/definitions/Pet' } },
          Limit: { name: 'limit', in: 'query', type: 'integer', maximum: 100, exclusiveMaximum: true, collectionFormat: 'csv', description: 'Most' },
        },
        definitions: { Pet: { type: 'object', properties: { name: { type: 'string', 'x-nullable': true } } } },
      },
    );
    const [add, upload] = tools(doc, 'anthropic');
    const addSchema = add!.input_schema as Json;
    expect(addSchema.properties.q).toEqual({ type: 'array', items: { type: 'string' } });
    expect(addSchema.properties.limit).toEqual({ type: 'integer', exclusiveMaximum: 100, description: 'Most' });
    expect(addSchema.properties.body).toEqual({ type: 'object', properties: { name: { type: ['string', 'null'] } } });
    expect(addSchema.required).toEqual(['body']);
    expect((upload!.input_schema as Json).properties.body.properties.file).toEqual({ type: 'string', format: 'binary' });
  });

  it('OpenAPI 3.1: type arrays, a description beside a $ref, examples', () => {
    const doc = oas31(
      {
        '/a': {
          post: { operationId: 'a', requestBody: { content: { 'application/json': { schema: { $ref: '#/components/schemas/A', description: 'Beside' } } } } },
        },
      },
      { components: { schemas: { A: { type: ['string', 'null'], examples: ['x', { no: 1 }] } } } },
    );
    expect((tools(doc)[0]!.parameters as Json).properties.body).toEqual({ type: ['string', 'null'], examples: ['x'], description: 'Beside' });
  });

  it('a property whose $ref carries readOnly beside it is left out of the request, as an inline readOnly one is', () => {
    const doc = oas31(
      {
        '/a': {
          post: {
            operationId: 'a',
            requestBody: {
              content: {
                'application/json': {
                  schema: {
                    type: 'object',
                    properties: { id: { $ref: '#/components/schemas/Id', readOnly: true }, name: { $ref: '#/components/schemas/Id' } },
                  },
                },
              },
            },
          },
        },
      },
      { components: { schemas: { Id: { type: 'string' } } } },
    );
    expect(Object.keys((tools(doc)[0]!.parameters as Json).properties.body.properties)).toEqual(['name']);
  });

  it('nesting past the depth bound is cut, with a note', () => {
    let schema: Json = { type: 'string' };
    for (let i = 0; i < 20; i++) schema = { type: 'object', properties: { next: schema } };
    const doc = oas3({ '/a': { post: { operationId: 'a', requestBody: { content: { 'application/json': { schema } } } } } });
    let node = (tools(doc)[0]!.parameters as Json).properties.body;
    let levels = 1;
    while (node.properties?.next) {
      node = node.properties.next;
      levels++;
    }
    // The body is level 1: levels 1 to 10 are expanded, the 11th is the note.
    expect(levels).toBe(MAX_SCHEMA_DEPTH + 1);
    expect(node).toEqual({ description: `Omitted: nested deeper than ${MAX_SCHEMA_DEPTH} levels.` });
  });

  it('a schema fan-out (each level referencing the next ten times) stays bounded', () => {
    const schemas: Json = {};
    for (let i = 0; i < 30; i++) {
      const properties: Json = {};
      for (let k = 0; k < 10; k++) properties[`p${k}`] = { $ref: `#/components/schemas/S${i + 1}` };
      schemas[`S${i}`] = { type: 'object', description: 'A level of the fan-out', properties };
    }
    schemas.S30 = { type: 'string' };
    const paths: Json = {};
    for (let i = 0; i < 50; i++)
      paths[`/p${i}`] = { post: { operationId: `p${i}`, requestBody: { content: { 'application/json': { schema: { $ref: '#/components/schemas/S0' } } } } } };
    const doc = parse(oas3(paths, { components: { schemas } }));
    const list = toolDefinitions(doc, 'openai', { maxChars: 2_000_000 });
    const size = JSON.stringify(list).length;
    expect(size).toBeLessThan(4_000_000);
    expect(JSON.stringify(list.at(-1))).toContain('size bound');
    for (const tool of list) expect(() => toolSchemaAjv('openai').compile(tool.parameters!)).not.toThrow();
  });

  it("properties cut at the size bound: the note follows the schema's own description (and one beside a $ref), never left out", () => {
    const account = (description: string) => ({
      type: 'object',
      description,
      required: ['name', 'email'],
      properties: { notes: { type: 'string', description: 'n'.repeat(200_001) }, name: { type: 'string' }, email: { type: 'string' } },
    });
    const body = (schema: Json) => ({ requestBody: { content: { 'application/json': { schema } } } });
    const doc = oas31(
      {
        '/a': { post: { operationId: 'a', ...body(account('An account.')) } },
        '/b': { post: { operationId: 'b', ...body(account('')) } },
        '/c': { post: { operationId: 'c', ...body({ $ref: '#/components/schemas/Account', description: 'Beside the ref.' }) } },
      },
      { components: { schemas: { Account: account('An account.') } } },
    );
    const bodies = tools(doc).map((tool) => (tool.parameters as Json).properties.body);
    for (const schema of bodies) {
      expect(Object.keys(schema.properties)).toEqual(['notes']);
      expect(schema.required).toBeUndefined();
    }
    expect(bodies.map((schema) => schema.description)).toEqual([
      'An account. (Some properties omitted: the tool list reached its size bound.)',
      'Some properties omitted: the tool list reached its size bound.',
      'Beside the ref. (Some properties omitted: the tool list reached its size bound.)',
    ]);
  });

  it('gemini: its OpenAPI subset (one type, allOf merged, anyOf kept, string enums, known formats, bounds)', () => {
    const doc = oas3({
      '/a': {
        post: {
          operationId: 'a',
          requestBody: {
            content: {
              'application/json': {
                schema: {
                  allOf: [
                    { type: 'object', properties: { a: { type: 'integer', format: 'int64', minimum: 1 } }, required: ['a'] },
                    { properties: { b: { anyOf: [{ type: 'string', format: 'uuid', nullable: true }, { type: 'integer' }] } } },
                  ],
                  additionalProperties: false,
                  properties: { c: { type: 'number', enum: [1, 2] }, d: { type: 'string', enum: ['x', 'y'], format: 'date-time' } },
                },
              },
            },
          },
        },
      },
    });
    const body = (tools(doc, 'gemini')[0]!.parameters as Json).properties.body;
    expect(body).toEqual({
      type: 'object',
      properties: {
        c: { type: 'number', description: 'One of: 1, 2.' },
        d: { type: 'string', format: 'date-time', enum: ['x', 'y'] },
        a: { type: 'integer', format: 'int64', minimum: 1 },
        b: { anyOf: [{ type: 'string', nullable: true }, { type: 'integer' }] },
      },
      required: ['a'],
    });
    expectGeminiSubset(tools(doc, 'gemini')[0]!.parameters as Json);
  });

  it('gemini: keeps what its Schema takes (nullable, bounds, lengths, counts, pattern, title, default, example), says the rest', () => {
    const doc = oas3({
      '/a': {
        post: {
          operationId: 'a',
          parameters: [
            { name: 'q', in: 'query', schema: { type: 'string', nullable: true, minLength: 2, maxLength: 40, pattern: '^[a-z]+$', example: 'rex' } },
            { name: 'n', in: 'query', schema: { type: 'integer', minimum: 0, maximum: 10, exclusiveMaximum: true, default: 5 } },
            { name: 'tags', in: 'query', schema: { type: 'array', minItems: 1, maxItems: 3, items: { type: 'string' } } },
            { name: 'kind', in: 'query', schema: { oneOf: [{ type: 'string', enum: ['cat', 'dog'] }, { type: 'null' }] } },
            { name: 'id', in: 'query', schema: { anyOf: [{ type: 'string' }, { type: 'integer' }, { type: 'null' }] } },
            { name: 'size', in: 'query', description: 'Page size.', schema: { type: 'integer', enum: [10, 50, null] } },
            { name: 'mode', in: 'query', schema: { type: 'string', enum: ['fast', 'safe', null] } },
          ],
          requestBody: {
            content: {
              'application/json': { schema: { title: 'Pet', type: 'object', minProperties: 1, maxProperties: 4, properties: { x: { const: 1 } } } },
            },
          },
        },
      },
    });
    const parameters = tools(doc, 'gemini')[0]!.parameters as Json;
    expect(parameters.properties).toEqual({
      q: { type: 'string', nullable: true, minLength: 2, maxLength: 40, pattern: '^[a-z]+$', example: 'rex' },
      n: { type: 'integer', minimum: 0, default: 5, description: 'Less than 10.' }, // no exclusive bound in Gemini's Schema
      tags: { type: 'array', minItems: 1, maxItems: 3, items: { type: 'string' } },
      kind: { type: 'string', enum: ['cat', 'dog'], nullable: true },
      id: {
        anyOf: [
          { type: 'string', nullable: true },
          { type: 'integer', nullable: true },
        ],
      },
      body: { title: 'Pet', type: 'object', minProperties: 1, maxProperties: 4, properties: { x: { description: 'Always 1.' } } },
      size: { type: 'integer', nullable: true, description: 'Page size. One of: 10, 50.' },
      mode: { type: 'string', nullable: true, enum: ['fast', 'safe'] },
    });
    expectGeminiSubset(parameters);
    expect(() => toolSchemaAjv('gemini').compile(parameters)).not.toThrow();
  });
});

describe('refusals', () => {
  it('a document that is not OpenAPI is refused as the validator refuses it', () => {
    expectAppError(() => toolDefinitions({ hello: 'world' }, 'openai'));
  });
});

describe('every case and hostile fixture', () => {
  const files = ['cases', 'hostile'].flatMap((dir) => readdirSync(`${FIXTURES}validator/${dir}`).map((f) => `${FIXTURES}validator/${dir}/${f}`));
  it.each(files)('%s: tools and fixes never throw but as the validator refuses', (path) => {
    let doc: unknown;
    try {
      doc = parseDocument({ bytes: readFileSync(path), fileName: path });
      validateDocument(doc);
    } catch {
      return; // refused by the validator itself: the routes answer its error
    }
    for (const platform of TOOL_PLATFORM_IDS) {
      const ajv = toolSchemaAjv('openai');
      for (const tool of toolDefinitions(doc, platform)) expect(() => ajv.compile((tool as Json)[SCHEMA_KEY[platform]])).not.toThrow();
    }
    const overlay = fixesOverlay(doc);
    expect(() => validateDocument(applyOverlay(doc, overlay))).not.toThrow();
  });
});
