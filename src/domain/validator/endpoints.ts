import { isPlainObject, jsonPointer } from './problems.js';
import { HTTP_METHODS, specVersion } from './root-check.js';
import { resolveLocalRef, resolveLocalRefWithPointer } from './refs.js';
import type { ApiDocument, Endpoint } from './types.js';
import { mediaTypeEssence } from './media-types.js';

/** Method key → endpoint `type` (a table rather than `toUpperCase`, which allocates a string per endpoint). */
const METHOD_TYPES: Record<string, string> = {
  get: 'GET',
  put: 'PUT',
  post: 'POST',
  delete: 'DELETE',
  options: 'OPTIONS',
  head: 'HEAD',
  patch: 'PATCH',
  trace: 'TRACE',
};

/**
 * Every (path, method) of a root-checked document: paths in document order, methods in
 * the order they appear under their path; other path-item keys (`parameters`, `summary`,
 * `servers`, `x-…`) and `webhooks` are not endpoints, nor are `x-` keys of `paths`
 * (extensions). A path item given by a local `$ref` is followed (refs.ts); its own fields
 * win over the referenced ones. Endpoint values are the document's own subtrees (never
 * copies) except where Swagger 2.0 is converted, so building them is linear in the number
 * of operations, not in the size of the document.
 */
/**
 * Where an endpoint comes from in the document, for findings that point at their culprit.
 * Pointers are built on first use: most endpoints never need one.
 */
export class EndpointSource {
  private operationPointer: string | null = null;
  constructor(
    /** The Operation Object as written. */
    readonly operation: Record<string, unknown>,
    /** The path item's `parameters` as written. */
    readonly pathParameters: unknown,
    private readonly path: string,
    private readonly method: string,
    /** The written `paths` entry, and the pointer of the path item its `$ref` resolves to (null when not a `$ref`). */
    private readonly entry: Record<string, unknown>,
    private readonly targetPointer: string | null,
  ) {}

  /** RFC 6901 pointer of the operation (into the referenced path item when it comes from a `$ref`). */
  get pointer(): string {
    this.operationPointer ??= this.pointerOf(this.method);
    return this.operationPointer;
  }

  /** Whether the operation is written in the path item this path's `$ref` resolves to (another path's, or a component), not at this path. */
  get borrowed(): boolean {
    return this.targetPointer !== null && !Object.hasOwn(this.entry, this.method);
  }

  /** RFC 6901 pointer of the path item's `parameters`. */
  get pathParametersPointer(): string {
    return this.pointerOf('parameters');
  }

  private pointerOf(key: string): string {
    if (this.targetPointer === null || Object.hasOwn(this.entry, key)) return jsonPointer(['paths', this.path, key]);
    return this.targetPointer + jsonPointer([key]);
  }
}

/**
 * `sources`, when given, receives one EndpointSource per endpoint, in the same order.
 */
export function extractEndpoints(doc: ApiDocument, sources?: EndpointSource[]): Endpoint[] {
  const paths = doc.paths;
  if (!isPlainObject(paths)) return [];
  const swagger2 = specVersion(doc) === 'swagger2';
  // A Swagger 2.0 parameter converted once, however many operations inherit or refer to it.
  const converted = new Map<Record<string, unknown>, Record<string, unknown>>();
  const endpoints: Endpoint[] = [];
  for (const path in paths) {
    if (path.startsWith('x-')) continue;
    const entry = paths[path];
    const item = pathItem(doc, entry);
    if (!item) continue;
    const targetPointer = sources && item !== entry ? (resolveLocalRefWithPointer(doc, entry)?.pointer ?? null) : null;
    for (const method in item) {
      if (!HTTP_METHODS.has(method)) continue;
      const operation = item[method];
      // Operations of a directly written path item are root-checked; a referenced one's are not.
      if (!isPlainObject(operation)) continue;
      sources?.push(new EndpointSource(operation, item.parameters, path, method, entry as Record<string, unknown>, targetPointer));
      const parameters = mergeParameters(doc, item.parameters, operation.parameters);
      let requestBody: unknown;
      let requestParameters: Record<string, unknown>[];
      let responseBody: Record<string, unknown>;
      if (swagger2) {
        const parts = splitSwagger2Parameters(doc, operation, parameters, converted);
        requestBody = parts.requestBody;
        requestParameters = parts.requestParameters;
        responseBody = convertSwagger2Responses(doc, operation);
      } else {
        requestBody = operation.requestBody === undefined ? null : operation.requestBody;
        requestParameters = parameters;
        responseBody = isPlainObject(operation.responses) ? operation.responses : {};
      }
      const operationId = operation.operationId;
      endpoints.push({
        // Missing (absent, not a string, blank) is null, as the interface says.
        operationId: typeof operationId === 'string' && operationId.trim() !== '' ? operationId : null,
        type: METHOD_TYPES[method]!,
        name: typeof operation.summary === 'string' ? operation.summary : '',
        description: typeof operation.description === 'string' ? operation.description : '',
        requestBody,
        requestParameters: requestParameters.length > 0 ? requestParameters : null,
        responseBody,
        path,
      });
    }
  }
  return endpoints;
}

/**
 * The path item a `paths` entry stands for: itself, or what its local `$ref` points to,
 * with the entry's own fields (besides `$ref`) winning. Null when it is not an object
 * (only a referenced one can be: the root check refuses the others).
 */
function pathItem(doc: ApiDocument, entry: unknown): Record<string, unknown> | null {
  if (!isPlainObject(entry)) return null;
  if (typeof entry.$ref !== 'string') return entry;
  const target = resolveLocalRef(doc, entry);
  if (!target) return entry;
  let own = false;
  for (const key in entry) {
    if (key !== '$ref') {
      own = true;
      break;
    }
  }
  if (!own) return target;
  const merged: Record<string, unknown> = { ...target };
  for (const key in entry) if (key !== '$ref') merged[key] = entry[key];
  return merged;
}

/**
 * An operation's parameters with its path item's (DESIGN §5): path-level parameters
 * first, each replaced in place by the operation's parameter of the same name and `in`,
 * then the operation's other parameters in their order. A local `$ref` parameter is
 * resolved to learn its name and `in` (it is still written as the `$ref`); one that does
 * not resolve is the same as another with the same `$ref` string. Entries that are not
 * objects are dropped. Returns the document's own array when there is nothing to merge.
 */
function mergeParameters(doc: ApiDocument, pathLevel: unknown, operationLevel: unknown): Record<string, unknown>[] {
  const base = objectsOf(pathLevel);
  const own = objectsOf(operationLevel);
  if (base.length === 0) return own;
  if (own.length === 0) return base;

  // Parameter lists are short: a linear search beats building a map for each operation.
  const merged = base.slice();
  const baseKeys = base.map((p) => parameterKey(doc, p));
  for (const parameter of own) {
    const key = parameterKey(doc, parameter);
    const i = key === null ? -1 : baseKeys.indexOf(key);
    if (i === -1) {
      merged.push(parameter);
    } else {
      merged[i] = parameter;
      baseKeys[i] = null; // a second parameter of the same key is appended
    }
  }
  return merged;
}

function objectsOf(list: unknown): Record<string, unknown>[] {
  if (!Array.isArray(list)) return [];
  for (const item of list) {
    if (!isPlainObject(item)) return list.filter(isPlainObject);
  }
  return list as Record<string, unknown>[];
}

function parameterKey(doc: ApiDocument, parameter: Record<string, unknown>): string | null {
  const target = typeof parameter.$ref === 'string' ? resolveLocalRef(doc, parameter) : parameter;
  if (target && typeof target.name === 'string' && typeof target.in === 'string') return `${target.in}\u0000${target.name}`;
  if (typeof parameter.$ref === 'string') return `$ref\u0000${parameter.$ref}`;
  return null;
}

/**
 * Swagger 2.0 operations in the OpenAPI 3 form of the endpoint object (DESIGN §5).
 * New objects are built only where the forms differ; schemas and everything below them
 * are the document's own values, never copies.
 *
 * - `in: body` → `requestBody: {description?, content: {<consumes…>: {schema}}, required?}`.
 * - `in: formData` → one object schema (a property per parameter, `type: file` becoming
 *   `{type: string, format: binary}`), under the form media types of `consumes`, else
 *   `multipart/form-data` when a file is sent and `application/x-www-form-urlencoded`
 *   otherwise.
 * - A parameter given by a local `$ref` is resolved to learn its `in`: a body or formData
 *   one is converted as an inline one is, any other stays written as the `$ref`.
 * - Other parameters → the OpenAPI 3 parameter form (`parameter3`).
 * - `consumes`/`produces`: the operation's, else the document's, else `application/json`.
 * - A response `schema` (and `examples`) → `content: {<produces…>: {schema, example?}}`; a
 *   response given by a local `$ref` whose target has a schema is converted the same way
 *   (other `$ref`s stay as written).
 * - A second `in: body` parameter (2.0 allows one) is not the body: the first is, and the
 *   rule `parameter-body-duplicate` reports the others.
 */

const DEFAULT_MEDIA_TYPES = ['application/json'];
const FORM_URLENCODED = 'application/x-www-form-urlencoded';
const MULTIPART = 'multipart/form-data';

/** The parameter fields that are schema keywords in Swagger 2.0. */
const SCHEMA_FIELDS = new Set([
  'description',
  'type',
  'format',
  'items',
  'default',
  'maximum',
  'exclusiveMaximum',
  'minimum',
  'exclusiveMinimum',
  'maxLength',
  'minLength',
  'pattern',
  'maxItems',
  'minItems',
  'uniqueItems',
  'enum',
  'multipleOf',
]);

interface Swagger2Parts {
  requestBody: Record<string, unknown> | null;
  requestParameters: Record<string, unknown>[];
}

function splitSwagger2Parameters(
  doc: Record<string, unknown>,
  operation: Record<string, unknown>,
  parameters: Record<string, unknown>[],
  converted: Map<Record<string, unknown>, Record<string, unknown>>,
): Swagger2Parts {
  let body: Record<string, unknown> | null = null;
  const form: Record<string, unknown>[] = [];
  const rest: Record<string, unknown>[] = [];
  for (const parameter of parameters) {
    const isRef = typeof parameter.$ref === 'string';
    const resolved = isRef ? resolveLocalRef(doc, parameter) : parameter;
    const location = resolved?.in;
    if (location === 'body') body ??= resolved;
    else if (location === 'formData') form.push(resolved!);
    else rest.push(isRef ? parameter : parameter3(parameter, converted));
  }
  if (!body && form.length === 0) return { requestBody: null, requestParameters: rest };

  const consumes = mediaTypes(operation.consumes, doc.consumes);
  const content: Record<string, unknown> = {};
  const requestBody: Record<string, unknown> = {};
  let required: boolean | undefined;
  if (body) {
    if (typeof body.description === 'string') requestBody.description = body.description;
    for (const mediaType of consumes) content[mediaType] = body.schema === undefined ? {} : { schema: body.schema };
    if (typeof body.required === 'boolean') required = body.required;
  }
  if (form.length > 0) {
    const properties: Record<string, unknown> = {};
    const names: string[] = [];
    let sendsFile = false;
    for (const parameter of form) {
      const name = typeof parameter.name === 'string' ? parameter.name : '';
      properties[name] = formFieldSchema(parameter);
      if (parameter.required === true) names.push(name);
      if (parameter.type === 'file') sendsFile = true;
    }
    const schema: Record<string, unknown> = { type: 'object', properties };
    if (names.length > 0) schema.required = names;
    const declared = consumes.filter((t) => {
      const essence = mediaTypeEssence(t);
      return essence === FORM_URLENCODED || essence === MULTIPART;
    });
    for (const mediaType of declared.length > 0 ? declared : [sendsFile ? MULTIPART : FORM_URLENCODED]) {
      if (!Object.hasOwn(content, mediaType)) content[mediaType] = { schema };
    }
    if (names.length > 0) required = true;
  }
  requestBody.content = content;
  if (required !== undefined) requestBody.required = required;
  return { requestBody, requestParameters: rest };
}

/**
 * A Swagger 2.0 non-body parameter in the interface's (OpenAPI 3) form: `name`, `in`,
 * `description`, `required` as written, its schema keywords under `schema`,
 * `collectionFormat` as `style`/`explode` (csv, the 2.0 default for arrays, is
 * `explode: false`; `tsv` has no equivalent and stays), other fields (`allowEmptyValue`,
 * `x-…`) as written. Converted once per parameter object (`converted`).
 */
function parameter3(parameter: Record<string, unknown>, converted: Map<Record<string, unknown>, Record<string, unknown>>): Record<string, unknown> {
  const known = converted.get(parameter);
  if (known) return known;
  const out: Record<string, unknown> = {};
  for (const key of PARAMETER_FIELDS) if (Object.hasOwn(parameter, key)) out[key] = parameter[key];
  const schema: Record<string, unknown> = {};
  for (const key in parameter) {
    if (PARAMETER_FIELDS.includes(key) || key === 'collectionFormat') continue;
    if (SCHEMA_FIELDS.has(key)) schema[key] = parameter[key];
    else out[key] = parameter[key];
  }
  const format = parameter.collectionFormat ?? (parameter.type === 'array' ? 'csv' : undefined);
  const form = parameter.in === 'query' || parameter.in === 'formData';
  if (format === 'csv') {
    if (form) Object.assign(out, { style: 'form', explode: false });
  } else if (format === 'multi') {
    Object.assign(out, { style: 'form', explode: true });
  } else if (format === 'ssv') {
    Object.assign(out, { style: 'spaceDelimited', explode: false });
  } else if (format === 'pipes') {
    Object.assign(out, { style: 'pipeDelimited', explode: false });
  } else if (format !== undefined) {
    out.collectionFormat = format;
  }
  out.schema = schema;
  converted.set(parameter, out);
  return out;
}

/** The fields a Swagger 2.0 parameter shares with an OpenAPI 3 one, written first. */
const PARAMETER_FIELDS = ['name', 'in', 'description', 'required'];

function formFieldSchema(parameter: Record<string, unknown>): Record<string, unknown> {
  const schema: Record<string, unknown> = {};
  for (const key in parameter) {
    if (SCHEMA_FIELDS.has(key) || key.startsWith('x-')) schema[key] = parameter[key];
  }
  if (parameter.type === 'file') {
    schema.type = 'string';
    schema.format = 'binary';
  }
  return schema;
}

/** An operation's `responses` in OpenAPI 3 form; `{}` when absent or not an object. */
function convertSwagger2Responses(doc: Record<string, unknown>, operation: Record<string, unknown>): Record<string, unknown> {
  const responses = operation.responses;
  if (!isPlainObject(responses)) return {};
  let produces: string[] | null = null;
  const converted: Record<string, unknown> = {};
  for (const status in responses) {
    const written = responses[status];
    // A local `$ref` (`#/responses/Pet`) to a 2.0 response with a schema: converted as an inline one is.
    const response = isPlainObject(written) && typeof written.$ref === 'string' ? (resolveLocalRef(doc, written) ?? written) : written;
    if (!isPlainObject(response) || (response.schema === undefined && !isPlainObject(response.examples))) {
      converted[status] = written;
      continue;
    }
    produces ??= mediaTypes(operation.produces, doc.produces);
    const out: Record<string, unknown> = {};
    for (const key in response) {
      if (key !== 'schema' && key !== 'examples') out[key] = response[key];
    }
    const examples = isPlainObject(response.examples) ? response.examples : null;
    const content: Record<string, unknown> = {};
    for (const mediaType of examples ? union(produces, Object.keys(examples)) : produces) {
      const media: Record<string, unknown> = {};
      if (response.schema !== undefined) media.schema = response.schema;
      if (examples && examples[mediaType] !== undefined) media.example = examples[mediaType];
      content[mediaType] = media;
    }
    out.content = content;
    converted[status] = out;
  }
  return converted;
}

/** The operation's list, else the document's, else application/json; an operation's empty list clears the document's (Swagger 2.0). */
function mediaTypes(own: unknown, inherited: unknown): string[] {
  const list = Array.isArray(own) ? own : inherited;
  const types = Array.isArray(list) ? list.filter((t): t is string => typeof t === 'string' && t.trim() !== '') : [];
  return types.length > 0 ? types : DEFAULT_MEDIA_TYPES;
}

function union(first: string[], second: string[]): string[] {
  const out = first.slice();
  for (const t of second) if (!out.includes(t)) out.push(t);
  return out;
}
