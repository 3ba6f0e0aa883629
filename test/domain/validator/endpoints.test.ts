import { describe, expect, it } from 'vitest';
import { parseDocument, validateDocument, type Endpoint } from '../../../src/domain/validator/index.js';
import { fixture, source } from './helpers.js';

const endpointsOf = (path: string): Endpoint[] => validateDocument(parseDocument(fixture(`validator/cases/${path}`))).all_endpoints;
const byId = (endpoints: Endpoint[], id: string): Endpoint => endpoints.find((e) => e.operationId === id)!;

describe('endpoint objects', () => {
  it('have the keys of DESIGN §5 in order, method upper case', () => {
    const [first] = endpointsOf('webhooks.oas31.yaml');
    expect(Object.keys(first!)).toEqual(['operationId', 'type', 'name', 'description', 'requestBody', 'requestParameters', 'responseBody', 'path']);
    expect(first).toEqual({
      operationId: 'listPets',
      type: 'GET',
      name: 'List pets',
      description: 'The one endpoint.',
      requestBody: null,
      requestParameters: null,
      responseBody: {},
      path: '/pets',
    });
  });

  it('reference the document’s own subtrees (no copies)', () => {
    const doc = parseDocument(fixture('validator/cases/ref-values.yaml')) as { paths: Record<string, Record<string, Record<string, unknown>>> };
    const [endpoint] = validateDocument(doc).all_endpoints;
    const operation = doc.paths['/orders']!.post!;
    expect(endpoint!.requestBody).toBe(operation.requestBody);
    expect(endpoint!.responseBody).toBe(operation.responses);
    expect(endpoint!.requestParameters).toBe(operation.parameters);
  });
});

describe('document order', () => {
  it('keeps paths and the methods under each path in document order; other path-item keys are not endpoints', () => {
    expect(endpointsOf('method-order.yaml').map((e) => `${e.type} ${e.path}`)).toEqual([
      'PATCH /b',
      'GET /b',
      'TRACE /b',
      'HEAD /b',
      'DELETE /a',
      'OPTIONS /a',
      'PUT /a',
      'POST /a',
    ]);
  });

  it('does not follow a path item $ref', () => {
    expect(endpointsOf('method-order.yaml').some((e) => e.path === '/referenced')).toBe(false);
  });

  it('does not count webhooks (OpenAPI 3.1)', () => {
    expect(endpointsOf('webhooks.oas31.yaml')).toHaveLength(1);
  });

  it('has no endpoints when there are no paths', () => {
    expect(endpointsOf('servers-none.json')).toEqual([]);
    expect(validateDocument(parseDocument(source('{"openapi":"3.1.0","info":{"title":"t","version":"1"}}', 'x.json'))).all_endpoints).toEqual([]);
  });
});

describe('names, descriptions and operationIds as written', () => {
  const endpoints = endpointsOf('blank-values.yaml');

  it('emits "" for a missing or non-string summary/description and null for a missing or non-string operationId', () => {
    const [missing, , , nonString, nulls] = endpoints;
    for (const e of [missing!, nonString!, nulls!]) {
      expect(e.operationId).toBeNull();
      expect(e.name).toBe('');
      expect(e.description).toBe('');
    }
  });

  it('emits empty, blank and padded strings exactly as written', () => {
    expect(endpoints[1]).toMatchObject({ operationId: '', name: '', description: '' });
    expect(endpoints[2]).toMatchObject({ operationId: '   ', name: ' \t ', description: '\n' });
    expect(endpoints[5]).toMatchObject({ operationId: ' spaced ', name: '  Summary with spaces  ', description: '  Described.  ' });
  });
});

describe('parameters', () => {
  const endpoints = endpointsOf('path-parameters.json');

  it('inherits the path-level parameters', () => {
    expect(byId(endpoints, 'getItem').requestParameters).toEqual([
      { name: 'id', in: 'path', required: true, description: 'path level', schema: { type: 'string' } },
      { name: 'trace', in: 'header', schema: { type: 'string' } },
      { $ref: '#/components/parameters/Limit' },
    ]);
  });

  it('lets the operation win on the same name and in (in place), keeps the rest, $ref by its string', () => {
    expect(byId(endpoints, 'putItem').requestParameters).toEqual([
      { name: 'id', in: 'path', required: true, description: 'operation level', schema: { type: 'integer' } },
      { name: 'trace', in: 'header', schema: { type: 'string' } },
      { $ref: '#/components/parameters/Limit' },
      { name: 'verbose', in: 'query', schema: { type: 'boolean' } },
      { name: 'id', in: 'query', description: 'same name, other location', schema: { type: 'string' } },
    ]);
  });

  it('is null when neither level has any', () => {
    expect(byId(endpoints, 'plain').requestParameters).toBeNull();
  });
});

describe('references', () => {
  it('leaves every $ref as written', () => {
    const [e] = endpointsOf('ref-values.yaml');
    expect(e!.requestParameters).toEqual([{ $ref: '#/components/parameters/Tenant' }]);
    expect(e!.requestBody).toEqual({ $ref: '#/components/requestBodies/Order' });
    expect(e!.responseBody).toEqual({
      '201': { $ref: '#/components/responses/Created' },
      default: { description: 'error', content: { 'application/json': { schema: { $ref: 'https://example.com/schemas/error.json#/Error' } } } },
    });
  });
});

describe('Swagger 2.0 in OpenAPI 3 form', () => {
  it('turns a body parameter into requestBody keyed by the document’s consumes, and responses by produces', () => {
    const post = byId(endpointsOf('swagger2-body.json'), 'addPet');
    expect(post.requestBody).toEqual({
      description: 'The pet to add',
      content: {
        'application/json': { schema: { $ref: '#/definitions/Pet' } },
        'application/xml': { schema: { $ref: '#/definitions/Pet' } },
      },
      required: true,
    });
    expect(Object.keys(post.requestBody as object)).toEqual(['description', 'content', 'required']);
    expect(post.requestParameters).toEqual([{ in: 'query', name: 'dryRun', type: 'boolean' }]);
    expect(post.responseBody).toEqual({
      '200': {
        description: 'The pet',
        headers: { 'X-Rate-Limit': { type: 'integer' } },
        content: {
          'application/json': { schema: { $ref: '#/definitions/Pet' }, example: { id: 1 } },
          'application/xml': { schema: { $ref: '#/definitions/Pet' } },
        },
      },
      '404': { $ref: '#/responses/NotFound' },
      '405': { description: 'Invalid input' },
    });
  });

  it('prefers the operation’s consumes and produces', () => {
    const put = byId(endpointsOf('swagger2-body.json'), 'putPet');
    expect(put.requestBody).toEqual({ content: { 'application/vnd.pet+json': { schema: { type: 'object' } } } });
    expect(put.requestParameters).toBeNull();
    expect(put.responseBody).toEqual({ '200': { description: 'ok', content: { 'text/plain': { schema: { type: 'string' } } } } });
  });

  it('defaults consumes and produces to application/json', () => {
    const [list, create] = endpointsOf('swagger2-defaults.json');
    expect(list!.responseBody).toEqual({
      '200': { description: 'The things', content: { 'application/json': { schema: { type: 'array', items: { type: 'string' } } } } },
    });
    expect(create!.requestBody).toEqual({ content: { 'application/json': { schema: { type: 'string' } } } });
    expect(create!.responseBody).toEqual({});
  });

  it('turns formData parameters into one object schema, urlencoded as the operation consumes', () => {
    const form = byId(endpointsOf('swagger2-form-data.yaml'), 'updatePetWithForm');
    const schema = {
      type: 'object',
      properties: {
        name: { description: 'New name', type: 'string' },
        status: { type: 'string', enum: ['available', 'sold'] },
      },
      required: ['name'],
    };
    expect(form.requestBody).toEqual({ content: { 'application/x-www-form-urlencoded': { schema } }, required: true });
    // The path-level path parameter is merged in; the formData ones are not repeated.
    expect(form.requestParameters).toEqual([{ name: 'petId', in: 'path', required: true, type: 'integer', format: 'int64' }]);
  });

  it('uses multipart/form-data when a file is sent and nothing is declared', () => {
    const upload = byId(endpointsOf('swagger2-form-data.yaml'), 'uploadImage');
    expect(upload.requestBody).toEqual({
      content: {
        'multipart/form-data': {
          schema: {
            type: 'object',
            properties: { note: { type: 'string' }, file: { description: 'The image', type: 'string', format: 'binary' } },
          },
        },
      },
    });
    expect(upload.requestParameters).toEqual([{ name: 'petId', in: 'path', required: true, type: 'integer' }]);
  });
});
