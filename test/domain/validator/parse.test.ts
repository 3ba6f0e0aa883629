import { describe, expect, it } from 'vitest';
import { detectFormat, parseDocument, validateDocument } from '../../../src/domain/validator/index.js';
import { expectAppError } from './helpers.js';

const bytes = (text: string) => Buffer.from(text);

describe('detectFormat', () => {
  it.each([
    [{ mediaType: 'application/json' }, '{', 'json'],
    [{ mediaType: 'application/json; charset=utf-8' }, 'a: 1', 'json'],
    [{ mediaType: 'application/vnd.oai.openapi+json;version=3.0' }, 'a: 1', 'json'],
    [{ mediaType: 'application/yaml' }, '{}', 'yaml'],
    [{ mediaType: 'application/x-yaml' }, '{}', 'yaml'],
    [{ mediaType: 'text/yaml' }, '{}', 'yaml'],
    [{ mediaType: 'application/vnd.oai.openapi' }, '{}', 'yaml'],
    [{ mediaType: 'TEXT/X-YAML' }, '{}', 'yaml'],
    [{ mediaType: 'text/plain', fileName: 'api.json' }, 'a: 1', 'json'],
    [{ mediaType: 'application/octet-stream', fileName: 'api.YML' }, '{}', 'yaml'],
    [{ fileName: 'https://example.com/openapi.yaml' }, '{}', 'yaml'],
    [{ fileName: '/docs/openapi.json?raw=1' }, 'a: 1', 'json'],
    [{ mediaType: 'application/json', fileName: 'api.yaml' }, 'a: 1', 'json'],
    [{}, '  \n\t{"openapi":"3.0.0"}', 'json'],
    [{}, '\ufeff{"openapi":"3.0.0"}', 'json'],
    [{}, 'openapi: 3.0.0', 'yaml'],
    [{}, '[1]', 'yaml'],
    [{}, '', 'yaml'],
    [{ mediaType: null, fileName: null }, '{', 'json'],
  ])('%j + %j → %s', (meta, text, expected) => {
    expect(detectFormat({ bytes: bytes(text), ...meta })).toBe(expected);
  });
});

describe('parseDocument', () => {
  const doc = { openapi: '3.0.3', info: { title: 'é ✓ 😀', version: '1' }, paths: {} };

  it('reads JSON and YAML to the same value', () => {
    expect(parseDocument({ bytes: bytes(JSON.stringify(doc)), fileName: 'a.json' })).toEqual(doc);
    expect(parseDocument({ bytes: bytes('openapi: 3.0.3\ninfo:\n  title: é ✓ 😀\n  version: "1"\npaths: {}\n'), fileName: 'a.yaml' })).toEqual(doc);
  });

  it('reads JSON sent as YAML (YAML is a superset)', () => {
    expect(parseDocument({ bytes: bytes(JSON.stringify(doc)), mediaType: 'application/yaml' })).toEqual(doc);
  });

  it('drops a UTF-8 byte-order mark, in JSON and YAML', () => {
    const bom = Buffer.from([0xef, 0xbb, 0xbf]);
    expect(parseDocument({ bytes: Buffer.concat([bom, bytes(JSON.stringify(doc))]), fileName: 'a.json' })).toEqual(doc);
    expect(parseDocument({ bytes: Buffer.concat([bom, bytes('openapi: 3.0.3\n')]), fileName: 'a.yaml' })).toEqual({ openapi: '3.0.3' });
  });

  it('reads UTF-16 with a byte-order mark (both byte orders)', () => {
    const le = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(JSON.stringify(doc), 'utf16le')]);
    expect(parseDocument({ bytes: le, fileName: 'a.json' })).toEqual(doc);
    const be = Buffer.from(le);
    be.swap16();
    expect(parseDocument({ bytes: be, fileName: 'a.json' })).toEqual(doc);
  });

  it('keeps YAML dates and version-like numbers as YAML 1.2 core scalars (no Date objects)', () => {
    const parsed = parseDocument({ bytes: bytes('openapi: 3.0.3\nx-date: 2023-08-20\nx-n: 012\nx-on: on\n'), fileName: 'a.yaml' });
    expect(parsed).toEqual({ openapi: '3.0.3', 'x-date': '2023-08-20', 'x-n': 12, 'x-on': 'on' });
  });

  it('applies YAML merge keys: the mapping\'s own keys win wherever they are written, earlier sources win, a quoted "<<" is a key', () => {
    const text = [
      'openapi: 3.0.3',
      'x-a: &a {k: 1, j: 2}',
      'x-b: &b {j: 4, m: 5}',
      'x-c: {z: 0, <<: *a, j: 3}',
      'x-d: {j: 3, <<: [*a, *b]}',
      'x-e: {"<<": *a}',
      '',
    ].join('\n');
    const parsed = parseDocument({ bytes: bytes(text), fileName: 'a.yaml' }) as Record<string, unknown>;
    expect(parsed['x-c']).toEqual({ z: 0, k: 1, j: 3 });
    expect(Object.keys(parsed['x-c'] as object)).toEqual(['z', 'k', 'j']);
    expect(parsed['x-d']).toEqual({ j: 3, k: 1, m: 5 });
    expect(parsed['x-e']).toEqual({ '<<': { k: 1, j: 2 } });
    expect(parsed['x-a']).toEqual({ k: 1, j: 2 });
  });

  it('refuses a merge key whose value is not a mapping', () => {
    const error = expectAppError(() => parseDocument({ bytes: bytes('openapi: 3.0.3\nx-c: {<<: 1}\n'), fileName: 'a.yaml' }));
    expect(error.details).toEqual({ line: 2, column: 7 });
  });

  it('treats __proto__ as an ordinary key', () => {
    const parsed = parseDocument({ bytes: bytes('{"openapi":"3.0.3","__proto__":{"polluted":true}}'), fileName: 'a.json' }) as Record<string, unknown>;
    expect(Object.hasOwn(parsed, '__proto__')).toBe(true);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    const yaml = parseDocument({ bytes: bytes('openapi: 3.0.3\n__proto__: {polluted: true}\n'), fileName: 'a.yaml' }) as Record<string, unknown>;
    expect(Object.hasOwn(yaml, '__proto__')).toBe(true);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('counts columns in characters and lines after CRLF', () => {
    const error = expectAppError(() => parseDocument({ bytes: bytes('{\r\n  "t": "é😀",\r\n  x}'), fileName: 'a.json' }));
    expect(error.details).toEqual({ line: 3, column: 3 });
    const deep = expectAppError(() => parseDocument({ bytes: bytes(`{"é😀":${'['.repeat(300)}`), fileName: 'a.json' }));
    expect(deep.details).toMatchObject({ line: 1, column: 6 + 255 + 1 });
  });

  it('accepts any OpenAPI 3.x version string and Swagger "2.0"', () => {
    for (const openapi of ['3.0.0', '3.0.4', '3.1.1', '3.2.0', '3.1']) {
      expect(() => parseDocument({ bytes: bytes(JSON.stringify({ openapi })), fileName: 'a.json' })).not.toThrow();
    }
    expect(() => parseDocument({ bytes: bytes('swagger: "2.0"\n'), fileName: 'a.yaml' })).not.toThrow();
  });

  it('validateDocument repeats the root check for any value it is given', () => {
    expectAppError(() => validateDocument([1, 2]));
    expectAppError(() => validateDocument({ openapi: '3.0.0', paths: { '/a': { get: 'x' } } }));
  });
});
