/**
 * Fixes as an OpenAPI Overlay 1.0 (issue 18 B): one action per computable fix of
 * `validations.findings`, and the applier for the JSONPath forms those actions use
 * (`$`, `.name`, `['name']`, `[0]`: one node each). Pure code. Decisions: README.md.
 */
import { validateDocument } from './index.js';
import { isPlainObject, jsonPointer } from './problems.js';
import { CONSEQUENTIAL } from './rules/effects.js';
import type { RuleFinding } from './types.js';
import type { Overlay, OverlayAction } from './wire-types.js';

export type { Overlay, OverlayAction } from './wire-types.js';

type Json = Record<string, unknown>;

const NAME_RULES = new Set(['operation-id-missing', 'operation-id-invalid', 'operation-id-too-long', 'operation-id-duplicate']);

/**
 * Rounds of fixes at most. A fix can make another computable: an operation without an
 * operationId, once named from its method and path (`get_contacts_by_id_addToGroup`), is a GET
 * named for a change (`confirmation-missing`). Over the public corpus one further round found
 * every such fix; the bound keeps fixes that undo each other from going on.
 */
const FIX_ROUNDS = 3;

/**
 * The Overlay of a parsed document's computable fixes (root-checked here: throws
 * invalid_swagger_file as the validator does). Actions follow the findings' order; one
 * operationId per operation (the first fix found for it). The document with them applied is
 * validated again, and the fixes found then follow (at most FIX_ROUNDS rounds), so that the
 * applied Overlay leaves no finding with a fix.
 */
export function fixesOverlay(doc: unknown, title = 'Fixes for LLM readiness'): Overlay {
  const overlay: Overlay = { overlay: '1.0.0', info: { title, version: '1.0.0' }, actions: roundOfFixes(doc) };
  let round = overlay.actions;
  let current = doc;
  for (let n = 1; n < FIX_ROUNDS && round.length > 0; n++) {
    current = applyOverlay(current, { ...overlay, actions: round });
    round = roundOfFixes(current);
    overlay.actions.push(...round);
  }
  // Overlay 1.0 asks for one action at least (its schema: `minItems: 1`): a document with nothing
  // to fix gets one that changes nothing, so that strict tools still read and apply the file.
  if (overlay.actions.length === 0) overlay.actions.push(NOTHING_TO_FIX);
  return overlay;
}

/** The one action of an Overlay without a fix: an empty update of the root, which changes nothing. */
export const NOTHING_TO_FIX: OverlayAction = { target: '$', description: 'No finding has a computable fix: this action changes nothing.', update: {} };

/** The actions of one round: the computable fixes of `doc`'s findings. */
function roundOfFixes(doc: unknown): OverlayAction[] {
  const result = validateDocument(doc);
  const root = doc as Json;
  const actions: OverlayAction[] = [];
  const done = new Set<string>();
  /** Path parameters to declare, by operation pointer (one action per operation). */
  const undeclared = new Map<string, { finding: RuleFinding; parameters: Json[] }>();
  const update = (key: string, pointer: string, field: string, value: unknown, f: RuleFinding) => {
    if (done.has(key)) return;
    done.add(key);
    actions.push({ target: jsonPathOf(root, pointer), description: describe(f), update: { [field]: value } });
  };
  /** Paths whose `$ref` path item is written out already. */
  const written = new Set<string>();
  /**
   * The pointer of an endpoint's operation at its own path. A finding points where the operation
   * is written: elsewhere than at its path when the path item is a `$ref` (another path's, or a
   * component's; `op` is then in the item the `$ref` resolves to). That path item is written out
   * first (its `$ref` removed, the target's fields copied in), so that what is set there is this
   * path's alone.
   */
  const ownOperation = (endpoint: number, op: string, f: RuleFinding): string => {
    const e = result.all_endpoints[endpoint];
    if (!e) return op;
    const method = e.type.toLowerCase();
    const at = jsonPointer(['paths', e.path]);
    const own = `${at}${jsonPointer([method])}`;
    if (op === own) return op;
    const entry = valueAt(root, at);
    const target = valueAt(root, parent(op));
    if (!isPlainObject(entry) || !isPlainObject(target)) return op;
    if (!written.has(e.path)) {
      written.add(e.path);
      const copy: Json = {};
      for (const key in target) if (!Object.hasOwn(entry, key)) copy[key] = structuredClone(target[key]);
      actions.push({ target: jsonPathOf(root, `${at}${jsonPointer(['$ref'])}`), description: describe(f), remove: true });
      actions.push({ target: jsonPathOf(root, at), description: describe(f), update: copy });
    }
    return own;
  };
  for (const f of result.validations.findings) {
    if (f.fix === null || f.fix === undefined) continue;
    if (NAME_RULES.has(f.rule) && typeof f.fix === 'string') {
      let op = f.rule === 'operation-id-missing' ? f.pointer : parent(f.pointer);
      if (f.endpoint !== null) op = ownOperation(f.endpoint, op, f);
      update(`${op}\u0000operationId`, op, 'operationId', f.fix, f);
    } else if (f.rule === 'summary-missing' && typeof f.fix === 'string') {
      update(`${f.pointer}\u0000summary`, f.pointer, 'summary', f.fix, f);
    } else if (
      (f.rule === 'summary-too-long' || f.rule === 'description-too-long' || f.rule === 'parameter-description-too-long') &&
      typeof f.fix === 'string'
    ) {
      update(f.pointer, parent(f.pointer), lastSegment(f.pointer), f.fix, f);
    } else if (f.rule === 'server-variable-undefined' && isPlainObject(f.fix)) {
      update(`${f.pointer}\u0000${Object.keys(f.fix).join()}`, parent(f.pointer), 'variables', f.fix, f);
    } else if (f.rule === 'path-parameter-undeclared' && isPlainObject(f.fix)) {
      const entry = undeclared.get(f.pointer);
      if (!entry) undeclared.set(f.pointer, { finding: f, parameters: [f.fix] });
      else if (!entry.parameters.some((p) => p.name === (f.fix as Json).name)) entry.parameters.push(f.fix);
    } else if ((f.rule === 'confirmation-missing' || f.rule === 'confirmation-unneeded') && typeof f.fix === 'boolean') {
      update(`${f.pointer}\u0000${CONSEQUENTIAL}`, f.pointer, CONSEQUENTIAL, f.fix, f);
    } else if (f.rule === 'server-insecure' && typeof f.fix === 'string' && !done.has('server')) {
      done.add('server');
      actions.push(...serverActions(root, f));
    }
  }
  for (const [pointer, { finding, parameters }] of undeclared) {
    const op = valueAt(root, pointer);
    if (!isPlainObject(op)) continue;
    const target = jsonPathOf(root, pointer);
    if (Array.isArray(op.parameters)) {
      for (const p of parameters) actions.push({ target: `${target}.parameters`, description: describe(finding), update: p });
    } else {
      actions.push({ target, description: describe(finding), update: { parameters: parameters } });
    }
  }
  return actions;
}

/** OpenAPI 3: the first server's URL. Swagger 2.0: `schemes: [https]` and the host without its port. */
function serverActions(doc: Json, f: RuleFinding): OverlayAction[] {
  const url = f.fix as string;
  if (typeof doc.swagger !== 'string') return [{ target: '$.servers[0]', description: describe(f), update: { url } }];
  let host: string;
  try {
    host = new URL(url).host;
  } catch {
    return [];
  }
  const actions: OverlayAction[] = [];
  // An update would append to the array: remove it first.
  if (doc.schemes !== undefined) actions.push({ target: '$.schemes', description: describe(f), remove: true });
  actions.push({ target: '$', description: describe(f), update: { schemes: ['https'], host } });
  return actions;
}

function describe(f: RuleFinding): string {
  return `${f.rule}: ${f.message}`;
}

// ——— JSON pointers and JSONPath

function segmentsOf(pointer: string): string[] {
  if (pointer === '') return [];
  return pointer
    .slice(1)
    .split('/')
    .map((s) => s.replaceAll('~1', '/').replaceAll('~0', '~'));
}

function parent(pointer: string): string {
  return pointer.slice(0, pointer.lastIndexOf('/'));
}

function lastSegment(pointer: string): string {
  return pointer
    .slice(pointer.lastIndexOf('/') + 1)
    .replaceAll('~1', '/')
    .replaceAll('~0', '~');
}

function valueAt(doc: unknown, pointer: string): unknown {
  let node = doc;
  for (const s of segmentsOf(pointer)) {
    if (Array.isArray(node)) node = /^(0|[1-9]\d*)$/.test(s) ? node[Number(s)] : undefined;
    else if (isPlainObject(node) && Object.hasOwn(node, s)) node = node[s];
    else return undefined;
  }
  return node;
}

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * The JSONPath (RFC 9535) of the node an RFC 6901 pointer names in `doc`:
 * `/paths/~1pets/get` → `$.paths['/pets'].get`; array members as `[0]`.
 */
export function jsonPathOf(doc: unknown, pointer: string): string {
  let path = '$';
  let node = doc;
  for (const s of segmentsOf(pointer)) {
    if (Array.isArray(node) && /^(0|[1-9]\d*)$/.test(s)) {
      path += `[${s}]`;
      node = node[Number(s)];
    } else {
      path += IDENTIFIER.test(s) ? `.${s}` : `[${quote(s)}]`;
      node = isPlainObject(node) && Object.hasOwn(node, s) ? node[s] : undefined;
    }
  }
  return path;
}

function quote(s: string): string {
  let out = "'";
  for (const ch of s) {
    const code = ch.codePointAt(0)!;
    if (ch === "'" || ch === '\\') out += `\\${ch}`;
    else if (code < 0x20) out += `\\u${code.toString(16).padStart(4, '0')}`;
    else out += ch;
  }
  return `${out}'`;
}

/** The segments of a JSONPath of the forms `jsonPathOf` writes; throws on any other form. */
export function parseJsonPath(path: string): (string | number)[] {
  if (!path.startsWith('$')) throw new Error(`Unsupported JSONPath: ${path}`);
  const out: (string | number)[] = [];
  let i = 1;
  while (i < path.length) {
    const rest = path.slice(i);
    const dot = /^\.([A-Za-z_][A-Za-z0-9_]*)/.exec(rest);
    const index = /^\[(0|[1-9]\d*)\]/.exec(rest);
    if (dot) {
      out.push(dot[1]!);
      i += dot[0].length;
    } else if (index) {
      out.push(Number(index[1]));
      i += index[0].length;
    } else if (rest.startsWith("['")) {
      let j = i + 2;
      let name = '';
      while (j < path.length && path[j] !== "'") {
        if (path[j] === '\\') {
          const next = path[j + 1];
          if (next === 'u') {
            name += String.fromCharCode(Number.parseInt(path.slice(j + 2, j + 6), 16));
            j += 6;
            continue;
          }
          name += next ?? '';
          j += 2;
          continue;
        }
        name += path[j];
        j++;
      }
      if (path.slice(j, j + 2) !== "']") throw new Error(`Unsupported JSONPath: ${path}`);
      out.push(name);
      i = j + 2;
    } else {
      throw new Error(`Unsupported JSONPath: ${path}`);
    }
  }
  return out;
}

/**
 * The document with the overlay's actions applied in order (a copy; `doc` is not changed).
 * `update` merges into an object target (objects recursively, arrays concatenated, other
 * values replaced) or is appended to an array target; `remove` deletes the target. A target
 * that selects nothing is skipped. Only single-node JSONPaths (`parseJsonPath`) are read.
 *
 * An action changes its target at the path it names, and nowhere else: a node that YAML
 * shares between paths (an alias, a merge key's values) is not changed at the others.
 * Nodes are copied on write: each object or array on an action's path, and below it where
 * an update merges, is copied (shallowly) the first time it is changed, so that the copy
 * holds what that path changes and the rest of the document stays shared with `doc`.
 * The cost is the actions' paths, not the document's size.
 */
export function applyOverlay<T>(doc: T, overlay: Overlay): T {
  const copies = new WeakSet<object>();
  const own = <V>(value: V): V => {
    if (typeof value !== 'object' || value === null || copies.has(value)) return value;
    const copy = (Array.isArray(value) ? value.slice() : { ...value }) as V & object;
    copies.add(copy);
    return copy;
  };
  const out = own(doc);
  /** The node at `segments` below `out`, each node on the way a copy of this call's own. */
  const ownedAt = (segments: readonly (string | number)[]): unknown => {
    let node: unknown = out;
    for (const s of segments) {
      let child: unknown;
      if (Array.isArray(node) && typeof s === 'number' && s < node.length) {
        child = own(node[s]);
        node[s] = child;
      } else if (isPlainObject(node) && typeof s === 'string' && Object.hasOwn(node, s)) {
        child = own(node[s]);
        setOwn(node, s, child);
      } else return undefined;
      node = child;
    }
    return node;
  };
  const merge = (target: Json, update: Json): void => {
    for (const key in update) {
      const value = update[key];
      const current = Object.hasOwn(target, key) ? own(target[key]) : undefined;
      if (isPlainObject(current) && isPlainObject(value)) {
        setOwn(target, key, current);
        merge(current, value);
      } else if (Array.isArray(current) && Array.isArray(value)) {
        setOwn(target, key, current);
        current.push(...structuredClone(value));
      } else setOwn(target, key, structuredClone(value));
    }
  };
  for (const action of overlay.actions) {
    const segments = parseJsonPath(action.target);
    if (action.remove === true) {
      if (segments.length === 0) continue;
      const holder = ownedAt(segments.slice(0, -1));
      const last = segments[segments.length - 1]!;
      if (Array.isArray(holder) && typeof last === 'number' && last < holder.length) holder.splice(last, 1);
      else if (isPlainObject(holder) && typeof last === 'string' && Object.hasOwn(holder, last)) delete holder[last];
      continue;
    }
    if (action.update === undefined) continue;
    const target = ownedAt(segments);
    if (Array.isArray(target)) target.push(structuredClone(action.update));
    else if (isPlainObject(target) && isPlainObject(action.update)) merge(target, action.update);
  }
  return out;
}

/** `object[key] = value`; defineProperty, so that a key `__proto__` is a property like any other, never the prototype. */
function setOwn(object: Json, key: string, value: unknown): void {
  Object.defineProperty(object, key, { value, writable: true, enumerable: true, configurable: true });
}
