import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  ANSWER_LIMIT_CHARS_PER_DOCUMENT_BYTE,
  ANSWER_LIMIT_FLOOR_CHARS,
  createValidationCache,
  jsonLength,
  maxAnswerChars,
  parseDocument,
  renderFresh,
  renderResult,
  renderValidation,
  validateDocument,
  type DocumentSource,
} from '../../../src/domain/validator/index.js';
import { jsonLengthWithoutEscapes } from '../../../src/domain/validator/answer-size.js';
import { jsonPathParameterBomb, yamlAliasBomb } from './answer-bombs.js';
import { expectAppError, expectAppErrorAsync, fixture, FIXTURES } from './helpers.js';
import { SPECS_DIR } from '../../support/specs.js';

/**
 * The answer is bounded (issue 13 §1, DESIGN §5): its length is counted before it is
 * rendered, and a document whose answer would pass max(4 MiB, 10 × its bytes) characters
 * is refused with invalid_swagger_file.
 */

const MiB = 1024 * 1024;
/** Every real description (test/fixtures/specs) and every validator case fixture that parses. */
function realDocuments(): Array<[string, DocumentSource]> {
  const docs: Array<[string, DocumentSource]> = [];
  const add = (dir: string, label: string) => {
    for (const name of readdirSync(dir).sort()) {
      if (!/\.(json|yaml)$/.test(name) || name === 'kubernetes.json') continue; // kubernetes.json is truncated upstream
      docs.push([`${label}${name}`, { bytes: readFileSync(dir + name), fileName: name }]);
    }
  };
  add(SPECS_DIR, 'test/fixtures/specs/');
  add(`${FIXTURES}validator/cases/`, 'test/fixtures/validator/cases/');
  docs.push(['interface example', fixture('validator/interface-example/petstore-1.0.11-without-addPet-operationId.json')]);
  return docs;
}

const REAL = realDocuments();

describe('jsonLength: JSON.stringify(value).length without the text', () => {
  it('finds the real documents', () => {
    // 14 readable specs, 21 validator cases and the interface example.
    expect(REAL.length).toBe(36);
  });

  it.each(REAL)('%s: the count is the length of the rendered answer, never less', (_name, src) => {
    const result = validateDocument(parseDocument(src));
    const real = JSON.stringify(result).length;
    const estimate = jsonLength(result);
    expect(estimate).toBeGreaterThanOrEqual(real);
    expect(estimate).toBeLessThanOrEqual(real); // exact: close as can be
  });

  it.each([
    ['plain strings', { a: 'b', c: '' }],
    ['what JSON.stringify escapes', { 'k"\\': 'q"b\\s\b\f\n\r\t', ctl: '\u0000\u0001\u001f', del: '\u007f' }],
    ['surrogates: a pair as is, lone ones escaped', ['😀', '\ud83d', '\ude00', 'a\ud83db', '\ude00\ud83d', 'x😀\ud83d']],
    ['a long string with one escape at its end', { d: `${'a'.repeat(10_000)}"` }],
    ['a long string with characters JSON keeps (U+2028, é, 中)', { d: `${'é中\u2028'.repeat(5_000)}` }],
    [
      'numbers',
      [0, -0, 1, -1, 9, 10, 99, 100, 999_999_999, 1e9, 1e21, 1e-7, 1.5, -2.25, 0.1, Number.MAX_VALUE, Number.MIN_VALUE, 2 ** 53, NaN, Infinity, -Infinity],
    ],
    ['literals', [true, false, null]],
    ['empty containers', { a: {}, b: [], c: [[]], d: [{}] }],
    ['values JSON leaves out or writes as null', { a: undefined, b: () => 1, c: Symbol('s'), d: [undefined, () => 1, Symbol('s')], e: 1 }],
    ['nested', { a: { b: { c: [1, { d: 'e' }, ['f', { g: null }]] } } }],
    ['a string alone', 'text'],
    ['a number alone', 42],
  ])('%s', (_name, value) => {
    expect(jsonLength(value)).toBe(JSON.stringify(value).length);
  });

  it('is JSON.stringify(value).length for any JSON value, any string (lone surrogates, control characters), shared or not (fast-check)', () => {
    const text = fc.oneof(fc.string({ unit: 'binary' }), fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)) }));
    const value = fc.letrec((tie) => ({
      json: fc.oneof({ depthSize: 'small' }, text, fc.double(), fc.integer(), fc.boolean(), fc.constant(null), tie('array'), tie('object')),
      array: fc.array(tie('json'), { maxLength: 5 }),
      object: fc.dictionary(text, tie('json'), { maxKeys: 5 }),
    })).json;
    fc.assert(
      fc.property(value, text, (v, s) => {
        const shared = { v, s: s.repeat(20) };
        const doc = { v, s, again: [shared, shared, { shared, v }] };
        expect(jsonLength(doc)).toBe(JSON.stringify(doc).length);
      }),
      { numRuns: 300 },
    );
  });

  it('counts a shared subtree once per place it appears, reading it once', () => {
    let reads = 0;
    const shared = {
      get description() {
        reads++;
        return 'x'.repeat(1_000);
      },
    };
    const value = { all: Array.from({ length: 1_000 }, () => shared), again: { a: shared, b: [shared, shared] } };
    const expected = JSON.stringify(value).length;
    expect(reads).toBe(1_003); // JSON.stringify reads it each time
    reads = 0;
    expect(jsonLength(value)).toBe(expected);
    expect(reads).toBe(1);
  });

  it('without escapes: never more than the true length, never less than a sixth of it', () => {
    for (const [, src] of REAL) {
      const result = validateDocument(parseDocument(src));
      const real = JSON.stringify(result).length;
      expect(jsonLengthWithoutEscapes(result)).toBeLessThanOrEqual(real);
      expect(jsonLengthWithoutEscapes(result) * 6).toBeGreaterThanOrEqual(real);
    }
    const worst = { '\u0001': '\u0000\ud800\u001f' };
    expect(jsonLengthWithoutEscapes(worst) * 6).toBeGreaterThanOrEqual(JSON.stringify(worst).length);
  });

  it('past the limit: more than the limit, never more than the true length', () => {
    const value = { a: 'x'.repeat(100), b: '"'.repeat(100), c: '\n'.repeat(100) };
    const real = JSON.stringify(value).length;
    for (const limit of [0, 50, 110, 250, real - 1]) {
      const counted = jsonLength(value, limit);
      expect(counted).toBeGreaterThan(limit);
      expect(counted).toBeLessThanOrEqual(real);
    }
    expect(jsonLength(value, real)).toBe(real);
  });

  it('a cycle is a TypeError, as for JSON.stringify', () => {
    const a: Record<string, unknown> = { x: 'y'.repeat(200) };
    a.self = a;
    expect(() => jsonLength(a)).toThrow(TypeError);
  });
});

describe('renderAnswer: the answer in pieces of UTF-8, each endpoint serialised and encoded once', () => {
  it.each(REAL)('%s: the pieces concatenated are the UTF-8 of JSON.stringify(result)', (_name, src) => {
    const result = validateDocument(parseDocument(src));
    expect(renderResult(result).equals(Buffer.from(JSON.stringify(result)))).toBe(true);
  });

  it('a flag map holding every endpoint (none has a summary) repeats their bytes, keys in order, some endpoints not ASCII', () => {
    // Every other endpoint's text has characters of two and three bytes: the byte offsets differ from the characters'.
    const paths = Object.fromEntries(
      Array.from({ length: 12 }, (_, i) => [`/items/${i}`, { get: { operationId: `get${i}`, responses: { 200: { description: i % 2 ? 'é ✓' : 'ok' } } } }]),
    );
    const result = validateDocument(
      parseDocument({ bytes: Buffer.from(JSON.stringify({ openapi: '3.0.3', info: { title: 't', version: '1' }, paths })), fileName: 'a.json' }),
    );
    expect(Object.keys(result.validations.endpoints_without_name)).toHaveLength(12);
    expect(renderResult(result).equals(Buffer.from(JSON.stringify(result)))).toBe(true);
  });

  it('a value of validations that is no map of endpoints is serialised as it is (a copy of an endpoint, an empty map, undefined)', () => {
    const result = validateDocument(parseDocument(fixture('validator/interface-example/petstore-1.0.11-without-addPet-operationId.json')));
    const copy = { ...result.all_endpoints[0]!, path: '/elsewhere' };
    const odd = { ...result, validations: { ...result.validations, endpoints_without_name: { 0: copy }, endpoints_without_description: [], extra: undefined } };
    expect(renderResult(odd as unknown as typeof result).equals(Buffer.from(JSON.stringify(odd)))).toBe(true);
  });
});

describe('the answer bound', () => {
  afterEach(() => vi.restoreAllMocks());

  it('is max(4 MiB, 10 × the document bytes) characters', () => {
    expect(ANSWER_LIMIT_FLOOR_CHARS).toBe(4 * MiB);
    expect(ANSWER_LIMIT_CHARS_PER_DOCUMENT_BYTE).toBe(10);
    expect(maxAnswerChars(0)).toBe(4 * MiB);
    expect(maxAnswerChars(100_000)).toBe(4 * MiB);
    expect(maxAnswerChars(MiB)).toBe(10 * MiB);
    expect(maxAnswerChars(25 * MiB)).toBe(250 * MiB);
  });

  it.each(REAL)('%s is accepted, its answer well inside the bound', (_name, src) => {
    const text = renderFresh(src).toString('utf8');
    expect(text.length).toBeLessThanOrEqual(maxAnswerChars(src.bytes.length));
    if (src.bytes.length > 10_000) expect(text.length / src.bytes.length).toBeLessThan(5);
  });

  it('the 1 MiB YAML alias document (472 MB of answer) is refused with the bound and the count, nothing rendered', () => {
    const bytes = yamlAliasBomb();
    expect(bytes.length).toBe(MiB);
    const stringify = vi.spyOn(JSON, 'stringify');
    const error = expectAppError(() => renderFresh({ bytes, fileName: 'bomb.yaml' }));
    expect(stringify).not.toHaveBeenCalled();
    expect(error.details).toEqual({ max_answer_chars: 10 * MiB, estimated_answer_chars: expect.any(Number), document_bytes: MiB });
    const { estimated_answer_chars } = error.details as { estimated_answer_chars: number };
    // all_endpoints and two flag maps (no operationId, no summary), 150 times the string each.
    expect(estimated_answer_chars).toBeGreaterThan(3 * 150 * (MiB - 10_000));
    expect(error.message).toContain(`limit of ${10 * MiB}`);
    expect(error.message).toContain(String(estimated_answer_chars));
  });

  it('the 12 MB JSON document whose path-level parameter goes into 8 methods is refused', () => {
    const bytes = jsonPathParameterBomb();
    const error = expectAppError(() => renderFresh({ bytes, fileName: 'bomb.json' }));
    expect(error.details).toMatchObject({ max_answer_chars: 10 * bytes.length, document_bytes: bytes.length });
    // all_endpoints and three flag maps, 8 endpoints each.
    expect((error.details as { estimated_answer_chars: number }).estimated_answer_chars).toBeGreaterThan(32 * (bytes.length - 1_000));
  });

  it('a JSON document whose path item is referenced by many paths is refused (issue 18 A.5: refs are followed, and counted)', () => {
    const long = 'A'.repeat(1_000_000);
    const paths: Record<string, unknown> = { '/target': { get: { description: long } } };
    for (let i = 0; i < 60; i++) paths[`/alias${i}`] = { $ref: '#/paths/~1target' };
    const bytes = Buffer.from(JSON.stringify({ openapi: '3.0.3', info: { title: 't', version: '1' }, paths }));
    const error = expectAppError(() => renderFresh({ bytes, fileName: 'refs.json' }));
    // 61 endpoints, each in all_endpoints and two flag maps (no operationId, no summary).
    expect((error.details as { estimated_answer_chars: number }).estimated_answer_chars).toBeGreaterThan(3 * 61 * long.length);
  });

  it('counts the converted Swagger 2.0 parameters, resolved bodies and followed path items exactly as rendered (issue 18 A)', () => {
    const doc = parseDocument({
      bytes: Buffer.from(
        JSON.stringify({
          swagger: '2.0',
          info: { title: 't', version: '1' },
          parameters: { Body: { name: 'b', in: 'body', description: 'é\u0001"', schema: { type: 'object' } } },
          paths: {
            '/a/{id}': {
              parameters: [{ name: 'id', in: 'path', required: true, type: 'string', description: 'x'.repeat(300) }],
              get: { operationId: ' ', parameters: [{ name: 'q', in: 'query', type: 'array', items: { type: 'string' } }] },
              post: { parameters: [{ $ref: '#/parameters/Body' }] },
            },
            '/b/{id}': { $ref: '#/paths/~1a~1{id}' },
          },
        }),
      ),
      fileName: 's.json',
    });
    const result = validateDocument(doc);
    expect(result.all_endpoints).toHaveLength(4);
    expect(jsonLength(result)).toBe(JSON.stringify(result).length);
    expect(jsonLengthWithoutEscapes(result)).toBeLessThanOrEqual(JSON.stringify(result).length);
  });

  it('a smaller document of the same shapes stays accepted when its answer is within the floor', () => {
    expect(() => renderFresh({ bytes: yamlAliasBomb({ bytes: 8_000, operations: 150 }), fileName: 'a.yaml' })).not.toThrow();
    expect(() => renderFresh({ bytes: jsonPathParameterBomb({ bytes: 100_000 }), fileName: 'a.json' })).not.toThrow();
  });

  it('the boundary: an answer of exactly the bound is accepted, one character more is refused', () => {
    const doc = parseDocument({ bytes: jsonPathParameterBomb({ bytes: 200_001 }), fileName: 'a.json' });
    const length = JSON.stringify(validateDocument(doc)).length;
    expect(length).toBeGreaterThan(ANSWER_LIMIT_FLOOR_CHARS);
    expect(length % 10).not.toBe(0);
    expect(() => validateDocument(doc, { documentBytes: Math.ceil(length / 10) })).not.toThrow();
    const error = expectAppError(() => validateDocument(doc, { documentBytes: Math.floor(length / 10) }));
    expect(error.details).toMatchObject({ max_answer_chars: 10 * Math.floor(length / 10), estimated_answer_chars: length });
  });

  it('escapes count: a description of control characters, short in the count without escapes, is refused by the exact count', () => {
    // Each U+0001 is 6 bytes in the document and 6 characters in the answer: 8 endpoints and 3 flag maps make 32 copies.
    const description = '\\u0001'.repeat(100_000);
    const bytes = Buffer.from(
      jsonPathParameterBomb({ bytes: 1_000 })
        .toString('utf8')
        .replace(/"description":"A+"/, `"description":"${description}"`),
    );
    const doc = parseDocument({ bytes, fileName: 'a.json' });
    const real = JSON.stringify(validateDocument(doc)).length;
    const limit = maxAnswerChars(bytes.length);
    expect(jsonLengthWithoutEscapes(validateDocument(doc))).toBeLessThanOrEqual(limit); // not refused by the first count
    expect(real).toBeGreaterThan(limit);
    const error = expectAppError(() => validateDocument(doc, { documentBytes: bytes.length }));
    expect((error.details as { estimated_answer_chars: number }).estimated_answer_chars).toBeGreaterThan(limit);
    expect((error.details as { estimated_answer_chars: number }).estimated_answer_chars).toBeLessThanOrEqual(real);
  });

  it('without documentBytes (the CLI on its own file) nothing is counted or refused', () => {
    const doc = parseDocument({ bytes: jsonPathParameterBomb({ bytes: 200_000 }), fileName: 'a.json' });
    expect(validateDocument(doc).all_endpoints).toHaveLength(8);
  });

  it('the refusal is cached like any invalid_swagger_file: the document is not parsed again', async () => {
    const cache = createValidationCache({ maxBytes: 64 * MiB });
    const src = { bytes: yamlAliasBomb(), fileName: 'bomb.yaml' };
    const first = await expectAppErrorAsync(cache.answer(src, {}, renderValidation));
    const jsYaml = createRequire(import.meta.url)('js-yaml') as { load: (...args: unknown[]) => unknown };
    const load = vi.spyOn(jsYaml, 'load');
    const second = await expectAppErrorAsync(cache.answer(src, { sha256: createHash('sha256').update(src.bytes).digest('hex') }, renderValidation));
    expect(load).not.toHaveBeenCalled();
    expect(second.details).toEqual(first.details);
    expect(cache.stats()).toMatchObject({ entries: 1, hits: 1 });
  });
});
