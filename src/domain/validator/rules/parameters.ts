import { isPlainObject } from '../problems.js';
import { resolveLocalRef, resolveLocalRefWithPointer } from '../refs.js';
import type { EndpointSource } from '../endpoints.js';
import type { ApiDocument } from '../types.js';
import { ALL_PLATFORMS, child, finding, listEndpoints, type RuleContext, type RuleFamily, type RuleFinding, q } from './rule.js';

/** GPT Actions: a parameter description at most 700 characters (docs/platform-rules.md). */
export const GPT_ACTIONS_PARAMETER_TEXT_MAX = 700;
/** Gemini (Vertex AI): parameter names start with a letter or `_`, then letters, digits, `_`; at most 64. */
const GEMINI_PARAMETER_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
/** Headers OpenAPI itself ignores as parameters (the media types and auth say them). */
const IGNORED_HEADERS = new Set(['accept', 'content-type', 'authorization']);

interface Parameter {
  readonly value: Record<string, unknown>;
  /** Where it is written: a `$ref`'s target, else its index in the path item's or the operation's list. */
  readonly refPointer: string | null;
  readonly pathLevel: boolean;
  readonly index: number;
}

function pointerOf(source: EndpointSource, p: Parameter): string {
  if (p.refPointer !== null) return p.refPointer;
  return p.pathLevel ? child(source.pathParametersPointer, p.index) : child(source.pointer, 'parameters', p.index);
}

/**
 * parameter-description-too-long, header-parameter-unsupported, parameter-name-invalid,
 * path-parameter-undeclared, path-parameter-unused, parameter-body-duplicate (Swagger 2.0:
 * a body parameter after the first, which endpoints.ts does not make the body),
 * parameter-enum-missing (a string parameter whose description lists its values, with no
 * `enum`: the model must guess their spelling). A parameter shared by several
 * operations (path level, or a `$ref`) is reported once, at the first operation using it,
 * with the pointer of where it is written. One cause, one finding: a header GPT Actions
 * cannot send and a name Gemini refuses are each one finding however many times a parameter
 * of that name is written (Microsoft Graph writes OData's `$select` inline in 3,969
 * operations), at the first, its message counting them; there is nothing to change at each
 * (a converter renames, a header cannot be sent), so one line says it.
 */
export const parameterRules: RuleFamily = {
  rules: {
    'parameter-description-too-long': "A parameter's description is over the 700 characters GPT Actions takes.",
    'header-parameter-unsupported': 'A custom header parameter: GPT Actions cannot send it.',
    'parameter-name-invalid': 'A parameter name that Gemini does not take as an argument name.',
    'path-parameter-undeclared': 'A {name} of the path template has no parameter: the model cannot fill in the URL.',
    'path-parameter-unused': 'A path parameter that is not in the path template: its value goes nowhere.',
    'parameter-body-duplicate': 'Swagger 2.0: a second body parameter, which is never sent.',
    'parameter-enum-missing': 'A string parameter whose description lists its values has no enum.',
  },
  check(ctx) {
    const reported: Seen = {
      checked: new Set<object>(),
      unused: new Set<object>(),
      refs: new Map<string, { target: Record<string, unknown>; pointer: string } | null>(),
      headers: new Map<string, NameFinding>(),
      names: new Map<string, NameFinding>(),
    };
    for (let i = 0; i < ctx.endpoints.length; i++) checkOperation(ctx, i, reported);
    for (const { rule, name, finding: f, copies, endpoints } of [...reported.headers.values(), ...reported.names.values()]) {
      if (copies > 1) f.message = NAME_MESSAGES[rule](name, ` (written ${copies} times, at ${listEndpoints(endpoints)})`);
    }
  },
};

/** The messages of the findings about a parameter's name; `where` counts the places it is written, when more than one. */
const NAME_MESSAGES = {
  'header-parameter-unsupported': (name: string, where: string) =>
    `Header parameter ${q(name)}${where}: GPT Actions cannot send custom headers, so the model cannot set it.`,
  'parameter-name-invalid': (name: string, where: string) =>
    `Parameter name ${q(name)}${where} is not a valid Gemini argument name (a letter or _, then letters, digits, _; at most 64): a converter must rename it.`,
};

/** A finding about a parameter's name, and where it is written: how many times, and the endpoints at which copies are met first, in order. */
interface NameFinding {
  readonly rule: keyof typeof NAME_MESSAGES;
  readonly name: string;
  readonly finding: RuleFinding;
  copies: number;
  readonly endpoints: number[];
}

interface Seen {
  /** Parameters already checked (a shared one is reported once). */
  readonly checked: Set<object>;
  readonly unused: Set<object>;
  /** `$ref`s of parameters already resolved, by their string. */
  readonly refs: Map<string, { target: Record<string, unknown>; pointer: string } | null>;
  /** The findings about a header parameter, by its name in lower case (as HTTP reads it). */
  readonly headers: Map<string, NameFinding>;
  /** The findings about a parameter's name, by the name. */
  readonly names: Map<string, NameFinding>;
}

/** Counts a parameter written at endpoint `i` into the finding about its name under `rule` (`found`, by `key`), emitted at the first. */
function nameFinding(
  ctx: RuleContext,
  found: Map<string, NameFinding>,
  rule: NameFinding['rule'],
  key: string,
  name: string,
  i: number,
  pointer: () => string,
): void {
  const known = found.get(key);
  if (known !== undefined) {
    known.copies++;
    if (known.endpoints[known.endpoints.length - 1] !== i) known.endpoints.push(i);
    return;
  }
  const f =
    rule === 'header-parameter-unsupported'
      ? finding(rule, 'error', i, pointer(), NAME_MESSAGES[rule](name, ''), ['gpt_actions'])
      : finding(rule, 'warning', i, child(pointer(), 'name'), NAME_MESSAGES[rule](name, ''), ['gemini']);
  found.set(key, { rule, name, finding: f, copies: 1, endpoints: [i] });
  ctx.emit(f);
}

function checkOperation(ctx: RuleContext, i: number, reported: Seen): void {
  const e = ctx.endpoints[i]!;
  const source = ctx.sources[i]!;
  const parameters = effectiveParameters(ctx.doc, source.pathParameters, source.operation.parameters, reported.refs);
  let declaredPath: Map<string, Parameter> | null = null;
  let bodies = 0;
  for (const p of parameters) {
    const { value } = p;
    const name = typeof value.name === 'string' ? value.name : null;
    const where = value.in;
    if (where === 'body' && ++bodies > 1) {
      ctx.emit(
        finding(
          'parameter-body-duplicate',
          'error',
          i,
          pointerOf(source, p),
          `A second body parameter${name === null ? '' : ` ${q(name)}`}: Swagger 2.0 allows one, so only the first is the request body and the model never sends this one.`,
          ALL_PLATFORMS,
        ),
      );
    }
    if (where === 'path' && name !== null) {
      declaredPath ??= new Map();
      declaredPath.set(name, p);
    }
    if (reported.checked.has(value)) continue;
    reported.checked.add(value);
    const description = value.description;
    if (typeof description === 'string' && description.length > GPT_ACTIONS_PARAMETER_TEXT_MAX) {
      ctx.emit(
        finding(
          'parameter-description-too-long',
          'error',
          i,
          child(pointerOf(source, p), 'description'),
          `The description of parameter ${q(name ?? '')} is ${description.length} characters; GPT Actions takes at most 700.`,
          ['gpt_actions'],
          ctx.shorten(description, GPT_ACTIONS_PARAMETER_TEXT_MAX),
        ),
      );
    }
    if (name === null || where === 'body') continue;
    if (where === 'header') {
      const header = name.toLowerCase();
      if (!IGNORED_HEADERS.has(header)) nameFinding(ctx, reported.headers, 'header-parameter-unsupported', header, name, i, () => pointerOf(source, p));
    }
    if (typeof description === 'string' && listsValues(ctx.doc, value, description)) {
      ctx.emit(
        finding(
          'parameter-enum-missing',
          'info',
          i,
          pointerOf(source, p),
          `The description of parameter ${q(name)} lists its values, but its schema has no enum: the model must guess how to spell them, where an enum would give it the choice.`,
          ALL_PLATFORMS,
        ),
      );
    }
    if (!GEMINI_PARAMETER_NAME.test(name)) nameFinding(ctx, reported.names, 'parameter-name-invalid', name, name, i, () => pointerOf(source, p));
  }
  const inTemplate = templateNames(e.path);
  for (const name of inTemplate) {
    if (declaredPath?.has(name)) continue;
    ctx.emit(
      finding(
        'path-parameter-undeclared',
        'error',
        i,
        source.pointer,
        `Path parameter {${name}} is not declared: the tool has no argument for it, so the model cannot fill in the URL.`,
        ALL_PLATFORMS,
        ctx.swagger2 ? { name, in: 'path', required: true, type: 'string' } : { name, in: 'path', required: true, schema: { type: 'string' } },
      ),
    );
  }
  if (declaredPath === null) return;
  for (const [name, p] of declaredPath) {
    if (!inTemplate.includes(name) && once(reported.unused, p.value)) {
      ctx.emit(
        finding(
          'path-parameter-unused',
          'warning',
          i,
          pointerOf(source, p),
          `Path parameter ${q(name)} is not in the path ${q(e.path)}: the model is asked for a value that goes nowhere.`,
          ALL_PLATFORMS,
        ),
      );
    }
  }
}

/**
 * Words by which a description introduces the values a parameter takes (not "one of the end
 * points"; not "can be either the ID or the ARN", which names kinds of value, not values).
 */
const LISTS_VALUES =
  /\b(?:one of(?!\s+(?:the|these|those|them|its|our|your|their|his|her|my|many|several|a|an|two|three)\b)|possible values|allowed values|valid values|accepted values|supported values|available values|valid options|possible options)\b/i;

/**
 * A string parameter without an enum whose description introduces its values. No fix is
 * computed: over the public corpus, values read from descriptions were too often not the
 * parameter's whole value (a comma-separated list, a filter expression, `name desc`).
 */
function listsValues(doc: ApiDocument, parameter: Record<string, unknown>, description: string): boolean {
  const schema = parameter.schema === undefined ? parameter : resolveLocalRef(doc, parameter.schema);
  return schema !== null && schema.type === 'string' && schema.enum === undefined && parameter.enum === undefined && LISTS_VALUES.test(description);
}

const NO_NAMES: string[] = [];

/** The `{name}`s of a path template, in order, each once. */
function templateNames(path: string): string[] {
  let open = path.indexOf('{');
  if (open === -1) return NO_NAMES;
  const names: string[] = [];
  while (open !== -1) {
    const close = path.indexOf('}', open + 1);
    if (close === -1) break;
    const inner = path.slice(open + 1, close);
    // `{a{b}`: the innermost pair, as TEMPLATE_PARAMETER would match it.
    const nested = inner.lastIndexOf('{');
    const name = nested === -1 ? inner : inner.slice(nested + 1);
    if (name !== '' && !names.includes(name)) names.push(name);
    open = path.indexOf('{', close + 1);
  }
  return names;
}

function once(set: Set<object>, value: object): boolean {
  if (set.has(value)) return false;
  set.add(value);
  return true;
}

/**
 * The parameters an operation takes, resolved, with where each is written: path-level ones
 * first unless the operation has one of the same name and `in`, then the operation's
 * (endpoints.ts merges the same way). Unresolvable `$ref`s are left to `ref-unresolved`.
 */
type RefCache = Seen['refs'];

function effectiveParameters(doc: ApiDocument, pathLevel: unknown, own: unknown, refs: RefCache): Parameter[] {
  const ownParameters = resolved(doc, own, false, refs);
  if (!Array.isArray(pathLevel) || pathLevel.length === 0) return ownParameters;
  const out: Parameter[] = [];
  for (const p of resolved(doc, pathLevel, true, refs)) {
    if (!ownParameters.some((q) => q.value.in === p.value.in && q.value.name === p.value.name)) out.push(p);
  }
  for (const p of ownParameters) out.push(p);
  return out;
}

const NONE: Parameter[] = [];

function resolved(doc: ApiDocument, list: unknown, pathLevel: boolean, refs: RefCache): Parameter[] {
  if (!Array.isArray(list) || list.length === 0) return NONE;
  const out: Parameter[] = [];
  for (let index = 0; index < list.length; index++) {
    const item: unknown = list[index];
    if (!isPlainObject(item)) continue;
    if (typeof item.$ref === 'string') {
      let target = refs.get(item.$ref);
      if (target === undefined) {
        target = resolveLocalRefWithPointer(doc, item);
        refs.set(item.$ref, target);
      }
      if (target) out.push({ value: target.target, refPointer: target.pointer, pathLevel, index });
    } else {
      out.push({ value: item, refPointer: null, pathLevel, index });
    }
  }
  return out;
}
