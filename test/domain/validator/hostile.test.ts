import { describe, expect, it, vi } from 'vitest';
import { parseDocument, renderFresh } from '../../../src/domain/validator/index.js';
import { MAX_MERGED_KEYS, mergedKeysBound } from '../../../src/domain/validator/parse.js';
import { expectAppError, fixture, source } from './helpers.js';
import type { DocumentSource } from '../../../src/domain/validator/index.js';

/**
 * Documents built to hurt (issue 3 "Hostile documents"): each is refused with
 * invalid_swagger_file, never a hang, a crash or a stack overflow. How soon: `npm run
 * bench` (section 2, hostile documents); the test timeout catches a hang.
 */
function refused(src: DocumentSource, details?: Record<string, unknown>): string {
  const error = expectAppError(() => parseDocument(src));
  if (details) expect(error.details).toMatchObject(details);
  return error.message;
}

const hostile = (name: string) => fixture(`validator/hostile/${name}`);
const OPENAPI = '{"openapi":"3.0.3","info":{"title":"t","version":"1"},"paths":{},"x":';

describe('not JSON or YAML', () => {
  it('JSON with an unquoted key: position of the key', () => {
    expect(refused(hostile('not-json.json'), { line: 1, column: 46 })).toMatch(/not valid JSON: expected a property name/);
  });

  it('YAML with an unclosed flow sequence: position from the YAML parser', () => {
    expect(refused(hostile('not-yaml.yaml'), { line: 4, column: 3 })).toMatch(/not valid YAML/);
  });

  it.each([
    ['openapi: 3.0.3\npaths: {}\nx:\n  ? [a, b]\n  : 1\n', { line: 4, column: 5 }],
    ['openapi: 3.0.3\nx: {a: [1, 2], b: {c: 1}}\ny:\n  - k: v\n  - {[1]: 2}\n', { line: 5, column: 6 }],
    ['openapi: 3.0.3\n? {a: 1}\n: x\n', { line: 2, column: 3 }],
  ])("YAML with a mapping or sequence as a key: the key's position (%#)", (text, position) => {
    expect(refused(source(text, 'a.yaml'), position)).toBe(
      `The document is not valid YAML: a mapping or sequence is used as a key (line ${position.line}, column ${position.column}).`,
    );
  });

  it('truncated JSON (kubernetes.json): line and column', () => {
    refused(fixture('specs/kubernetes.json'), { line: 154, column: 15 });
  });

  it.each([
    ['{"openapi":"3.0.3",', 'unexpected end of the document', { line: 1, column: 20 }],
    ['{"openapi":"3.0.3"}\n{}', 'unexpected text after the end of the document', { line: 2, column: 1 }],
    ['{"openapi":tru}', 'unexpected character', { line: 1, column: 12 }],
    ['{"openapi":"3.0.3",}', 'expected a property name', { line: 1, column: 20 }],
    ['{"openapi":"3.0.3" "paths":{}}', "expected ',' or '}'", { line: 1, column: 20 }],
    ['{"a":"\\x"}', 'bad escape', { line: 1, column: 7 }],
    ['{"a":01}', "expected ',' or '}'", { line: 1, column: 7 }],
    ['{"a":[1 2]}', "expected ',' or ']'", { line: 1, column: 9 }],
    // A repeated key before the syntax error does not hide it.
    ['{"a":1,"a":2,', 'unexpected end of the document', { line: 1, column: 14 }],
    ['{"a":[1,]}', 'unexpected character "]"', { line: 1, column: 9 }],
    ['{"a" 1}', "expected ':' after a property name", { line: 1, column: 6 }],
    ['{"a":"x\ty"}', 'bad control character in string', { line: 1, column: 8 }],
    ['{"a":"\\u12G4"}', 'bad \\u escape in string', { line: 1, column: 7 }],
    ['{"a":"abc', 'unterminated string', { line: 1, column: 10 }],
    ['{"a":/* no */1}', 'unexpected character "/"', { line: 1, column: 6 }],
    ['{"a":1e}', 'bad number', { line: 1, column: 6 }],
    ["{'a':1}", 'expected a property name', { line: 1, column: 2 }],
    ['{"a":1}\u00a0x', 'unexpected character', { line: 1, column: 8 }],
    // Whitespace JSON does not allow, which the strict reader skips: the engine's own position.
    ['{\f"a":1}', 'not valid JSON', { line: 1, column: 2 }],
  ])('%j: %s', (text, message, position) => {
    expect(refused(source(text, 'x.json'), position)).toContain(message);
  });

  it('an empty document', () => {
    expect(refused(source('', 'x.json'))).toBe('The document is empty.');
    expect(refused(source(' \n', 'x.yaml'))).toBe('The document is empty.');
  });

  it('binary garbage', () => {
    refused({ bytes: Buffer.from([0x00, 0xff, 0x10, 0x80, 0x7b, 0x00]), fileName: 'x.yaml' });
  });
});

describe('not an OpenAPI or Swagger object', () => {
  it.each([
    ['scalar-root.json', ''],
    ['array-root.yaml', ''],
    ['paths-array.json', '/paths'],
    ['path-item-string.yaml', '/paths/~1a'],
    ['operation-array.json', '/paths/~1a/get'],
    ['operation-number.yaml', '/paths/~1a/post'],
  ])('%s → pointer %j', (name, pointer) => {
    refused(hostile(name), { pointer });
  });

  it.each([
    ['{"info":{}}', ''],
    ['{"openapi":"2.0"}', '/openapi'],
    ['{"openapi":3}', '/openapi'],
    ['{"swagger":"3.0"}', '/swagger'],
    ['{"swagger":2}', '/swagger'],
    ['{"openapi":"3.0.3","paths":null}', '/paths'],
    ['{"openapi":"3.0.3","paths":{"/a":null}}', '/paths/~1a'],
    ['null', ''],
    ['42', ''],
  ])('%s → pointer %j', (text, pointer) => {
    refused(source(text, 'x.json'), { pointer });
  });
});

describe('expansion and nesting', () => {
  it('a YAML alias bomb (billion laughs)', () => {
    expect(refused(hostile('billion-laughs.yaml'))).toMatch(/expands to more than/);
  });

  it('a YAML merge-key bomb (a mapping of 1,000 keys merged 1,000 times): refused at the merge past the bound of its size', () => {
    const src = hostile('merge-key-bomb.yaml');
    const bound = mergedKeysBound(src.bytes.length);
    expect(bound).toBe(10_000 + 4 * 23_859);
    // Lines 1–5 hold the anchor; each merge after it counts the mapping's 1,000 keys and itself.
    const line = 5 + Math.ceil((bound + 1) / 1001);
    expect(refused(src, { line, column: 6, max_merged_keys: bound })).toBe(
      `The document's YAML merge keys (<<) copy more than ${bound} keys (line ${line}, column 6).`,
    );
  });

  it("merge keys are bounded by the document's size, and by MAX_MERGED_KEYS whatever its size", () => {
    expect(mergedKeysBound(0)).toBe(10_000);
    expect(mergedKeysBound(1000)).toBe(14_000);
    expect(mergedKeysBound(25 * 1024 * 1024)).toBe(MAX_MERGED_KEYS);
    // Within the bound: a mapping of 20 keys merged into 400 operations (8,400 counted, in 9 KB).
    const keys = Array.from({ length: 20 }, (_, i) => `k${i}: ${i}`).join(', ');
    const text = `openapi: 3.0.3\nx-a: &a {${keys}}\nx-b:\n${'  - {<<: *a, id: 1}\n'.repeat(400)}`;
    const doc = parseDocument(source(text, 'a.yaml')) as { 'x-b': Record<string, number>[] };
    expect(Object.keys(doc['x-b'][399]!)).toHaveLength(21);
  });

  it('a self-referencing alias', () => {
    expect(refused(hostile('self-alias.yaml'))).toMatch(/refers to itself|nested more than/);
  });

  it('an alias that is its own element', () => {
    refused(source('openapi: 3.0.3\nx: &a [*a]\n', 'x.yaml'));
  });

  it('JSON nested 300,000 deep: refused at the 257th level, before parsing', () => {
    const text = `${OPENAPI}${'['.repeat(300_000)}${']'.repeat(300_000)}}`;
    refused(source(text, 'x.json'), { line: 1, column: OPENAPI.length + 256, max_depth: 256 });
  });

  it('JSON nested 300,000 deep, without the scan before parsing (the CLI): refused after parsing, at the same place', () => {
    const text = `${OPENAPI}${'['.repeat(300_000)}${']'.repeat(300_000)}}`;
    const error = expectAppError(() => parseDocument(source(text, 'x.json'), { scanNestingFirst: false }));
    expect(error.details).toEqual({ line: 1, column: OPENAPI.length + 256, max_depth: 256 });
  });

  it.each([
    ['too deep and never closed', `${OPENAPI}${'['.repeat(300_000)}`],
    ['too deep and malformed', `${OPENAPI}${'['.repeat(300)}${']'.repeat(299)}}`],
    ['too deep only in a value that a repeated key replaces', `${OPENAPI}{"a":${'['.repeat(300)}${']'.repeat(300)},"a":1}}`],
  ])('JSON %s: the same too-deep error with and without the scan before parsing (the strict reader never reads past the limit)', (_, text) => {
    const scanned = expectAppError(() => parseDocument(source(text, 'x.json')));
    const skipped = expectAppError(() => parseDocument(source(text, 'x.json'), { scanNestingFirst: false }));
    expect(scanned.details).toEqual({ line: 1, column: OPENAPI.length + 256 + (text.includes('{"a":[') ? 4 : 0), max_depth: 256 });
    expect(skipped.message).toBe(scanned.message);
    expect(skipped.details).toEqual(scanned.details);
  });

  it('the scan runs before JSON.parse by default, and is skipped only when asked', () => {
    const text = `${OPENAPI}${'['.repeat(1000)}${']'.repeat(1000)}}`;
    const parse = vi.spyOn(JSON, 'parse');
    try {
      expectAppError(() => parseDocument(source(text, 'x.json')));
      expect(parse).not.toHaveBeenCalled();
      expectAppError(() => parseDocument(source(text, 'x.json'), { scanNestingFirst: false }));
      expect(parse).toHaveBeenCalledTimes(1);
    } finally {
      parse.mockRestore();
    }
  });

  it('JSON objects nested 300,000 deep', () => {
    refused(source(`${OPENAPI}${'{"a":'.repeat(300_000)}1${'}'.repeat(300_001)}`, 'x.json'), { max_depth: 256 });
  });

  it('YAML flow collections nested 300,000 deep', () => {
    refused(source(`openapi: 3.0.3\nx: ${'['.repeat(300_000)}${']'.repeat(300_000)}\n`, 'x.yaml'), { max_depth: 256 });
  });

  it('YAML block sequences nested 300,000 deep on one line', () => {
    refused(source(`openapi: 3.0.3\nx:\n  ${'- '.repeat(300_000)}x\n`, 'x.yaml'), { max_depth: 256 });
  });

  it('YAML block mappings nested 1,000 deep by indentation', () => {
    const lines = Array.from({ length: 1000 }, (_, i) => `${' '.repeat(i + 1)}k${i}:`);
    refused(source(`openapi: 3.0.3\nx:\n${lines.join('\n')} 1\n`, 'x.yaml'), { max_depth: 256 });
  });

  it('accepts exactly 256 levels, in JSON and in YAML', () => {
    // The root object is level 1, so 255 more.
    const json = `${OPENAPI}${'['.repeat(255)}${']'.repeat(255)}}`;
    expect(() => parseDocument(source(json, 'x.json'))).not.toThrow();
    expectAppError(() => parseDocument(source(`${OPENAPI}${'['.repeat(256)}${']'.repeat(256)}}`, 'x.json')));
    expect(() => parseDocument(source(json, 'x.json'), { scanNestingFirst: false })).not.toThrow();
    expectAppError(() => parseDocument(source(`${OPENAPI}${'{"a":'.repeat(256)}1${'}'.repeat(256)}}`, 'x.json'), { scanNestingFirst: false }));
    const yaml = `openapi: 3.0.3\nx: ${'['.repeat(255)}${']'.repeat(255)}\n`;
    expect(() => parseDocument(source(yaml, 'x.yaml'))).not.toThrow();
    expectAppError(() => parseDocument(source(`openapi: 3.0.3\nx: ${'['.repeat(256)}${']'.repeat(256)}\n`, 'x.yaml')));
  });

  it('the render of a deep-but-allowed document is bounded too', () => {
    const json = `{"openapi":"3.0.3","paths":{"/a":{"get":{"responses":${'{"a":'.repeat(250)}1${'}'.repeat(250)}}}}}`;
    expect(renderFresh(source(json, 'x.json')).toString('utf8')).toContain('"path":"/a"');
  });
});

describe('duplicate keys', () => {
  it('in JSON, which JSON.parse would silently accept: where, and which key', () => {
    const message = refused(hostile('duplicate-keys.json'), { line: 7, column: 7, pointer: '/paths/~1a/get' });
    expect(message).toContain('"get"');
  });

  it.each([
    ['{"openapi":"3.0.3","openapi":"3.1.0"}', { line: 1, column: 20, pointer: '/openapi' }],
    ['{"openapi":"3.0.3","x":[{"a":1},{"a":1,"a":2}]}', { line: 1, column: 40, pointer: '/x/1/a' }],
    ['{"openapi":"3.0.3","x":{"a~b/c":1,"a~b/c":2}}', { pointer: '/x/a~0b~1c' }],
    ['{"openapi":"3.0.3","x":{"\\u0061":1,"a":2}}', { pointer: '/x/a' }],
  ])('%s', (text, details) => {
    refused(source(text, 'x.json'), details);
  });

  it('keys that only look alike are not duplicates', () => {
    expect(() => parseDocument(source('{"openapi":"3.0.3","x":{"a":{"a":1},"b":"a:b","c":"\\"d\\":"}}', 'x.json'))).not.toThrow();
  });

  it('in YAML', () => {
    expect(refused(hostile('duplicate-keys.yaml'), { line: 6, column: 3 })).toMatch(/duplicated mapping key/);
  });
});

describe('YAML tags that construct objects', () => {
  it.each(['tag-js-function.yaml', 'tag-python-object.yaml', 'tag-custom.yaml', 'tag-binary.yaml'])('%s', (name) => {
    expect(refused(hostile(name), { line: 4 })).toMatch(/unknown .*tag/);
  });
});

describe('size', () => {
  it('maxBytes refuses a larger document with payload_too_large before reading it', () => {
    const error = expectAppError(() => parseDocument(source(`${OPENAPI}1}`, 'x.json'), { maxBytes: 10 }), 'payload_too_large');
    expect(error.details).toEqual({ max_bytes: 10 });
  });
});
