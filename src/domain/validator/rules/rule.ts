import type { EndpointSource } from '../endpoints.js';
import { jsonPointer } from '../problems.js';
import { specVersion } from '../root-check.js';
import type { ApiDocument, Endpoint } from '../types.js';
import type { Platform, RuleFinding, Severity } from '../wire-types.js';

export type { Platform, RuleFinding, Severity } from '../wire-types.js';

/** The platforms copilots run on (DESIGN §5; their limits and sources: docs/platform-rules.md), in wire order. */
export const PLATFORMS = ['openai', 'gpt_actions', 'anthropic', 'gemini', 'mcp', 'copilot_studio'] as const satisfies readonly Platform[];

/** Every platform: a culprit that breaks any copilot (no server, an unresolved `$ref`). */
export const ALL_PLATFORMS: readonly Platform[] = PLATFORMS;

/** What a rule family reads: the document, its endpoints and where each comes from. */
export interface RuleContext {
  readonly doc: ApiDocument;
  readonly endpoints: readonly Endpoint[];
  readonly sources: readonly EndpointSource[];
  readonly swagger2: boolean;
  /** Adds a finding; findings keep the order they are emitted in, families in registry order. */
  emit(finding: RuleFinding): void;
  /**
   * `shorten`, computed once per distinct text and length in the document: a parameter written
   * out in every operation (Kubernetes' `fieldSelector`, 1,199 times) repeats its description.
   */
  shorten(text: string, max: number): string;
}

/**
 * A family of rules (one module): the ids it may emit (stable, documented in the README), each
 * with one sentence that says what it finds (the rule's description in SARIF), and its check.
 * Checks are linear (or n log n) in the document and never throw: findings are values.
 */
export interface RuleFamily {
  readonly rules: Readonly<Record<string, string>>;
  check(ctx: RuleContext): void;
}

/** A finding, its keys in the order DESIGN §5 fixes. */
export function finding(
  rule: string,
  severity: Severity,
  endpoint: number | null,
  pointer: string,
  message: string,
  platforms: readonly Platform[],
  fix: unknown = null,
): RuleFinding {
  // The platform lists are the rules' shared constants, never changed: no copy per finding.
  return { rule, severity, endpoint, pointer, message, platforms: platforms as Platform[], fix };
}

export function createContext(doc: ApiDocument, endpoints: readonly Endpoint[], sources: readonly EndpointSource[], out: RuleFinding[]): RuleContext {
  const shortened = new Map<number, Map<string, string>>();
  return {
    doc,
    endpoints,
    sources,
    swagger2: specVersion(doc) === 'swagger2',
    emit: (f) => void out.push(f),
    shorten(text, max) {
      let byText = shortened.get(max);
      if (byText === undefined) {
        byText = new Map<string, string>();
        shortened.set(max, byText);
      }
      const known = byText.get(text);
      if (known !== undefined) return known;
      const short = shorten(text, max);
      byText.set(text, short);
      return short;
    },
  };
}

/** `base` + one more RFC 6901 segment. */
export function child(base: string, ...segments: (string | number)[]): string {
  return base + jsonPointer(segments);
}

/**
 * `text` cut to at most `max` characters for a computed fix: at the last sentence end that
 * keeps at least half, else at the last space, with an ellipsis when cut mid-sentence.
 */
export function shorten(text: string, max: number): string {
  const t = collapsedHead(text, max);
  if (t.length <= max) return t;
  const head = t.slice(0, max);
  const sentence = Math.max(head.lastIndexOf('. '), head.lastIndexOf('! '), head.lastIndexOf('? '));
  if (sentence >= max / 2) return head.slice(0, sentence + 1);
  const room = t.slice(0, max - 1);
  const space = room.lastIndexOf(' ');
  return `${(space >= max / 2 ? room.slice(0, space) : room).replace(/[\s,;:.]+$/, '')}…`;
}

/**
 * The text trimmed, each run of white space one space, cut after its first `max + 1`
 * characters: the part `shorten` reads. A long description is collapsed only as far as
 * needed (one that is long only because of its spaces is collapsed whole).
 */
export function collapsedHead(text: string, max: number): string {
  const trimmed = text.trim();
  for (let take = 2 * max + 2; ; take *= 2) {
    const head = trimmed.slice(0, take).replace(/\s+/g, ' ');
    if (take >= trimmed.length || head.length > max + 1) return take >= trimmed.length ? head : head.slice(0, max + 1);
  }
}

/**
 * Endpoints named in a message: the first five of `indexes` but `except` (one of them, when
 * given), then how many more. At most six are read: a list of thousands costs what a pair does.
 */
export function listEndpoints(indexes: readonly number[], except = -1): string {
  const shown: number[] = [];
  for (let k = 0; k < indexes.length && shown.length < 5; k++) if (indexes[k] !== except) shown.push(indexes[k]!);
  const more = indexes.length - (except === -1 ? 0 : 1) - shown.length;
  return `endpoint${shown.length + more > 1 ? 's' : ''} ${shown.join(', ')}${more > 0 ? ` and ${more} more` : ''}`;
}

/** A value quoted in a message (typographic quotes: nothing for JSON to escape in the quotes themselves). */
export function q(value: string): string {
  return `“${value}”`;
}

/** The first value among `values` that is a non-blank string, trimmed; '' when none. */
export function firstText(...values: unknown[]): string {
  for (const v of values) if (typeof v === 'string' && v.trim() !== '') return v.trim();
  return '';
}
