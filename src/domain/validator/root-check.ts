import { describeValue, invalidDocument, isPlainObject, jsonPointer } from './problems.js';
import type { ApiDocument } from './types.js';

/** The eight HTTP methods a path item may describe (DESIGN §5), in no particular order. */
export const HTTP_METHODS: ReadonlySet<string> = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']);

export type SpecVersion = 'openapi3' | 'swagger2';

const OPENAPI_3 = /^3\.\d+/;

/** Which specification a plain object claims to follow, or null. */
export function specVersion(doc: Record<string, unknown>): SpecVersion | null {
  if (typeof doc.openapi === 'string' && OPENAPI_3.test(doc.openapi)) return 'openapi3';
  if (doc.swagger === '2.0') return 'swagger2';
  return null;
}

/**
 * What the validator needs to trust before it reads a document: a plain object that
 * declares `openapi: "3.x…"` or `swagger: "2.0"`; `paths`, when present, an object of
 * path items that are objects (its `x-` keys are extensions, not path items); every
 * operation (a method key of a path item) an object.
 * Anything else is `invalid_swagger_file` with a JSON pointer to the offending value.
 * Values below an operation are not checked: they are reported as written.
 */
export function checkRoot(doc: unknown): asserts doc is ApiDocument {
  if (!isPlainObject(doc)) {
    throw invalidDocument(`The document is not an OpenAPI or Swagger object: its root is ${describeValue(doc)}.`, { pointer: '' });
  }
  if (specVersion(doc) === null) {
    if (Object.hasOwn(doc, 'openapi')) {
      throw invalidDocument(`The "openapi" field must be a 3.x version string such as "3.0.3", not ${shown(doc.openapi)}.`, {
        pointer: '/openapi',
      });
    }
    if (Object.hasOwn(doc, 'swagger')) {
      throw invalidDocument(`The "swagger" field must be the string "2.0", not ${shown(doc.swagger)}.`, { pointer: '/swagger' });
    }
    throw invalidDocument('The document is neither OpenAPI 3.x (an "openapi" field) nor Swagger 2.0 (a "swagger" field).', {
      pointer: '',
    });
  }
  if (!Object.hasOwn(doc, 'paths')) return;
  const paths = doc.paths;
  if (!isPlainObject(paths)) {
    throw invalidDocument(`"paths" must be an object, not ${describeValue(paths)}.`, { pointer: '/paths' });
  }
  for (const path in paths) {
    if (path.startsWith('x-')) continue; // an extension of the Paths Object, whatever its value
    const item = paths[path];
    if (!isPlainObject(item)) {
      throw invalidDocument(`The path item ${JSON.stringify(path)} must be an object, not ${describeValue(item)}.`, {
        pointer: jsonPointer(['paths', path]),
      });
    }
    for (const key in item) {
      if (!HTTP_METHODS.has(key)) continue;
      const operation = item[key];
      if (!isPlainObject(operation)) {
        throw invalidDocument(`The operation ${key.toUpperCase()} ${JSON.stringify(path)} must be an object, not ${describeValue(operation)}.`, {
          pointer: jsonPointer(['paths', path, key]),
        });
      }
    }
  }
}

function shown(value: unknown): string {
  if (typeof value === 'string' || typeof value === 'number') return JSON.stringify(value).slice(0, 40);
  return describeValue(value);
}
