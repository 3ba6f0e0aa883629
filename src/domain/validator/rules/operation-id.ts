import { ALL_PLATFORMS, child, finding, type Platform, type RuleFamily, q } from './rule.js';

/**
 * Tool names. Each platform's rule (docs/platform-rules.md): the characters allowed (length
 * aside: `operation-id-too-long` says that) and the longest name.
 */
const NAME_RULES: readonly { platform: Platform; chars: RegExp; max: number }[] = [
  { platform: 'openai', chars: /^[A-Za-z0-9_-]+$/, max: 64 },
  { platform: 'anthropic', chars: /^[A-Za-z0-9_-]+$/, max: 128 },
  // Vertex AI's rule (the stricter one; the Gemini API also allows `:`).
  { platform: 'gemini', chars: /^[A-Za-z_][A-Za-z0-9_.-]*$/, max: 64 },
  { platform: 'mcp', chars: /^[A-Za-z0-9_.-]+$/, max: 128 },
];

/** A name every platform accepts: what proposals are made of. */
const SAFE_NAME = /^[A-Za-z_][A-Za-z0-9_-]{0,63}$/;
const NAME_PLATFORMS: readonly Platform[] = ['openai', 'anthropic', 'gemini', 'mcp'];
const NONE: readonly Platform[] = [];

/**
 * operation-id-missing, -invalid, -too-long, -duplicate. Fixes are proposed operationIds,
 * unique in the document as the duplicate rule compares them (sanitised, case folded), valid on
 * every platform. An operation reached through a path item's `$ref` (another path's, or one in
 * `components`) is renamed rather than the one written there when the two share an id: the
 * Overlay writes such a path item out (overlay.ts), so that the name is that path's alone.
 */
export const operationIdRules: RuleFamily = {
  rules: {
    'operation-id-missing': 'An operation has no operationId: GPT Actions skips it, and other platforms need a tool name made up for it.',
    'operation-id-invalid': "An operationId has characters that a platform's tool names cannot hold.",
    'operation-id-too-long': "An operationId is longer than a platform's tool names may be (64 or 128 characters).",
    'operation-id-duplicate': 'Operations share an operationId, or do once it is sanitised and case folded: their tools clash.',
  },
  check(ctx) {
    const { endpoints, sources } = ctx;
    const names = new Names(endpoints.map((e) => e.operationId));
    // The message's note on a fix at an operation reached through its path item's `$ref` (another path's, or a component's): the Overlay writes that path item out.
    const borrowed = (i: number, fix: unknown): string =>
      fix !== null && sources[i]!.borrowed
        ? ` The path item of ${q(endpoints[i]!.path)} is a $ref: the fix writes it out, so that the name is this path's alone.`
        : '';
    const exact = new Map<string, number>();
    const folded = new Map<string, { first: string; count: number; distinct: boolean }>();
    // Each id's tool name once sanitised and case folded (null when there is no id).
    const foldedKeys = new Array<string | null>(endpoints.length);
    for (let i = 0; i < endpoints.length; i++) {
      const id = endpoints[i]!.operationId;
      foldedKeys[i] = null;
      if (id === null) continue;
      exact.set(id, (exact.get(id) ?? 0) + 1);
      const key = fold(id);
      foldedKeys[i] = key;
      const group = folded.get(key);
      if (!group) folded.set(key, { first: id, count: 1, distinct: false });
      else {
        group.count++;
        if (group.first !== id) group.distinct = true;
      }
    }
    const seenDuplicate = new Set<string>();
    for (let i = 0; i < endpoints.length; i++) {
      const e = endpoints[i]!;
      const id = e.operationId;
      if (id === null) {
        const fix = names.propose(fromMethodPath(e.type, e.path));
        ctx.emit(
          finding(
            'operation-id-missing',
            'error',
            i,
            sources[i]!.pointer,
            `No operationId: GPT Actions skips the operation, and every other platform needs a tool name made up for it.${borrowed(i, fix)}`,
            ['gpt_actions'],
            fix,
          ),
        );
        continue;
      }
      const count = exact.get(id)!;
      const group = folded.get(foldedKeys[i]!)!;
      const valid = id.length <= 64 && SAFE_NAME.test(id);
      // Most ids are valid and unique: nothing to build for them (a pointer only for a finding).
      if (valid && count === 1 && !group.distinct) continue;
      const pointer = child(sources[i]!.pointer, 'operationId');
      const badChars = valid ? NONE : NAME_RULES.filter((r) => !r.chars.test(id)).map((r) => r.platform);
      const tooLong = valid ? NONE : NAME_RULES.filter((r) => id.length > r.max).map((r) => r.platform);
      const fixed = badChars.length > 0 || tooLong.length > 0 ? names.propose(sanitize(id) || fromMethodPath(e.type, e.path)) : null;
      if (badChars.length > 0) {
        ctx.emit(
          finding(
            'operation-id-invalid',
            'error',
            i,
            pointer,
            `operationId ${q(clip(id))} has characters a tool name cannot hold on ${badChars.join(', ')}: the tool is refused or renamed.${borrowed(i, fixed)}`,
            badChars,
            fixed,
          ),
        );
      }
      if (tooLong.length > 0) {
        ctx.emit(
          finding(
            'operation-id-too-long',
            'error',
            i,
            pointer,
            `operationId is ${id.length} characters; tool names are at most 64 on openai and gemini, 128 on anthropic and mcp (clients that prefix names leave fewer).${borrowed(i, fixed)}`,
            tooLong,
            fixed,
          ),
        );
      }
      if (count > 1) {
        // The first written where its path is keeps the id (an operation reached through a `$ref` is the one renamed: see above).
        const first = !sources[i]!.borrowed && !seenDuplicate.has(id);
        if (first) seenDuplicate.add(id);
        const fix = first ? null : names.propose(`${sanitize(id) || fromMethodPath(e.type, e.path)}_${e.type.toLowerCase()}`);
        ctx.emit(
          finding(
            'operation-id-duplicate',
            'error',
            i,
            pointer,
            `operationId ${q(clip(id))} is used by ${count} operations: two tools of one name clash, and the model cannot call the one it means.${borrowed(i, fix)}`,
            ALL_PLATFORMS,
            fix,
          ),
        );
        continue;
      }
      if (group.distinct) {
        const fix = group.first === id ? null : names.propose(`${sanitize(id) || fromMethodPath(e.type, e.path)}_${e.type.toLowerCase()}`);
        ctx.emit(
          finding(
            'operation-id-duplicate',
            'warning',
            i,
            pointer,
            `operationId ${q(clip(id))} becomes the same tool name as another once sanitised or case folded: the model (or a client) confuses them.${borrowed(i, fix)}`,
            NAME_PLATFORMS,
            fix,
          ),
        );
      }
    }
  },
};

/**
 * Proposed names, unique as the duplicate rule compares them (`fold`) among each other and the
 * operationIds that stay: the valid ones (an invalid one is replaced, so `delete pet` may become
 * `delete_pet`).
 */
class Names {
  private taken: Set<string> | null = null;
  constructor(private readonly ids: readonly (string | null)[]) {}
  propose(base: string): string {
    if (this.taken === null) {
      this.taken = new Set();
      for (const id of this.ids) if (id !== null && SAFE_NAME.test(id)) this.taken.add(fold(id));
    }
    let name = safe(base);
    for (let n = 2; this.taken.has(fold(name)); n++) {
      const suffix = `_${n}`;
      name = `${trimEnd(safe(base).slice(0, 64 - suffix.length))}${suffix}`;
    }
    this.taken.add(fold(name));
    return name;
  }
}

/** An id as the duplicate rule compares it: its tool name once sanitised, case folded. */
function fold(id: string): string {
  return sanitize(id).toLowerCase();
}

/** A name cut short may end in `_`, which sanitising drops: without it, the name folds to itself. */
function trimEnd(name: string): string {
  return name.replace(/_+$/, '');
}

const CLEAN = /^[A-Za-z0-9-][A-Za-z0-9_-]*[A-Za-z0-9-]$|^[A-Za-z0-9-]$/;

/** Characters no platform accepts become `_` (runs collapsed, ends trimmed). */
function sanitize(id: string): string {
  if (CLEAN.test(id)) return id;
  return id.replace(/[^A-Za-z0-9_-]+/g, '_').replace(/^_+|_+$/g, '');
}

/** A name every platform accepts: starts with a letter or `_`, at most 64. */
function safe(base: string): string {
  let name = sanitize(base);
  if (name === '') name = 'operation';
  if (!/^[A-Za-z_]/.test(name)) name = `op_${name}`;
  name = trimEnd(name.slice(0, 64));
  return SAFE_NAME.test(name) ? name : 'operation';
}

/** `GET /pets/{petId}/owners` → `get_pets_by_petId_owners`. */
export function fromMethodPath(method: string, path: string): string {
  const parts = [method.toLowerCase()];
  for (const segment of path.split('/')) {
    if (segment === '') continue;
    const param = /^\{(.+)\}$/.exec(segment);
    parts.push(param ? `by_${param[1]}` : segment);
  }
  return sanitize(parts.join('_'));
}

function clip(s: string): string {
  return s.length > 80 ? `${s.slice(0, 77)}…` : s;
}
