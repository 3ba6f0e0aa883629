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
      'GET /referenced',
    ]);
  });

  it('follows a local path item $ref (issue 18 A.5)', () => {
    expect(endpointsOf('method-order.yaml').filter((e) => e.path === '/referenced')).toMatchObject([{ type: 'GET', name: 'Not followed' }]);
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

  it('emits empty, blank and padded summaries and descriptions exactly as written, a blank operationId as null (issue 18 A.4)', () => {
    expect(endpoints[1]).toMatchObject({ operationId: null, name: '', description: '' });
    expect(endpoints[2]).toMatchObject({ operationId: null, name: ' \t ', description: '\n' });
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
    expect(post.requestParameters).toEqual([{ in: 'query', name: 'dryRun', schema: { type: 'boolean' } }]);
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

  it('an operation’s empty consumes or produces clears the document’s (Swagger 2.0: "an empty value MAY be used to clear the global definition")', () => {
    const [put] = endpointsOfDoc({
      swagger: '2.0',
      info: { title: 't', version: '1' },
      consumes: ['application/xml'],
      produces: ['application/xml'],
      paths: {
        '/a': {
          put: {
            consumes: [],
            produces: [],
            parameters: [{ name: 'body', in: 'body', schema: { type: 'string' } }],
            responses: { '200': { description: 'ok', schema: { type: 'string' } } },
          },
        },
      },
    });
    expect(put!.requestBody).toEqual({ content: { 'application/json': { schema: { type: 'string' } } } });
    expect(put!.responseBody).toEqual({ '200': { description: 'ok', content: { 'application/json': { schema: { type: 'string' } } } } });
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
    expect(form.requestParameters).toEqual([{ name: 'petId', in: 'path', required: true, schema: { type: 'integer', format: 'int64' } }]);
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
    expect(upload.requestParameters).toEqual([{ name: 'petId', in: 'path', required: true, schema: { type: 'integer' } }]);
  });
});

/** Endpoints of an inline document, read as JSON like an upload. */
const endpointsOfDoc = (doc: object): Endpoint[] => validateDocument(parseDocument(source(JSON.stringify(doc), 'inline.json'))).all_endpoints;
const swagger2 = (paths: object, rest: object = {}) => ({ swagger: '2.0', info: { title: 't', version: '1' }, host: 'x.example.com', paths, ...rest });
const openapi3 = (paths: object, rest: object = {}) => ({ openapi: '3.0.3', info: { title: 't', version: '1' }, paths, ...rest });

describe('Swagger 2.0 body and formData parameters given by a local $ref (issue 18 A.1)', () => {
  const doc = swagger2(
    {
      '/pets/{id}': {
        parameters: [{ $ref: '#/parameters/Id' }],
        delete: { operationId: 'deletePet', parameters: [{ $ref: '#/parameters/DeleteOptions' }], responses: {} },
        post: { operationId: 'renamePet', parameters: [{ $ref: '#/parameters/Name' }, { $ref: '#/parameters/Tag' }], responses: {} },
        put: { operationId: 'unresolved', parameters: [{ $ref: '#/parameters/Missing' }, { $ref: 'other.yaml#/parameters/Body' }], responses: {} },
      },
    },
    {
      parameters: {
        Id: { name: 'id', in: 'path', required: true, type: 'string' },
        DeleteOptions: { name: 'body', in: 'body', description: 'Options', required: true, schema: { $ref: '#/definitions/DeleteOptions' } },
        Name: { name: 'name', in: 'formData', required: true, type: 'string' },
        Tag: { $ref: '#/parameters/TagTarget' },
        TagTarget: { name: 'tag', in: 'formData', type: 'string' },
      },
    },
  );
  const [del, post, put] = endpointsOfDoc(doc);

  it('turns a referenced body parameter into requestBody and leaves it out of requestParameters', () => {
    expect(del!.requestBody).toEqual({
      description: 'Options',
      content: { 'application/json': { schema: { $ref: '#/definitions/DeleteOptions' } } },
      required: true,
    });
    expect(del!.requestParameters).toEqual([{ $ref: '#/parameters/Id' }]);
  });

  it('turns referenced formData parameters (a chain of refs too) into the form schema', () => {
    expect(post!.requestBody).toEqual({
      content: {
        'application/x-www-form-urlencoded': {
          schema: { type: 'object', properties: { name: { type: 'string' }, tag: { type: 'string' } }, required: ['name'] },
        },
      },
      required: true,
    });
    expect(post!.requestParameters).toEqual([{ $ref: '#/parameters/Id' }]);
  });

  it('leaves a $ref that points nowhere or outside the document as written', () => {
    expect(put!.requestBody).toBeNull();
    expect(put!.requestParameters).toEqual([{ $ref: '#/parameters/Id' }, { $ref: '#/parameters/Missing' }, { $ref: 'other.yaml#/parameters/Body' }]);
  });
});

describe('Swagger 2.0 responses given by a local $ref (issue 18 A, found by the conformance run)', () => {
  const doc = swagger2(
    {
      '/pets/{id}': {
        get: {
          operationId: 'getPet',
          produces: ['application/json'],
          responses: { '200': { $ref: '#/responses/Pet' }, '404': { $ref: '#/responses/NotFound' }, '500': { $ref: '#/responses/Missing' } },
        },
        delete: { operationId: 'deletePet', responses: { '200': { $ref: '#/responses/Pet' }, default: { $ref: 'other.yaml#/responses/Error' } } },
      },
    },
    {
      responses: {
        Pet: { description: 'A pet', schema: { $ref: '#/definitions/Pet' }, headers: { 'X-Rate': { type: 'integer' } } },
        NotFound: { $ref: '#/responses/Plain' },
        Plain: { description: 'Not found' },
      },
    },
  );
  const [get, del] = endpointsOfDoc(doc);

  it('converts a referenced response with a schema as an inline one is; others stay as written', () => {
    expect(get!.responseBody).toEqual({
      '200': { description: 'A pet', headers: { 'X-Rate': { type: 'integer' } }, content: { 'application/json': { schema: { $ref: '#/definitions/Pet' } } } },
      '404': { $ref: '#/responses/NotFound' },
      '500': { $ref: '#/responses/Missing' },
    });
  });

  it('converts a shared response for each operation that uses it, and leaves external refs as written', () => {
    expect(del!.responseBody['200']).toEqual(get!.responseBody['200']);
    expect(del!.responseBody.default).toEqual({ $ref: 'other.yaml#/responses/Error' });
  });
});

describe('a second Swagger 2.0 body parameter (issue 18 A, found by the conformance run)', () => {
  it('keeps the first as the request body and is reported, not dropped silently', () => {
    const doc = swagger2({
      '/pets': {
        post: {
          operationId: 'addPet',
          parameters: [
            { name: 'pet', in: 'body', schema: { type: 'object' } },
            { name: 'extra', in: 'body', schema: { type: 'string' } },
          ],
          responses: {},
        },
      },
    });
    const result = validateDocument(parseDocument(source(JSON.stringify(doc), 'inline.json')));
    const [post] = result.all_endpoints;
    expect(post!.requestBody).toEqual({ content: { 'application/json': { schema: { type: 'object' } } } });
    expect(post!.requestParameters).toBeNull();
    const found = result.validations.findings.filter((f) => f.rule === 'parameter-body-duplicate');
    expect(found.map((f) => ({ endpoint: f.endpoint, pointer: f.pointer, severity: f.severity }))).toEqual([
      { endpoint: 0, pointer: '/paths/~1pets/post/parameters/1', severity: 'error' },
    ]);
  });
});

describe('x- keys under paths (issue 18 A.2)', () => {
  it('are extensions: a string value is not refused, an object with get: is not an endpoint', () => {
    const doc = openapi3({
      'x-codegen-contextRoot': '/api',
      'x-internal': { get: { operationId: 'hidden' } },
      'x-list': [1, 2],
      '/a': { get: { operationId: 'getA' } },
    });
    expect(endpointsOfDoc(doc).map((e) => e.operationId)).toEqual(['getA']);
    expect(endpointsOfDoc(swagger2({ 'x-n': 3, '/b': { get: { operationId: 'getB' } } })).map((e) => e.operationId)).toEqual(['getB']);
  });
});

describe('a path-level parameter given by $ref (issue 18 A.3)', () => {
  it('is replaced in place by the operation’s parameter of the same name and in, and kept as written otherwise', () => {
    const doc = openapi3(
      {
        '/items/{id}': {
          parameters: [{ $ref: '#/components/parameters/Id' }, { $ref: '#/components/parameters/Limit' }],
          get: { operationId: 'getItem', parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'integer' } }] },
          put: { operationId: 'putItem', parameters: [{ $ref: '#/components/parameters/IdAgain' }] },
          post: { operationId: 'postItem', parameters: [{ name: 'id', in: 'query', schema: { type: 'string' } }] },
        },
      },
      {
        components: {
          parameters: {
            Id: { name: 'id', in: 'path', required: true, schema: { type: 'string' } },
            IdAgain: { name: 'id', in: 'path', required: true, schema: { type: 'string', format: 'uuid' } },
            Limit: { name: 'limit', in: 'query', schema: { type: 'integer' } },
          },
        },
      },
    );
    const [get, put, post] = endpointsOfDoc(doc);
    expect(get!.requestParameters).toEqual([
      { name: 'id', in: 'path', required: true, schema: { type: 'integer' } },
      { $ref: '#/components/parameters/Limit' },
    ]);
    expect(put!.requestParameters).toEqual([{ $ref: '#/components/parameters/IdAgain' }, { $ref: '#/components/parameters/Limit' }]);
    expect(post!.requestParameters).toEqual([
      { $ref: '#/components/parameters/Id' },
      { $ref: '#/components/parameters/Limit' },
      { name: 'id', in: 'query', schema: { type: 'string' } },
    ]);
  });
});

describe('a blank operationId (issue 18 A.4)', () => {
  it('is null on the wire and still flagged as missing', () => {
    const doc = openapi3({ '/a': { get: { operationId: '' }, put: { operationId: ' \t' }, post: { operationId: ' padded ' } } });
    const result = validateDocument(parseDocument(source(JSON.stringify(doc), 'inline.json')));
    expect(result.all_endpoints.map((e) => e.operationId)).toEqual([null, null, ' padded ']);
    expect(Object.keys(result.validations.endpoints_without_operation_id)).toEqual(['0', '1']);
  });
});

describe('a Path Item $ref (issue 18 A.5)', () => {
  it('is followed within the document, through chains, with the referring path as the path', () => {
    const doc = openapi3(
      {
        '/pets': { get: { operationId: 'listPets' } },
        '/support/pets': { $ref: '#/paths/~1pets' },
        '/chained': { $ref: '#/paths/~1support~1pets' },
        '/component': { $ref: '#/components/pathItems/Thing' },
      },
      { components: { pathItems: { Thing: { parameters: [{ name: 'q', in: 'query' }], post: { operationId: 'postThing' } } } } },
    );
    expect(endpointsOfDoc(doc).map((e) => `${e.type} ${e.path} ${e.operationId}`)).toEqual([
      'GET /pets listPets',
      'GET /support/pets listPets',
      'GET /chained listPets',
      'POST /component postThing',
    ]);
    expect(endpointsOfDoc(doc)[3]!.requestParameters).toEqual([{ name: 'q', in: 'query' }]);
  });

  it('is cycle-safe and bounded: cycles, dangling, external and non-object targets give no endpoints', () => {
    const chain: Record<string, object> = {};
    for (let i = 0; i < 100; i++) chain[`/c${i}`] = { $ref: `#/paths/~1c${i + 1}` };
    chain['/c100'] = { get: { operationId: 'deep' } };
    const doc = openapi3({
      '/a': { $ref: '#/paths/~1b' },
      '/b': { $ref: '#/paths/~1a' },
      '/self': { $ref: '#/paths/~1self' },
      '/dangling': { $ref: '#/paths/~1nowhere' },
      '/external': { $ref: 'other.yaml#/paths/~1x' },
      '/string': { $ref: '#/info/title' },
      '/proto': { $ref: '#/paths/constructor' },
      ...chain,
    });
    const endpoints = endpointsOfDoc(doc);
    // Only the end of the chain and the few refs within the hop bound resolve.
    expect(endpoints.every((e) => e.operationId === 'deep')).toBe(true);
    expect(endpoints.some((e) => e.path === '/c0')).toBe(false);
    expect(endpoints.some((e) => e.path === '/c100')).toBe(true);
  });
});

describe('Swagger 2.0 non-body parameters in the interface’s form (issue 18 A.6)', () => {
  it('moves the schema keywords under schema, keeps name, in, description, required first', () => {
    const doc = swagger2({
      '/pets': {
        get: {
          operationId: 'listPets',
          parameters: [
            { name: 'limit', in: 'query', description: 'How many', required: false, type: 'integer', format: 'int32', default: 20, maximum: 100 },
            { name: 'tags', in: 'query', type: 'array', items: { type: 'string' }, collectionFormat: 'multi', 'x-note': 'n' },
            { name: 'ids', in: 'query', type: 'array', items: { type: 'integer' }, collectionFormat: 'csv' },
            { name: 'status', in: 'header', type: 'string', enum: ['a', 'b'] },
            { name: 'empty', in: 'query', type: 'string', allowEmptyValue: true },
            { name: 'csvByDefault', in: 'query', type: 'array', items: { type: 'string' } },
            { name: 'pathList', in: 'path', required: true, type: 'array', items: { type: 'string' }, collectionFormat: 'csv' },
            { name: 'tabs', in: 'query', type: 'array', items: { type: 'string' }, collectionFormat: 'tsv' },
          ],
        },
      },
    });
    const [list] = endpointsOfDoc(doc);
    expect(list!.requestParameters).toEqual([
      { name: 'limit', in: 'query', description: 'How many', required: false, schema: { type: 'integer', format: 'int32', default: 20, maximum: 100 } },
      { name: 'tags', in: 'query', style: 'form', explode: true, 'x-note': 'n', schema: { type: 'array', items: { type: 'string' } } },
      { name: 'ids', in: 'query', style: 'form', explode: false, schema: { type: 'array', items: { type: 'integer' } } },
      { name: 'status', in: 'header', schema: { type: 'string', enum: ['a', 'b'] } },
      { name: 'empty', in: 'query', allowEmptyValue: true, schema: { type: 'string' } },
      { name: 'csvByDefault', in: 'query', style: 'form', explode: false, schema: { type: 'array', items: { type: 'string' } } },
      { name: 'pathList', in: 'path', required: true, schema: { type: 'array', items: { type: 'string' } } },
      { name: 'tabs', in: 'query', collectionFormat: 'tsv', schema: { type: 'array', items: { type: 'string' } } },
    ]);
    expect(Object.keys(list!.requestParameters![0]!)).toEqual(['name', 'in', 'description', 'required', 'schema']);
  });

  it('converts a path-level parameter once for every method that inherits it', () => {
    const doc = swagger2({
      '/pets/{id}': { parameters: [{ name: 'id', in: 'path', required: true, type: 'string' }], get: {}, delete: {} },
    });
    const [get, del] = endpointsOfDoc(doc);
    expect(get!.requestParameters).toEqual([{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }]);
    expect(get!.requestParameters![0]).toBe(del!.requestParameters![0]);
  });
});
