import { jsonPointer } from '../problems.js';
import { localRefExists, REFS_SEEN_WHEN_PARSED } from '../refs.js';
import { ALL_PLATFORMS, finding, type RuleContext, type RuleFamily, q } from './rule.js';

/** Keys whose values are data, not description: a `$ref` under them is an example's text. */
const DATA_KEYS = new Set(['example', 'enum', 'default', 'const']);

/**
 * ref-unresolved (a local `$ref` that points nowhere) and ref-external (another file or URL:
 * never fetched). One walk over the document; each distinct `$ref` string is looked up once
 * and reported once, at its first use (in document order). `x-` keys and example values are
 * not walked. Fragments that are not pointers (`#anchor`, OpenAPI 3.1) are not checked.
 */
export const referenceRules: RuleFamily = {
  rules: {
    'ref-unresolved': 'A local $ref points nowhere.',
    'ref-external': 'A $ref to another file or URL, which is never fetched.',
  },
  check(ctx) {
    const { doc } = ctx;
    // First the distinct `$ref`s (gathered while parsing, else by a walk); most documents have no bad one.
    let refs = REFS_SEEN_WHEN_PARSED.get(doc);
    if (!refs) {
      refs = new Set<string>();
      gather(doc, refs);
    }
    const bad = new Set<string>();
    for (const ref of refs) if (badRef(doc, ref) !== null) bad.add(ref);
    if (bad.size === 0) return;

    // Then, to say where each bad one is first used, a walk that keeps its path.
    const operationIndex = new Map<object, number>();
    for (let i = ctx.sources.length - 1; i >= 0; i--) operationIndex.set(ctx.sources[i]!.operation, i);
    const path: string[] = [];
    let endpoint: number | null = null;
    const walk = (node: unknown): void => {
      if (Array.isArray(node)) {
        for (let k = 0; k < node.length; k++) {
          const value: unknown = node[k];
          if (typeof value !== 'object' || value === null) continue;
          path.push(String(k));
          walk(value);
          path.pop();
        }
        return;
      }
      const obj = node as Record<string, unknown>;
      const outer = endpoint;
      endpoint = operationIndex.get(obj) ?? endpoint;
      for (const key in obj) {
        const value = obj[key];
        if (key === '$ref') {
          if (typeof value === 'string' && bad.delete(value)) report(ctx, value, endpoint, `${jsonPointer(path)}/$ref`);
          continue;
        }
        if (typeof value !== 'object' || value === null || DATA_KEYS.has(key) || key.startsWith('x-')) continue;
        path.push(key);
        walk(value);
        path.pop();
      }
      endpoint = outer;
    };
    walk(doc);
  },
};

function gather(node: unknown, refs: Set<string>): void {
  if (Array.isArray(node)) {
    for (const value of node) if (typeof value === 'object' && value !== null) gather(value, refs);
    return;
  }
  const obj = node as Record<string, unknown>;
  for (const key in obj) {
    const value = obj[key];
    if (typeof value !== 'object' || value === null) {
      if (key === '$ref' && typeof value === 'string') refs.add(value);
      continue;
    }
    if (DATA_KEYS.has(key) || key.startsWith('x-')) continue;
    gather(value, refs);
  }
}

/** 'unresolved', 'external', or null for a `$ref` that is fine (or not checked: `#anchor`). */
function badRef(doc: Record<string, unknown>, ref: string): 'unresolved' | 'external' | null {
  if (!ref.startsWith('#')) return 'external';
  return (ref === '#' || ref.startsWith('#/')) && !localRefExists(doc, ref) ? 'unresolved' : null;
}

function report(ctx: RuleContext, ref: string, endpoint: number | null, pointer: string): void {
  if (badRef(ctx.doc, ref) === 'unresolved') {
    ctx.emit(
      finding(
        'ref-unresolved',
        'error',
        endpoint,
        pointer,
        `$ref ${q(ref)} points nowhere in the document: the schema or object it stands for is unknown to the model.`,
        ALL_PLATFORMS,
      ),
    );
  } else {
    ctx.emit(
      finding(
        'ref-external',
        'warning',
        endpoint,
        pointer,
        `$ref ${q(ref)} names another file or URL, which is never fetched: what it describes is missing from the tool definitions. Bundle the description into one document.`,
        ALL_PLATFORMS,
      ),
    );
  }
}
