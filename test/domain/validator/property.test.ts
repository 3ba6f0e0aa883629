import { createRequire } from 'node:module';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ENDPOINT_FINDINGS, parseDocument, renderResult, validateDocument, type Endpoint, type ValidationResult } from '../../../src/domain/validator/index.js';

const jsYaml = createRequire(import.meta.url)('js-yaml') as { dump: (value: unknown) => string };
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

/** A field value as documents write them: absent, odd types, empty, blank, real text. */
const fieldValue = fc.oneof(
  fc.constant(undefined),
  fc.constant(null),
  fc.integer(),
  fc.constant(''),
  fc.constantFrom(' ', '\t', '\n  ', '\u00a0'),
  fc.constantFrom('getThing', 'listThings', 'get thing', 'x'.repeat(65), 'ok_1-2'),
  fc.string({ maxLength: 12 }),
);

const parameter = fc.record({ name: fc.constantFrom('id', 'q', 'limit'), in: fc.constantFrom('path', 'query', 'header') });

const operation = fc.record(
  {
    operationId: fieldValue,
    summary: fieldValue,
    description: fieldValue,
    parameters: fc.array(parameter, { maxLength: 3 }),
    responses: fc.constantFrom({}, { '200': { description: 'ok' } }),
  },
  { requiredKeys: [] },
);

const pathItem = fc.record({
  methods: fc.shuffledSubarray(METHODS),
  operations: fc.array(operation, { minLength: 8, maxLength: 8 }),
  parameters: fc.option(fc.array(parameter, { maxLength: 2 }), { nil: undefined }),
});

const documents = fc.record({
  paths: fc.array(pathItem, { maxLength: 6 }),
  yaml: fc.boolean(),
});

interface Generated {
  text: string;
  fileName: string;
  /** The raw operations, in document order. */
  operations: Record<string, unknown>[];
}

type GeneratedInput = typeof documents extends fc.Arbitrary<infer T> ? T : never;

function build(input: GeneratedInput): Generated {
  const paths: Record<string, unknown> = {};
  const operations: Record<string, unknown>[] = [];
  input.paths.forEach((item, i) => {
    const pathItemValue: Record<string, unknown> = {};
    if (item.parameters) pathItemValue.parameters = item.parameters;
    item.methods.forEach((method, j) => {
      const op = Object.fromEntries(Object.entries(item.operations[j]!).filter(([, v]) => v !== undefined));
      pathItemValue[method] = op;
      operations.push(op);
    });
    paths[`/p${i}`] = pathItemValue;
  });
  const doc = { openapi: '3.0.3', info: { title: 'generated', version: '1' }, paths };
  return input.yaml ? { text: jsYaml.dump(doc), fileName: 'g.yaml', operations } : { text: JSON.stringify(doc), fileName: 'g.json', operations };
}

const missing = (v: unknown) => typeof v !== 'string' || v.trim() === '';
const mapOf = (r: ValidationResult, key: (typeof ENDPOINT_FINDINGS)[number]['key']) => {
  const m = r.validations[key];
  return Array.isArray(m) ? {} : (m as Record<string, Endpoint>);
};

describe('validator properties (fast-check)', () => {
  it('flag maps point at valid indexes and at the identical endpoint objects, also after a JSON round trip', () => {
    fc.assert(
      fc.property(documents, (input) => {
        const { text, fileName, operations } = build(input);
        const result = validateDocument(parseDocument({ bytes: Buffer.from(text), fileName }));
        expect(result.all_endpoints).toHaveLength(operations.length);
        const rendered = renderResult(result).toString('utf8');
        expect(rendered).toBe(JSON.stringify(result));
        const roundTrip = JSON.parse(rendered) as ValidationResult;
        for (const finding of ENDPOINT_FINDINGS) {
          const value = result.validations[finding.key];
          if (Array.isArray(value)) {
            expect(value).toEqual([]);
            continue;
          }
          expect(Object.keys(value).length).toBeGreaterThan(0);
          for (const [key, endpoint] of Object.entries(value)) {
            const i = Number(key);
            expect(String(i)).toBe(key);
            expect(i).toBeGreaterThanOrEqual(0);
            expect(i).toBeLessThan(result.all_endpoints.length);
            expect(endpoint).toBe(result.all_endpoints[i]);
            const again = (roundTrip.validations[finding.key] as Record<string, Endpoint>)[key];
            expect(again).toEqual(roundTrip.all_endpoints[i]);
          }
        }
      }),
      { numRuns: 200 },
    );
  });

  it('flags an endpoint exactly when its field is missing, empty, blank or not a string', () => {
    fc.assert(
      fc.property(documents, (input) => {
        const { text, fileName, operations } = build(input);
        const result = validateDocument(parseDocument({ bytes: Buffer.from(text), fileName }));
        const noId = mapOf(result, 'endpoints_without_operation_id');
        const noDescription = mapOf(result, 'endpoints_without_description');
        const noName = mapOf(result, 'endpoints_without_name');
        const rulesAt = (rule: string) => new Set(result.validations.findings.filter((f) => f.rule === rule).map((f) => f.endpoint));
        const invalid = rulesAt('operation-id-invalid');
        const tooLong = rulesAt('operation-id-too-long');
        const duplicate = new Set(
          result.validations.findings.filter((f) => f.rule === 'operation-id-duplicate' && f.severity === 'error').map((f) => f.endpoint),
        );
        const ids = operations.map((op) => (missing(op.operationId) ? null : (op.operationId as string)));
        operations.forEach((op, i) => {
          const key = String(i);
          expect(Object.hasOwn(noId, key)).toBe(missing(op.operationId));
          expect(Object.hasOwn(noDescription, key)).toBe(missing(op.description));
          expect(Object.hasOwn(noName, key)).toBe(missing(op.summary));
          // Not a tool name on every platform: bad characters for one of them, or too long.
          expect(invalid.has(i) || tooLong.has(i)).toBe(ids[i] !== null && !/^[A-Za-z_][A-Za-z0-9_-]{0,63}$/.test(ids[i]!));
          expect(duplicate.has(i)).toBe(ids[i] !== null && ids.filter((id) => id === ids[i]).length > 1);
          const endpoint = result.all_endpoints[i]!;
          expect(endpoint.operationId).toBe(ids[i]); // a blank one is null (issue 18 A.4)
          expect(endpoint.name).toBe(typeof op.summary === 'string' ? op.summary : '');
          expect(endpoint.description).toBe(typeof op.description === 'string' ? op.description : '');
        });
      }),
      { numRuns: 200 },
    );
  });
});
