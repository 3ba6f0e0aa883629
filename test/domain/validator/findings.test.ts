import { describe, expect, it } from 'vitest';
import {
  ENDPOINT_FINDING_TEXTS,
  ENDPOINT_FINDINGS,
  FINDINGS,
  parseDocument,
  validateDocument,
  type Endpoint,
  type EndpointFindingKey,
  type ValidationResult,
} from '../../../src/domain/validator/index.js';
import { fixture, source } from './helpers.js';

const validate = (path: string): ValidationResult => validateDocument(parseDocument(fixture(`validator/cases/${path}`)));
const flagged = (result: ValidationResult, key: EndpointFindingKey): string[] => {
  const map = result.validations[key];
  return Array.isArray(map) ? [] : Object.keys(map);
};

/** A one-operation OpenAPI 3 document with the given operation fields. */
function oneOperation(operation: Record<string, unknown>): ValidationResult {
  const doc = { openapi: '3.0.3', info: { title: 't', version: '1' }, paths: { '/x': { get: operation } } };
  return validateDocument(parseDocument(source(JSON.stringify(doc), 'x.json')));
}

describe('the registry', () => {
  it('lists the four documented findings first, then the additive ones', () => {
    expect(FINDINGS.map((f) => f.key)).toEqual([
      'endpoints_without_operation_id',
      'endpoints_without_description',
      'endpoints_without_name',
      'auth_type',
      'base_url',
    ]);
  });

  it('puts readiness and findings (the rules) after the keyed findings', () => {
    expect(Object.keys(validate('operation-ids.json').validations)).toEqual([...FINDINGS.map((f) => f.key), 'readiness', 'findings']);
  });

  it('names every endpoint finding once, in the registry order, for the CLI and the dashboard (findings/catalog.ts)', () => {
    expect(ENDPOINT_FINDING_TEXTS.map((t) => t.key)).toEqual(ENDPOINT_FINDINGS.map((f) => f.key));
    for (const field of ['kind', 'label', 'title', 'why'] as const) {
      const values = ENDPOINT_FINDING_TEXTS.map((t) => t[field]);
      expect(new Set(values).size, field).toBe(values.length);
    }
  });

  it('gives [] for an empty map and index → the identical endpoint object otherwise', () => {
    const result = validate('blank-values.yaml');
    expect(validate('operation-ids.json').validations.endpoints_without_description).toEqual([]);
    const map = result.validations.endpoints_without_operation_id as Record<string, Endpoint>;
    for (const [index, endpoint] of Object.entries(map)) expect(endpoint).toBe(result.all_endpoints[Number(index)]);
  });
});

// Each check: a passing case, a failing case, edge cases (missing, empty, blank, non-string).
const fieldCases: [string, Record<string, unknown>, boolean][] = [
  ['present', { operationId: 'getX', summary: 'Get x', description: 'Gets x.' }, false],
  ['missing', {}, true],
  ['empty', { operationId: '', summary: '', description: '' }, true],
  ['white space only', { operationId: ' \t\n', summary: '   ', description: '\n\n' }, true],
  ['null', { operationId: null, summary: null, description: null }, true],
  ['not a string', { operationId: 7, summary: ['a'], description: { text: 'x' } }, true],
  ['padded but present', { operationId: ' getX ', summary: ' Get x ', description: ' Gets x. ' }, false],
];

describe.each([
  ['endpoints_without_operation_id', 'operationId'],
  ['endpoints_without_name', 'summary'],
  ['endpoints_without_description', 'description'],
] as const)('%s', (key, field) => {
  it.each(fieldCases)(`%s ${field}`, (_label, fields, expected) => {
    const result = oneOperation({ [field]: fields[field], ...(field === 'operationId' ? {} : { operationId: 'x' }) });
    expect(flagged(result, key)).toEqual(expected ? ['0'] : []);
  });

  it('matches the fixture with every kind of missing value', () => {
    // blank-values.yaml: 0 absent, 1 empty, 2 blank, 3 non-string, 4 null, 5 padded.
    expect(flagged(validate('blank-values.yaml'), key)).toEqual(['0', '1', '2', '3', '4']);
  });
});

// operationId duplicates and invalid ones are rules now: rules.test.ts.

describe('auth_type (DESIGN §5)', () => {
  it.each([
    ['auth-top-level-security.json', 'http', 'the first scheme the top-level security names (an empty requirement skipped)'],
    ['auth-first-declared.json', 'oauth2', 'the first declared scheme when there is no top-level security'],
    ['auth-undeclared-name.json', 'openIdConnect', 'an undeclared name is skipped for the next named scheme'],
    ['auth-mutual-tls.yaml', 'mutualTLS', 'OpenAPI 3.1 mutualTLS'],
    ['auth-swagger2-basic.yaml', 'http', 'Swagger 2.0 basic reports http'],
    ['auth-swagger2-security.json', 'oauth2', 'Swagger 2.0 top-level security over securityDefinitions'],
    ['auth-none.yaml', 'none', 'no scheme declared'],
    ['path-parameters.json', 'none', 'no components at all'],
  ])('%s → %s (%s)', (file, expected) => {
    expect(validate(file).validations.auth_type).toBe(expected);
  });

  it('reports apiKey', () => {
    const doc = {
      openapi: '3.0.3',
      info: { title: 't', version: '1' },
      paths: {},
      components: { securitySchemes: { key: { type: 'apiKey', in: 'header', name: 'X-Key' } } },
    };
    expect(validateDocument(parseDocument(source(JSON.stringify(doc), 'x.json'))).validations.auth_type).toBe('apiKey');
  });

  it('a scheme given by a local $ref is its target (a Reference Object is allowed there); one that resolves nowhere is skipped', () => {
    const doc = (schemes: Record<string, unknown>) => ({
      openapi: '3.0.3',
      info: { title: 't', version: '1' },
      security: [{ oauth: [] }],
      paths: {},
      components: {
        securitySchemes: { ...schemes, key: { type: 'apiKey', in: 'header', name: 'X-Key' } },
        'x-shared': { oauth: { type: 'oauth2', flows: {} } },
      },
    });
    const authOf = (d: unknown) => validateDocument(parseDocument(source(JSON.stringify(d), 'x.json'))).validations.auth_type;
    expect(authOf(doc({ oauth: { $ref: '#/components/x-shared/oauth' } }))).toBe('oauth2');
    expect(authOf(doc({ oauth: { $ref: '#/components/x-shared/nowhere' } }))).toBe('apiKey');
  });
});

describe('base_url', () => {
  it.each([
    ['servers-variables.yaml', 'https://eu-west.api.example.com:8443/{version}/{unknown}', 'variables by their default; none → as written'],
    ['servers-relative.json', '/v1', 'a relative server URL as written'],
    ['servers-none.json', null, 'an empty servers list'],
    ['webhooks.oas31.yaml', null, 'no servers'],
    ['swagger2-body.json', 'http://api.example.com/v2', 'Swagger 2.0 schemes[0]://host basePath'],
    ['swagger2-host.yaml', 'https://api.example.com:8080/base', 'Swagger 2.0 default scheme https'],
    ['swagger2-no-host.yaml', null, 'Swagger 2.0 without host'],
  ] as [string, string | null, string][])('%s → %s (%s)', (file, expected) => {
    expect(validate(file).validations.base_url).toBe(expected);
  });
});

describe('YAML merge keys', () => {
  it('an operation that takes its fields from a merge key has them: no field is reported missing', () => {
    const text = [
      'openapi: 3.0.3',
      'info: {title: t, version: "1"}',
      'x-list: &list',
      '  summary: List things',
      '  description: Lists the things, a page at a time.',
      '  responses: {"200": {description: OK}}',
      'paths:',
      '  /a:',
      '    get: {<<: *list, operationId: listA}',
      '  /b:',
      '    get:',
      '      <<: *list',
      '      operationId: listB',
      '      summary: List b',
      '',
    ].join('\n');
    const result = validateDocument(parseDocument(source(text, 'merge.yaml')));
    expect(result.all_endpoints.map((e) => [e.operationId, e.name, e.description])).toEqual([
      ['listA', 'List things', 'Lists the things, a page at a time.'],
      ['listB', 'List b', 'Lists the things, a page at a time.'],
    ]);
    expect(result.all_endpoints[0]!.responseBody).toEqual({ '200': { description: 'OK' } });
    expect(result.validations.endpoints_without_name).toEqual([]);
    expect(result.validations.endpoints_without_description).toEqual([]);
    expect(result.validations.findings.map((f) => f.rule)).not.toContain('summary-missing');
  });
});
