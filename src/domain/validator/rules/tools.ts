import { isPlainObject, jsonPointer } from '../problems.js';
import { finding, listEndpoints, type Platform, type RuleContext, type RuleFamily } from './rule.js';

/** At most 128 tools per request: OpenAI, Gemini (Vertex), Copilot Studio (docs/platform-rules.md). */
export const MAX_TOOLS = 128;
/** Above this many, models choose worse (OpenAI: under 20; Gemini 10–20; Anthropic 30–50; Copilot Studio 25–30). */
export const ADVISED_TOOLS = 30;
const ALL: readonly Platform[] = ['openai', 'gpt_actions', 'anthropic', 'gemini', 'mcp', 'copilot_studio'];

/**
 * too-many-tools (the whole document) and descriptions-near-duplicate: operations whose
 * summary and description are the same once case, punctuation and spacing are ignored, so
 * that only their names tell the model which to call. Exact match after normalisation
 * (a hash map: linear), never pairwise.
 */
export const toolRules: RuleFamily = {
  rules: {
    'too-many-tools': 'More operations than a request takes tools (128), or than models choose well among (about 30).',
    'descriptions-near-duplicate': 'Operations with the same summary and description: only their names tell the model which to call.',
    'operation-method-unsupported':
      'An operation of a method other than the eight (OpenAPI 3.2 `query` or `additionalOperations`): it is not an endpoint and no tool is made for it.',
  },
  check(ctx) {
    otherMethods(ctx);
    const n = ctx.endpoints.length;
    if (n > MAX_TOOLS) {
      ctx.emit(
        finding(
          'too-many-tools',
          'error',
          null,
          '/paths',
          `${n} operations: a request takes at most ${MAX_TOOLS} tools, so the copilot needs a subset (models also choose better among fewer).`,
          ['openai', 'gemini', 'copilot_studio'],
        ),
      );
    } else if (n > ADVISED_TOOLS) {
      ctx.emit(
        finding(
          'too-many-tools',
          'warning',
          null,
          '/paths',
          `${n} operations: models choose the right tool less often beyond about ${ADVISED_TOOLS} at once; consider a subset per copilot.`,
          ['openai', 'anthropic', 'gemini', 'copilot_studio'],
        ),
      );
    }

    // Grouped by the normalised text itself: a few native string operations per operation.
    // (A hash computed character by character in JavaScript, tried, is faster only once the
    // JIT has compiled it, on a document of thousands of operations; the CLI runs each
    // document cold, in a process of its own, where it was 3 to 4 times slower: bench/README.md.)
    // First by the start of that text, read from the start of the summary and description
    // only; just the operations that share a start are normalised whole.
    const keys = new Array<string | null>(n);
    const byStart = new Map<string, number[]>();
    for (let i = 0; i < n; i++) {
      const e = ctx.endpoints[i]!;
      const start = normalisedStart(e.name, e.description);
      keys[i] = start.whole;
      if (start.key === null) continue;
      const group = byStart.get(start.key);
      if (group) group.push(i);
      else byStart.set(start.key, [i]);
    }
    const groups = new Map<string, number[]>();
    for (const sharing of byStart.values()) {
      if (sharing.length < 2) {
        keys[sharing[0]!] = null; // alone: no other operation can read the same
        continue;
      }
      for (const i of sharing) {
        const e = ctx.endpoints[i]!;
        const key = keys[i] ?? normalisedText(e.name, e.description)!;
        keys[i] = key;
        const group = groups.get(key);
        if (group) group.push(i);
        else groups.set(key, [i]);
      }
    }
    for (let i = 0; i < n; i++) {
      const key = keys[i];
      if (key === null) continue;
      const group = groups.get(key)!;
      if (group.length < 2) continue;
      ctx.emit(
        finding(
          'descriptions-near-duplicate',
          'warning',
          i,
          ctx.sources[i]!.pointer,
          `Summary and description are the same as ${listEndpoints(group, i)}: only the names tell the model which operation to call.`,
          ALL,
        ),
      );
    }
  },
};

/**
 * operation-method-unsupported: a path item's `query` operation, or an entry of its
 * `additionalOperations` (both OpenAPI 3.2), written at the path (a path item given by a
 * `$ref` is not read for them). DESIGN §5 makes endpoints of the eight methods only, so
 * these get no endpoint, no tool and no other check; the finding says so rather than
 * leaving them out unseen. One `hasOwn` per path item unless it has them.
 */
function otherMethods(ctx: RuleContext): void {
  const paths = ctx.doc.paths;
  if (!isPlainObject(paths)) return;
  for (const path in paths) {
    const item = paths[path];
    if (path.startsWith('x-') || !isPlainObject(item)) continue;
    const operations: [string[], string][] = [];
    if (Object.hasOwn(item, 'query') && isPlainObject(item.query)) operations.push([['query'], 'QUERY']);
    const more = Object.hasOwn(item, 'additionalOperations') ? item.additionalOperations : undefined;
    if (isPlainObject(more)) for (const method in more) if (isPlainObject(more[method])) operations.push([['additionalOperations', method], method]);
    for (const [at, method] of operations) {
      ctx.emit(
        finding(
          'operation-method-unsupported',
          'warning',
          null,
          jsonPointer(['paths', path, ...at]),
          `${method} ${path} is not an endpoint here: endpoints are operations of GET, PUT, POST, DELETE, OPTIONS, HEAD, PATCH and TRACE, so the copilot gets no tool for it (and it is not checked).`,
          ALL,
        ),
      );
    }
  }
}

// Spaces (ASCII and Unicode) and ASCII punctuation: what normalisation drops.
const SEPARATORS = /[\s\u0021-\u002f\u003a-\u0040\u005b-\u0060\u007b-\u007f\u0085\u200b]+/g;

/** The summary and description as one text, lower case, each run of separators one space, trimmed; null when blank. */
function normalisedText(summary: string, description: string): string | null {
  return normalised(`${summary} ${description}`);
}

function normalised(text: string): string | null {
  const out = text.toLowerCase().replace(SEPARATORS, ' ').trim();
  return out === '' ? null : out;
}

/** Characters of the summary and description read first, and of their normalised text operations are first grouped by. */
const START_READ = 96;
const START_KEY = 40;

/**
 * The first START_KEY characters of `normalisedText(summary, description)` (`key`, null when
 * blank), read from the first START_READ characters of the text when they are enough: the
 * normalised text of a text's start is a start of the text's normalised text (case and
 * separators change character by character), as long as it holds more than START_KEY
 * characters and no capital sigma (whose lower case depends on what follows it). `whole` is
 * the whole normalised text when it was read whole.
 */
function normalisedStart(summary: string, description: string): { key: string | null; whole: string | null } {
  if (summary.length + 1 + description.length > START_READ) {
    const head = summary.length >= START_READ ? summary.slice(0, START_READ) : `${summary} ${description.slice(0, START_READ - summary.length - 1)}`;
    if (!head.includes('\u03a3')) {
      const start = normalised(head);
      if (start !== null && start.length > START_KEY) return { key: start.slice(0, START_KEY), whole: null };
    }
  }
  const whole = normalisedText(summary, description);
  return { key: whole === null ? null : whole.slice(0, START_KEY), whole };
}
