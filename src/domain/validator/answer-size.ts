import { invalidDocument } from './problems.js';
import type { ValidationResult } from './types.js';

/**
 * The answer is bounded (DESIGN §5): the endpoint objects reference the document's own
 * subtrees, so one subtree can appear in the answer many times (a YAML alias used by
 * every operation, a path-level parameter merged into each method, every endpoint again
 * in each flag map that lists it). A 1 MiB YAML document of one long string used by 150
 * operations answers 472 MB. The answer's length is counted before it is rendered and a
 * document whose answer would pass the bound is refused; real descriptions answer at most
 * about 5 times their size (Microsoft Graph 1.8 times).
 */

/** The bound never goes below this many characters of answer JSON (small documents with long answers). */
export const ANSWER_LIMIT_FLOOR_CHARS = 4 * 1024 * 1024;
/** Characters of answer JSON allowed per byte of the document (the bound is the larger of this and the floor). */
export const ANSWER_LIMIT_CHARS_PER_DOCUMENT_BYTE = 10;

/** The longest answer, in characters of JSON, a document of this many bytes may have. */
export function maxAnswerChars(documentBytes: number): number {
  return Math.max(ANSWER_LIMIT_FLOOR_CHARS, ANSWER_LIMIT_CHARS_PER_DOCUMENT_BYTE * documentBytes);
}

/**
 * Refuses a result whose JSON text (`renderAnswer`) would be longer than
 * `maxAnswerChars(documentBytes)`, without rendering it: 400 invalid_swagger_file with
 * the bound and the count in its details.
 *
 * First the count without escapes (no string is read): it is at most the true length, and
 * the true length is at most 6 times it (an escape writes one character as at most six).
 * Over the bound, the document is refused; at most a sixth of it, accepted. So answers of
 * repeated plain text, and every answer of at most 1.66 times its document or 680 KiB
 * (real descriptions: 0.1 to 1.5 times), cost one walk that never reads a string; in
 * between, the exact count decides.
 */
export function checkAnswerSize(result: ValidationResult, documentBytes: number): void {
  const limit = maxAnswerChars(documentBytes);
  const atLeast = jsonLengthWithoutEscapes(result);
  if (atLeast * MAX_ESCAPE_GROWTH <= limit) return;
  const chars = atLeast > limit ? atLeast : jsonLength(result, limit);
  if (chars <= limit) return;
  throw invalidDocument(
    `The validator's answer for this document would be at least ${chars} characters long, over the limit of ${limit} ` +
      `(${ANSWER_LIMIT_CHARS_PER_DOCUMENT_BYTE} per byte of its ${documentBytes} bytes, at least ${ANSWER_LIMIT_FLOOR_CHARS}): ` +
      'the document repeats large parts of itself (YAML aliases, path-level parameters merged into many operations).',
    { max_answer_chars: limit, estimated_answer_chars: chars, document_bytes: documentBytes },
  );
}

/** JSON.stringify writes a character as at most 6 (`\u001f`, a lone surrogate as `\udXXX`). */
const MAX_ESCAPE_GROWTH = 6;

/**
 * `JSON.stringify(value).length`, counted without building the text: every string's
 * length (escapes included) each time it is reached, and the length of each object of
 * MEMO_MIN_CHARS or more kept by identity, so that a subtree reached again (a YAML alias,
 * a merged path-level parameter, an endpoint in a flag map) costs one lookup. A smaller
 * object is counted again when reached again, which costs less than MEMO_MIN_CHARS steps:
 * the count stays linear in the number of distinct nodes, and most objects (the small
 * leaves of schemas) are never put in the map.
 *
 * Exact up to `limit`. Past it, strings are counted without their escapes (a long string
 * reached many times is not read again): the result is then a lower bound, above `limit`,
 * of the true length. Throws a TypeError on a cycle, as JSON.stringify does.
 */
export function jsonLength(value: unknown, limit = Infinity): number {
  const counter = new JsonCounter(limit);
  counter.value(value, 0);
  return counter.total;
}

/**
 * `jsonLength` with every string counted as its length and its quotes, never read for
 * escapes: a lower bound of `JSON.stringify(value).length`, and at least a sixth of it.
 */
export function jsonLengthWithoutEscapes(value: unknown): number {
  const counter = new JsonCounter(-1); // escapes are counted only while the total is within the limit: never
  counter.value(value, 0);
  return counter.total;
}

class JsonCounter {
  total = 0;
  private readonly sizes = new Map<object, number>();

  constructor(private readonly limit: number) {}

  value(v: unknown, depth: number): void {
    switch (typeof v) {
      case 'string':
        this.total += this.total <= this.limit ? quotedLength(v) : v.length + 2;
        return;
      case 'object':
        if (v === null) this.total += 4;
        else this.object(v, depth);
        return;
      case 'number':
        this.total += numberLength(v);
        return;
      case 'boolean':
        this.total += v ? 4 : 5;
        return;
      case 'bigint':
        throw new TypeError('Do not know how to serialize a BigInt');
      default:
        // undefined, functions and symbols: left out of objects, null in arrays (below), nothing at the root.
        return;
    }
  }

  private object(v: object, depth: number): void {
    const known = this.sizes.get(v);
    if (known !== undefined) {
      this.total += known;
      return;
    }
    // Parsed documents are at most 256 deep (parse.ts): only a cycle gets here.
    if (depth > MAX_DEPTH) throw new TypeError('Converting circular structure to JSON');
    const start = this.total;
    if (Array.isArray(v)) {
      // The brackets and the commas between items.
      this.total += v.length === 0 ? 2 : v.length + 1;
      for (let i = 0; i < v.length; i++) {
        const item: unknown = v[i];
        if (omitted(item)) this.total += 4;
        else this.value(item, depth + 1);
      }
    } else {
      let members = 0;
      for (const key in v) {
        const item: unknown = (v as Record<string, unknown>)[key];
        if (omitted(item)) continue;
        members++;
        // The key, its quotes and the colon.
        this.total += (this.total <= this.limit ? quotedLength(key) : key.length + 2) + 1;
        this.value(item, depth + 1);
      }
      this.total += members === 0 ? 2 : members + 1;
    }
    const size = this.total - start;
    if (size >= MEMO_MIN_CHARS) this.sizes.set(v, size);
  }
}

/** Objects whose JSON is at least this long have their length kept (see jsonLength). */
const MEMO_MIN_CHARS = 128;
const MAX_DEPTH = 1_000;

function omitted(value: unknown): boolean {
  return value === undefined || typeof value === 'function' || typeof value === 'symbol';
}

/** What JSON.stringify escapes: `"`, `\`, control characters and lone surrogates (and, to check, surrogate pairs). */
const ESCAPED = /["\\\u0000-\u001f\ud800-\udfff]/;

/** The length of JSON.stringify(s): the quotes, and each escape's extra characters. */
function quotedLength(s: string): number {
  const length = s.length;
  // Short strings (most keys) are read here; a regular expression call costs more than the loop.
  if (length < 48) {
    for (let i = 0; i < length; i++) {
      const c = s.charCodeAt(i);
      if (c < 0x20 || c === 0x22 || c === 0x5c || (c >= 0xd800 && c <= 0xdfff)) return escapedLength(s, i);
    }
    return length + 2;
  }
  const first = s.search(ESCAPED);
  return first === -1 ? length + 2 : escapedLength(s, first);
}

/** The quoted length of `s`, whose characters before `from` need no escape. */
function escapedLength(s: string, from: number): number {
  let n = s.length + 2;
  for (let i = from; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20) {
      // \b \t \n \f \r, else \u00XX.
      n += c === 0x08 || c === 0x09 || c === 0x0a || c === 0x0c || c === 0x0d ? 1 : 5;
    } else if (c === 0x22 || c === 0x5c) {
      n += 1;
    } else if (c >= 0xd800 && c <= 0xdfff) {
      // A pair is written as is; a lone surrogate as \uXXXX.
      if (c <= 0xdbff && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) i++;
      else n += 5;
    }
  }
  return n;
}

/** The length of JSON.stringify(n): `null` for NaN and the infinities. */
function numberLength(n: number): number {
  if (!Number.isFinite(n)) return 4;
  if (n >= 0 && n < 1e9 && Number.isInteger(n)) {
    let digits = 1;
    for (let rest = n; rest >= 10; rest = Math.floor(rest / 10)) digits++;
    return digits;
  }
  return String(n).length;
}
