/**
 * Tool definitions (issue 18 B): the tool list an LLM would be given for a document, one
 * tool per endpoint, in the form each platform takes. Pure code, like the rest of the
 * validator. Decisions (names, descriptions, the input schema, bounds): README.md.
 */
import { validateDocument } from './index.js';
import { isPlainObject } from './problems.js';
import { resolveLocalRef } from './refs.js';
import { shorten } from './rules/rule.js';
import type { Endpoint, RuleFinding } from './types.js';
import type { ToolDefinition, ToolPlatform } from './wire-types.js';
import { mediaTypeEssence } from './media-types.js';

export { TOOL_PLATFORM_IDS } from './platforms.js';
export type { ToolDefinition, ToolPlatform } from './wire-types.js';

type Json = Record<string, unknown>;
/** A JSON Schema (2020-12) as generated here: an object or a boolean. */
type Schema = Json | boolean;

/** Where each platform wants the input schema (its own field name). */
export const SCHEMA_KEY: Record<ToolPlatform, 'parameters' | 'input_schema' | 'inputSchema'> = {
  openai: 'parameters',
  anthropic: 'input_schema',
  gemini: 'parameters',
  mcp: 'inputSchema',
};

/** A tool name each platform accepts (docs/platform-rules.md). */
const NAME_PATTERN: Record<ToolPlatform, RegExp> = {
  openai: /^[A-Za-z0-9_-]{1,64}$/,
  anthropic: /^[A-Za-z0-9_-]{1,128}$/,
  gemini: /^[A-Za-z_][A-Za-z0-9_.-]{0,63}$/,
  mcp: /^[A-Za-z0-9_.-]{1,128}$/,
};

/**
 * The longest tool description: OpenAI answered 400 past 1,024 (the safe cap of
 * docs/platform-rules.md); the others publish no limit, 4,096 bounds the context a tool costs.
 */
export const DESCRIPTION_MAX: Record<ToolPlatform, number> = { openai: 1024, anthropic: 4096, gemini: 4096, mcp: 4096 };

/** The deepest schema nesting expanded (OpenAI's structured outputs take 10 levels). */
export const MAX_SCHEMA_DEPTH = 10;
/** The most characters (roughly: keys and string values) of one tool's input schema. */
export const TOOL_SCHEMA_CHARS_MAX = 200_000;
/** The most characters of all the input schemas together, by default (the route passes the answer bound). */
export const TOOLS_CHARS_MAX = 4 * 1024 * 1024;

/** The rules whose fix is a tool name (rules/operation-id.ts computes them). */
const NAME_RULES = new Set(['operation-id-missing', 'operation-id-invalid', 'operation-id-too-long', 'operation-id-duplicate']);
/** Headers OpenAPI ignores as parameters: the media types and the auth scheme set them. */
const IGNORED_HEADERS = new Set(['accept', 'content-type', 'authorization']);
const PARAMETER_PLACES = new Set(['path', 'query', 'header']);

export interface ToolOptions {
  /** The most characters of all input schemas together (default TOOLS_CHARS_MAX); past it, schemas are cut (still valid). */
  maxChars?: number;
}

/**
 * The tools for a parsed document (root-checked here: throws invalid_swagger_file as the
 * validator does), one per endpoint in `all_endpoints` order.
 */
export function toolDefinitions(doc: unknown, platform: ToolPlatform, opts: ToolOptions = {}): ToolDefinition[] {
  const result = validateDocument(doc);
  const root = doc as Json;
  const endpoints = result.all_endpoints;
  const names = toolNames(endpoints, result.validations.findings, platform);
  const budget = { total: opts.maxChars ?? TOOLS_CHARS_MAX, tool: 0 };
  const tools: ToolDefinition[] = [];
  for (let i = 0; i < endpoints.length; i++) {
    const e = endpoints[i]!;
    budget.tool = Math.min(TOOL_SCHEMA_CHARS_MAX, budget.total);
    let schema = inputSchema(root, e, new SchemaBuilder(root, budget));
    if (platform === 'gemini') schema = geminiSchema(schema);
    else schema.additionalProperties = false;
    tools.push({
      name: names[i]!,
      description: toolDescription(e, DESCRIPTION_MAX[platform]),
      [SCHEMA_KEY[platform]]: schema,
      endpoint: i,
      method: e.type,
      path: e.path,
    } as ToolDefinition);
  }
  return tools;
}

/**
 * Each endpoint's tool name: its operationId when the platform accepts it, else the name the
 * operation-id rules propose (unique, case folded, valid everywhere). A name still invalid or
 * taken (it cannot be, but names are checked anyway) becomes `tool_<index>`.
 */
function toolNames(endpoints: readonly Endpoint[], findings: readonly RuleFinding[], platform: ToolPlatform): string[] {
  const proposed = new Map<number, string>();
  for (const f of findings) {
    if (f.endpoint === null || proposed.has(f.endpoint) || !NAME_RULES.has(f.rule) || typeof f.fix !== 'string') continue;
    // A missing operationId needs a name on every platform; the others only where the id breaks.
    if (f.rule === 'operation-id-missing' || f.platforms.includes(platform)) proposed.set(f.endpoint, f.fix);
  }
  const taken = new Set<string>();
  return endpoints.map((e, i) => {
    let name = proposed.get(i) ?? e.operationId ?? '';
    if (!NAME_PATTERN[platform].test(name) || taken.has(name)) {
      name = `tool_${i}`;
      for (let n = 2; taken.has(name); n++) name = `tool_${i}_${n}`;
    }
    taken.add(name);
    return name;
  });
}

/** Summary and description (one when they are the same), else `METHOD /path`; cut to `max`. */
function toolDescription(e: Endpoint, max: number): string {
  const summary = e.name.trim();
  const description = e.description.trim();
  let text: string;
  if (summary === '' || summary === description) text = description;
  else if (description === '') text = summary;
  else text = `${summary}${/[.!?]$/.test(summary) ? '' : '.'} ${description}`;
  if (text === '') text = `${e.type} ${e.path}`;
  return text.length > max ? shorten(text, max) : text;
}

/**
 * The input schema: an object with a property per path, query and header parameter (named
 * as written; a second parameter of the same name is `<in>_<name>`) and the request body
 * under `body`; `required` lists path parameters, required ones and a required body.
 */
function inputSchema(doc: Json, e: Endpoint, builder: SchemaBuilder): Json {
  const properties: Json = {};
  const required: string[] = [];
  const body = requestBodySchema(doc, e.requestBody);
  // `body` is the body's: a parameter of that name is `<in>_body`.
  const taken = new Set<string>(body ? ['body'] : []);
  const add = (wanted: string, place: string, schema: Schema, isRequired: boolean) => {
    let name = taken.has(wanted) ? `${place}_${wanted}` : wanted;
    for (let n = 2; taken.has(name); n++) name = `${place}_${wanted}_${n}`;
    taken.add(name);
    properties[name] = schema;
    if (isRequired) required.push(name);
  };
  for (const written of e.requestParameters ?? []) {
    const p = resolveLocalRef(doc, written);
    if (!p || typeof p.name !== 'string' || typeof p.in !== 'string' || !PARAMETER_PLACES.has(p.in)) continue;
    if (p.in === 'header' && IGNORED_HEADERS.has(p.name.toLowerCase())) continue;
    let schema = builder.convert(parameterSchema(p), 1);
    if (typeof p.description === 'string' && p.description.trim() !== '') schema = described(schema, p.description);
    add(p.name, p.in, schema, p.in === 'path' || p.required === true);
  }
  if (body) {
    let schema = builder.convert(body.schema, 1);
    if (body.description !== null) schema = described(schema, body.description, false);
    properties.body = schema;
    if (body.required) required.push('body');
  }
  const out: Json = { type: 'object', properties };
  if (required.length > 0) out.required = required;
  return out;
}

/**
 * A parameter's schema: `schema`, else the first media type's under `content`, else (a
 * Swagger 2.0 parameter given by `$ref`, not converted by endpoints.ts) its own schema
 * keywords, else any value.
 */
function parameterSchema(p: Json): unknown {
  if (p.schema !== undefined) return p.schema;
  if (p.content === undefined && typeof p.type === 'string') {
    const { required: _required, description: _description, ...schema } = p;
    return schema;
  }
  if (isPlainObject(p.content)) {
    for (const type in p.content) {
      const media = p.content[type];
      if (isPlainObject(media) && media.schema !== undefined) return media.schema;
    }
  }
  return {};
}

const JSON_MEDIA_TYPE = /^(application\/(.+\+)?json|\*\/\*|application\/\*)$/;
const FORM_MEDIA_TYPE = /^(application\/x-www-form-urlencoded|multipart\/form-data)$/;

/**
 * The request body a model can write: the first JSON media type's schema, else a form's (a
 * model fills in its fields the same way); none for XML, text or bytes only.
 */
function requestBodySchema(doc: Json, written: unknown): { schema: unknown; description: string | null; required: boolean } | null {
  const body = resolveLocalRef(doc, written);
  if (!body || !isPlainObject(body.content)) return null;
  let chosen: Json | null = null;
  for (const pattern of [JSON_MEDIA_TYPE, FORM_MEDIA_TYPE]) {
    for (const type in body.content) {
      const media = body.content[type];
      if (pattern.test(mediaTypeEssence(type)) && isPlainObject(media)) {
        chosen = media;
        break;
      }
    }
    if (chosen) break;
  }
  if (!chosen) return null;
  return {
    schema: chosen.schema ?? {},
    description: typeof body.description === 'string' && body.description.trim() !== '' ? body.description : null,
    required: body.required === true,
  };
}

/** `schema` with `description` (replacing its own unless `replace` is false). */
function described(schema: Schema, description: string, replace = true): Schema {
  if (typeof schema === 'boolean') return schema ? { description } : schema;
  if (!replace && typeof schema.description === 'string') return schema;
  return { ...schema, description };
}

const TYPES = new Set(['string', 'number', 'integer', 'boolean', 'object', 'array', 'null']);
const STRING_KEYWORDS = ['title', 'description', 'format'] as const;
const NUMBER_KEYWORDS = ['maximum', 'minimum'] as const;
const COUNT_KEYWORDS = ['maxLength', 'minLength', 'maxItems', 'minItems', 'maxProperties', 'minProperties'] as const;
const BOOLEAN_KEYWORDS = ['uniqueItems', 'readOnly', 'writeOnly', 'deprecated'] as const;
const COMBINATIONS = ['allOf', 'anyOf', 'oneOf'] as const;

type Primitive = string | number | boolean | null;
const isPrimitive = (v: unknown): v is Primitive =>
  v === null || typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v));

const OMITTED = 'Some properties omitted: the tool list reached its size bound.';

/** The schema's own description, if any, with the note that properties were left out after it. */
const withOmittedNote = (description: unknown): string =>
  typeof description === 'string' && description.trim() !== '' ? `${description} (${OMITTED})` : OMITTED;

/**
 * An OpenAPI (3.x or Swagger 2.0) Schema Object as a JSON Schema (2020-12) a validator
 * compiles: known keywords only, each of the right type (`nullable`, `x-nullable`, boolean
 * `exclusiveMinimum`, `example`, `type: file`, tuple `items` converted; `discriminator`, `xml`,
 * `x-…`, `$defs` dropped; patterns that are not valid regular expressions dropped; `default`,
 * `enum`, `const`, examples kept when they are plain values). Local `$ref`s are expanded:
 * a reference already being expanded (a cycle) or one that does not resolve becomes `{}`
 * with a description saying so; past MAX_SCHEMA_DEPTH levels, or once the budget is spent,
 * a schema becomes `{}` with a description too.
 */
class SchemaBuilder {
  private readonly expanding: string[] = [];
  /** Objects whose properties were cut at the size bound: a description put on them later keeps the note. */
  private readonly cut = new WeakSet<object>();
  constructor(
    private readonly doc: Json,
    private readonly budget: { total: number; tool: number },
  ) {}

  private charge(n: number): void {
    this.budget.total -= n;
    this.budget.tool -= n;
  }

  private get spent(): boolean {
    return this.budget.total <= 0 || this.budget.tool <= 0;
  }

  /** `{description: note}`, its size charged. */
  private note(description: string): Json {
    this.charge(description.length + 20);
    return { description };
  }

  convert(node: unknown, depth: number): Schema {
    if (typeof node === 'boolean') return node;
    if (!isPlainObject(node)) return {};
    if (this.spent) return this.note('Omitted: the tool list reached its size bound.');
    if (depth > MAX_SCHEMA_DEPTH) return this.note(`Omitted: nested deeper than ${MAX_SCHEMA_DEPTH} levels.`);
    const ref = node.$ref;
    if (typeof ref !== 'string') return this.object(node, depth);
    if (!ref.startsWith('#')) return this.note(`External reference ${ref}, not fetched.`);
    if (this.expanding.includes(ref)) return this.note(`Recursive reference to ${ref}, not expanded again.`);
    const target = resolveLocalRef(this.doc, node);
    if (!target) return this.note(`Unresolved reference ${ref}.`);
    this.expanding.push(ref);
    let out = this.convert(target, depth);
    this.expanding.pop();
    // OpenAPI 3.1 lets keywords sit beside a $ref (authors of 3.0 write them too): a description,
    // and readOnly, which keeps a server-made value (an id) out of the request.
    if (node.readOnly === true && typeof out === 'object') out = { ...out, readOnly: true };
    if (typeof node.description === 'string') {
      const cut = typeof out === 'object' && this.cut.has(out);
      out = described(out, cut ? withOmittedNote(node.description) : node.description);
      if (cut && typeof out === 'object') this.cut.add(out);
    }
    return out;
  }

  private object(s: Json, depth: number): Json {
    const out: Json = {};
    let size = 2;
    const put = (key: string, value: unknown, chars = 0) => {
      out[key] = value;
      size += key.length + 4 + chars;
    };
    const types = typesOf(s);
    if (types.length > 0) put('type', types.length === 1 ? types[0] : types, 8 * types.length);
    for (const key of STRING_KEYWORDS) if (typeof s[key] === 'string') put(key, s[key], (s[key] as string).length);
    if (s.type === 'file') put('format', 'binary', 6);
    if (typeof s.pattern === 'string' && validPattern(s.pattern)) put('pattern', s.pattern, s.pattern.length);
    if (typeof s.multipleOf === 'number' && s.multipleOf > 0 && Number.isFinite(s.multipleOf)) put('multipleOf', s.multipleOf, 8);
    for (const key of NUMBER_KEYWORDS) if (typeof s[key] === 'number' && Number.isFinite(s[key])) put(key, s[key], 8);
    for (const [key, bound] of [
      ['exclusiveMaximum', 'maximum'],
      ['exclusiveMinimum', 'minimum'],
    ] as const) {
      const v = s[key];
      if (typeof v === 'number' && Number.isFinite(v)) put(key, v, 8);
      else if (v === true && typeof out[bound] === 'number') {
        // OpenAPI 3.0 and Swagger 2.0: a boolean that makes the bound exclusive.
        put(key, out[bound], 8);
        delete out[bound];
      }
    }
    for (const key of COUNT_KEYWORDS) if (Number.isSafeInteger(s[key]) && (s[key] as number) >= 0) put(key, s[key], 8);
    for (const key of BOOLEAN_KEYWORDS) if (typeof s[key] === 'boolean') put(key, s[key], 5);
    if (Array.isArray(s.enum)) {
      const values = s.enum.filter(isPrimitive);
      if (values.length > 0) put('enum', values, charsOf(values));
    }
    if (isPrimitive(s.const)) put('const', s.const, charsOf([s.const]));
    if (isPrimitive(s.default)) put('default', s.default, charsOf([s.default]));
    const examples = Array.isArray(s.examples) ? s.examples.filter(isPrimitive) : isPrimitive(s.example) ? [s.example] : [];
    if (examples.length > 0) put('examples', examples, charsOf(examples));
    this.charge(size);

    if (isPlainObject(s.properties)) {
      const properties: Json = {};
      for (const name in s.properties) {
        // Spent: the other properties are left out, not listed one by one, and the description
        // says so after the schema's own: a model must learn that what it sees is not all.
        if (this.spent) {
          out.description = withOmittedNote(out.description);
          this.cut.add(out);
          break;
        }
        const p = this.convert(s.properties[name], depth + 1);
        // A request carries no read-only property.
        if (typeof p === 'object' && p.readOnly === true) continue;
        properties[name] = p;
        this.charge(name.length + 4);
      }
      out.properties = properties;
      if (Array.isArray(s.required)) {
        const required = [...new Set(s.required.filter((n): n is string => typeof n === 'string' && Object.hasOwn(properties, n)))];
        if (required.length > 0) out.required = required;
      }
    } else if (Array.isArray(s.required)) {
      const required = [...new Set(s.required.filter((n): n is string => typeof n === 'string'))];
      if (required.length > 0) out.required = required;
    }
    if (typeof s.additionalProperties === 'boolean') out.additionalProperties = s.additionalProperties;
    else if (isPlainObject(s.additionalProperties)) out.additionalProperties = this.convert(s.additionalProperties, depth + 1);
    if (Array.isArray(s.items)) {
      if (s.items.length > 0) out.prefixItems = s.items.map((item) => this.convert(item, depth + 1));
    } else if (typeof s.items === 'boolean' || isPlainObject(s.items)) {
      out.items = this.convert(s.items, depth + 1);
    }
    for (const key of COMBINATIONS) {
      const list = s[key];
      if (Array.isArray(list) && list.length > 0) out[key] = list.map((member) => this.convert(member, depth + 1));
    }
    if (typeof s.not === 'boolean' || isPlainObject(s.not)) out.not = this.convert(s.not, depth + 1);
    return out;
  }
}

/** The JSON Schema types a schema names (`nullable`/`x-nullable` add `null`; `file` is a string). */
function typesOf(s: Json): string[] {
  const written = Array.isArray(s.type) ? s.type : [s.type];
  const types: string[] = [];
  for (const t of written) {
    const name = t === 'file' ? 'string' : t;
    if (typeof name === 'string' && TYPES.has(name) && !types.includes(name)) types.push(name);
  }
  if (types.length > 0 && (s.nullable === true || s['x-nullable'] === true) && !types.includes('null')) types.push('null');
  return types;
}

/** Whether a JSON Schema validator can compile the pattern (ECMA-262 with the `u` flag, as Ajv does). */
function validPattern(pattern: string): boolean {
  try {
    new RegExp(pattern, 'u');
    return true;
  } catch {
    return false;
  }
}

function charsOf(values: readonly Primitive[]): number {
  let n = 2;
  for (const v of values) n += (typeof v === 'string' ? v.length : 5) + 3;
  return n;
}

/** Gemini's number and string formats (docs/platform-rules.md), by type. */
const GEMINI_FORMATS: Record<string, readonly string[]> = {
  number: ['float', 'double'],
  integer: ['int32', 'int64'],
  string: ['enum', 'date-time'],
};

/**
 * Keywords of Gemini's Schema copied as the generated schema has them (docs/platform-rules.md):
 * every bound and count the builder writes (`format` is filtered, `enum` and the rest converted).
 */
const GEMINI_COPIED = ['title', 'description', 'pattern', ...NUMBER_KEYWORDS, ...COUNT_KEYWORDS] as const;

const isNullSchema = (m: Schema) => typeof m === 'object' && (m.type === 'null' || (Array.isArray(m.enum) && m.enum.length === 1 && m.enum[0] === null));

/**
 * A generated schema in the subset of the OpenAPI 3.0 schema Gemini's `Schema` takes
 * (docs/platform-rules.md): one type, the first besides null, with `nullable` for null;
 * `allOf` merged; `anyOf`/`oneOf` as `anyOf` of their alternatives besides null (one left
 * is merged in); string enums only (null in one makes it nullable); formats Gemini knows
 * only; the first example as `example`. Other enums, `const` and exclusive bounds, which it
 * cannot hold, are said in the description; `additionalProperties` and the rest are dropped.
 */
function geminiSchema(schema: Schema): Json {
  if (typeof schema === 'boolean') return {};
  let s = schema;
  if (Array.isArray(s.allOf)) {
    const merged: Json = { ...s };
    delete merged.allOf;
    const properties: Json = isPlainObject(s.properties) ? { ...s.properties } : {};
    const required = new Set<string>(Array.isArray(s.required) ? s.required : []);
    for (const member of s.allOf as Schema[]) {
      if (typeof member === 'boolean') continue;
      const m = member.allOf || member.anyOf || member.oneOf ? geminiSchema(member) : member;
      for (const key in m) if (merged[key] === undefined) merged[key] = m[key];
      if (isPlainObject(m.properties)) Object.assign(properties, m.properties);
      if (Array.isArray(m.required)) for (const n of m.required) required.add(n as string);
    }
    if (Object.keys(properties).length > 0) merged.properties = properties;
    if (required.size > 0) merged.required = [...required];
    s = merged;
  }
  let nullable = false;
  let alternatives: Schema[] = [];
  const list = Array.isArray(s.anyOf) ? s.anyOf : Array.isArray(s.oneOf) ? s.oneOf : null;
  if (list) {
    alternatives = (list as Schema[]).filter((m) => typeof m === 'object' && !isNullSchema(m));
    nullable = alternatives.length < list.length;
    const merged: Json = { ...s };
    delete merged.anyOf;
    delete merged.oneOf;
    if (alternatives.length === 1) {
      const only = alternatives[0] as Json;
      for (const k in only) if (merged[k] === undefined) merged[k] = only[k];
      alternatives = [];
    }
    s = merged;
  }
  const out: Json = {};
  const types = Array.isArray(s.type) ? (s.type as string[]) : typeof s.type === 'string' ? [s.type] : [];
  if (types.includes('null')) nullable = true;
  let type = types.find((t) => t !== 'null');
  if (type === undefined && isPlainObject(s.properties)) type = 'object';
  if (type === undefined && s.items !== undefined) type = 'array';
  const values = Array.isArray(s.enum) ? (s.enum as Primitive[]).filter((v) => v !== null) : null;
  if (values && values.length < (s.enum as Primitive[]).length) nullable = true;
  const strings = values && values.length > 0 && values.every((v) => typeof v === 'string') ? (values as string[]) : null;
  if (type === undefined && strings) type = 'string';
  if (type !== undefined) out.type = type;
  if (typeof s.format === 'string' && type !== undefined && GEMINI_FORMATS[type]?.includes(s.format)) out.format = s.format;
  for (const key of GEMINI_COPIED) if (s[key] !== undefined) out[key] = s[key];
  if (strings && type === 'string') out.enum = strings;
  // What its Schema cannot hold, the model still reads: in the description.
  const unsaid = [
    values && values.length > 0 && out.enum === undefined && `One of: ${values.map((v) => JSON.stringify(v)).join(', ')}.`,
    s.const !== undefined && `Always ${JSON.stringify(s.const)}.`,
    typeof s.exclusiveMinimum === 'number' && `Greater than ${s.exclusiveMinimum}.`,
    typeof s.exclusiveMaximum === 'number' && `Less than ${s.exclusiveMaximum}.`,
  ].filter((sentence): sentence is string => typeof sentence === 'string');
  if (unsaid.length > 0) out.description = [typeof out.description === 'string' ? out.description : '', ...unsaid].join(' ').trim();
  if (s.default !== undefined) out.default = s.default;
  if (Array.isArray(s.examples) && s.examples.length > 0) out.example = s.examples[0];
  const anyOf = alternatives.map(geminiSchema);
  if (anyOf.length > 0) out.anyOf = anyOf;
  // `nullable` qualifies a type (OpenAPI 3.0): with none here, it goes to the alternatives that have one.
  if (nullable) for (const target of type === undefined ? anyOf : [out]) if (target.type !== undefined) target.nullable = true;
  if (type === 'array' && s.items !== undefined) out.items = geminiSchema(s.items as Schema);
  if (type === 'object' && isPlainObject(s.properties)) {
    const properties: Json = {};
    for (const name in s.properties) properties[name] = geminiSchema(s.properties[name] as Schema);
    out.properties = properties;
    if (Array.isArray(s.required)) {
      const required = (s.required as string[]).filter((n) => Object.hasOwn(properties, n));
      if (required.length > 0) out.required = required;
    }
  }
  return out;
}
