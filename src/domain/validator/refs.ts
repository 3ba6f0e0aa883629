import { isPlainObject } from './problems.js';

/**
 * Local references (`#/…`) followed within the document, never fetched: a reference to
 * another file or URL is left as written. Bounded and cycle-safe: at most MAX_REF_HOPS
 * references are followed from one value, and a chain that comes back to a reference
 * already followed resolves to nothing. Only own properties are read, so `#/paths/constructor`
 * points nowhere.
 */

/**
 * The distinct `$ref` strings of each document parsed, gathered by parse.ts's walk after
 * parsing (which visits every value anyway), so the reference rules need no walk of their
 * own when nothing is wrong. Keyed by the document: it goes when the document goes.
 */
export const REFS_SEEN_WHEN_PARSED = new WeakMap<object, Set<string>>();

/** The most `$ref`s followed from one value (real documents chain two or three). */
export const MAX_REF_HOPS = 16;

/**
 * The object `value` stands for: `value` itself when it has no string `$ref`, else the
 * object its local reference (chain) points to; null when the reference is external,
 * points nowhere or to something that is not an object, cycles, or is longer than
 * MAX_REF_HOPS.
 */
export function resolveLocalRef(doc: Record<string, unknown>, value: unknown): Record<string, unknown> | null {
  let current = value;
  let seen: string[] | null = null;
  for (let hops = 0; ; hops++) {
    if (!isPlainObject(current)) return null;
    const ref = current.$ref;
    if (typeof ref !== 'string') return current;
    if (hops === MAX_REF_HOPS || !ref.startsWith('#')) return null;
    seen ??= [];
    if (seen.includes(ref)) return null;
    seen.push(ref);
    current = pointerTarget(doc, ref);
  }
}

/**
 * Where a value's local reference chain ends, as an RFC 6901 pointer (`/components/parameters/Id`),
 * with the object found there; null when `value` is not a local `$ref` or does not resolve to
 * an object (the same bounds as `resolveLocalRef`).
 */
export function resolveLocalRefWithPointer(doc: Record<string, unknown>, value: unknown): { target: Record<string, unknown>; pointer: string } | null {
  let current = value;
  let pointer: string | null = null;
  const seen: string[] = [];
  for (let hops = 0; ; hops++) {
    if (!isPlainObject(current)) return null;
    const ref = current.$ref;
    if (typeof ref !== 'string') return pointer === null ? null : { target: current, pointer };
    if (hops === MAX_REF_HOPS || !ref.startsWith('#') || seen.includes(ref)) return null;
    seen.push(ref);
    pointer = fragmentPointer(ref);
    current = pointerTarget(doc, ref);
  }
}

/** Whether a local `$ref` (`#/…`) names a value that exists (of any type). */
export function localRefExists(doc: Record<string, unknown>, ref: string): boolean {
  return pointerTarget(doc, ref) !== undefined;
}

/** The RFC 6901 pointer of a URI fragment (`#/paths/~1pets%7Bid%7D` → `/paths/~1pets{id}`); as written when it cannot be decoded. */
function fragmentPointer(ref: string): string {
  try {
    return decodeURIComponent(ref.slice(1));
  } catch {
    return ref.slice(1);
  }
}

/**
 * Targets already looked up, per document and `$ref` string: endpoint extraction and several
 * rules resolve the same few hundred references thousands of times. Keyed by the document,
 * so the entries go when it goes; documents are not changed after parsing.
 */
const TARGETS = new WeakMap<object, Map<string, unknown>>();

/** The value at a URI-fragment JSON pointer (`#/paths/~1pets%7Bid%7D`), or undefined. */
function pointerTarget(doc: Record<string, unknown>, ref: string): unknown {
  let known = TARGETS.get(doc);
  if (known === undefined) {
    known = new Map();
    TARGETS.set(doc, known);
  } else if (known.has(ref)) {
    return known.get(ref);
  }
  const target = lookUp(doc, ref);
  known.set(ref, target);
  return target;
}

function lookUp(doc: Record<string, unknown>, ref: string): unknown {
  let pointer: string;
  if (ref.includes('%')) {
    try {
      pointer = decodeURIComponent(ref.slice(1));
    } catch {
      return undefined;
    }
  } else {
    pointer = ref.slice(1);
  }
  if (pointer === '') return doc;
  if (!pointer.startsWith('/')) return undefined;
  const escaped = pointer.includes('~');
  let node: unknown = doc;
  for (const raw of pointer.slice(1).split('/')) {
    const token = escaped ? raw.replaceAll('~1', '/').replaceAll('~0', '~') : raw;
    if (Array.isArray(node)) {
      if (!/^(0|[1-9]\d*)$/.test(token)) return undefined;
      node = node[Number(token)];
    } else if (isPlainObject(node) && Object.hasOwn(node, token)) {
      node = node[token];
    } else {
      return undefined;
    }
  }
  return node;
}
