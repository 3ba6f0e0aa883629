import { at, invalidDocument, jsonPointer, positionOfByte, positionOfIndex } from './problems.js';

/**
 * JSON with hostile-input protection. `JSON.parse` accepts any depth, but a document
 * nested millions deep costs it seconds and hundreds of megabytes: where documents come
 * from other people (the service), one pass over the bytes refuses one nested deeper than
 * the limit before parsing (`scanNestingFirst`); the same pass runs before the strict
 * reader of the error paths in any case. After parsing, `parse.ts` walks the tree
 * with the same limit (for the callers that skip the pass, and to protect the recursive
 * code after it) and compares its key count with the members the text writes (first
 * `membersAtMost`, then, if that differs, the exact `countMembers`): fewer keys means some
 * object repeats a key, which `JSON.parse` drops silently; only then is the text read
 * again, strictly, to say which key and where.
 */

export interface DecodedJson {
  text: string;
  /** UTF-8 bytes of `text`, starting at `start` (3 after a UTF-8 byte-order mark). */
  utf8: Uint8Array;
  start: number;
}

export function parseJson(decoded: DecodedJson, maxDepth: number, scanNestingFirst: boolean): unknown {
  if (scanNestingFirst) {
    const error = tooDeepError(decoded, maxDepth);
    if (error) throw error;
  }
  try {
    return JSON.parse(decoded.text);
  } catch (err) {
    throw tooDeepError(decoded, maxDepth) ?? syntaxError(decoded.text, err);
  }
}

/** The error for a document nested more than `maxDepth` levels deep, where it first is (or null). */
export function tooDeepError({ utf8, start }: DecodedJson, maxDepth: number) {
  const offset = firstTooDeep(utf8, start, maxDepth);
  if (offset < 0) return null;
  const position = positionOfByte(utf8, start, offset);
  return invalidDocument(`The document is nested more than ${maxDepth} levels deep ${at(position)}.`, { ...position, max_depth: maxDepth });
}

/**
 * An upper bound of the object members in valid JSON text, exact unless a string starts
 * with a colon, after spaces or not (":smile:"): every member's colon follows its key's
 * closing quote (whitespace between), and a colon inside a string follows a quote only
 * when that quote is escaped or opens the string. One native search per colon: the cheap
 * first check.
 */
export function membersAtMost(text: string): number {
  let members = 0;
  for (let i = text.indexOf(':'); i >= 0; i = text.indexOf(':', i + 1)) {
    let j = i - 1;
    while (isJsonSpace(text.charCodeAt(j))) j--;
    if (text.charCodeAt(j) === 0x22 && !escapedQuote(text, j)) members++;
  }
  return members;
}

/**
 * The object members in valid JSON text: strings followed (after whitespace) by a colon.
 * It hops from quote to quote with the native `indexOf`, so it costs about one call per
 * string rather than a step per byte.
 */
export function countMembers(text: string): number {
  let members = 0;
  for (let open = text.indexOf('"'); open >= 0; ) {
    let close = text.indexOf('"', open + 1);
    while (close >= 0 && escapedQuote(text, close)) close = text.indexOf('"', close + 1);
    if (close < 0) break;
    let next = close + 1;
    while (isJsonSpace(text.charCodeAt(next))) next++;
    if (text.charCodeAt(next) === 0x3a) members++;
    open = text.indexOf('"', next);
  }
  return members;
}

/** JSON's whitespace: space, line feed, carriage return, tab. */
function isJsonSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

/** Whether the quote at `i` is escaped: an odd run of backslashes before it. */
function escapedQuote(text: string, i: number): boolean {
  let backslashes = 0;
  while (text.charCodeAt(i - 1 - backslashes) === 0x5c) backslashes++;
  return (backslashes & 1) === 1;
}

/**
 * The error for a document whose parsed keys are fewer than its members (or null if none
 * is found). Like a syntax error's, it comes from the strict reader, which the depth scan
 * always precedes: the reader keeps a frame per open level, and the value a repeated key
 * replaced may be the one nested too deep.
 */
export function duplicateKeyError(decoded: DecodedJson, maxDepth: number) {
  const tooDeep = tooDeepError(decoded, maxDepth);
  if (tooDeep) return tooDeep;
  const { text } = decoded;
  const problem = locateJsonProblem(text);
  if (problem?.kind !== 'duplicate') return null;
  const position = positionOfIndex(text, problem.index);
  return invalidDocument(`The document repeats the key ${JSON.stringify(problem.key)} in one object ${at(position)}.`, {
    ...position,
    pointer: problem.pointer,
  });
}

function syntaxError(text: string, err: unknown) {
  const problem = locateJsonProblem(text);
  if (problem?.kind === 'syntax') {
    const position = positionOfIndex(text, problem.index);
    return invalidDocument(`The document is not valid JSON: ${problem.message} ${at(position)}.`, { ...position });
  }
  // The strict reader found nothing: fall back on the engine's own account.
  const match = /at position (\d+)/.exec(err instanceof Error ? err.message : String(err));
  if (match) {
    const position = positionOfIndex(text, Number(match[1]));
    return invalidDocument(`The document is not valid JSON ${at(position)}.`, { ...position });
  }
  return invalidDocument('The document is not valid JSON.');
}

/** Byte offset of the first `{` or `[` (outside strings) that exceeds the depth limit, or -1. */
function firstTooDeep(bytes: Uint8Array, start: number, maxDepth: number): number {
  const n = bytes.length;
  let depth = 0;
  for (let i = start; i < n; i++) {
    const c = bytes[i]!;
    if (c <= 0x20) continue;
    if (c === 0x22) {
      // Skip the string: to the next quote not escaped by an odd run of backslashes.
      // Most of a description's bytes are inside strings: the native indexOf jumps them.
      const open = i;
      for (;;) {
        i = bytes.indexOf(0x22, i + 1);
        if (i < 0) return -1; // unterminated: JSON.parse reports it
        let backslashes = 0;
        while (i - backslashes - 1 > open && bytes[i - backslashes - 1] === 0x5c) backslashes++;
        if ((backslashes & 1) === 0) break;
      }
      continue;
    }
    if (c === 0x7b || c === 0x5b) {
      if (++depth > maxDepth) return i;
    } else if (c === 0x7d || c === 0x5d) {
      depth--;
    }
  }
  return -1;
}

/**
 * A strict, iterative JSON reader used only when something is wrong: it finds the first
 * syntax error (for a position when `JSON.parse`'s message has none) or the first
 * duplicate key (which `JSON.parse` accepts, keeping the last). Linear in the text.
 */
type JsonProblem =
  | { kind: 'syntax'; index: number; message: string }
  | { kind: 'duplicate'; index: number; key: string; pointer: string };

interface Frame {
  object: boolean;
  keys: Set<string> | null;
  index: number;
}

const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
const ESCAPES = new Set(['"', '\\', '/', 'b', 'f', 'n', 'r', 't']);
const HEX4 = /[0-9a-fA-F]{4}/y;

const EXPECT_VALUE = 0;
const AFTER_VALUE = 1;
const EXPECT_KEY = 2;

function locateJsonProblem(text: string): JsonProblem | null {
  const n = text.length;
  const stack: Frame[] = [];
  const path: (string | number)[] = [];
  let i = 0;
  let mode = EXPECT_VALUE;

  const skipSpace = (): void => {
    while (i < n && isJsonSpace(text.charCodeAt(i))) i++;
  };
  const syntax = (message: string, index = i): JsonProblem => ({ kind: 'syntax', index, message });
  const unexpected = (): JsonProblem =>
    i >= n ? syntax('unexpected end of the document') : syntax(`unexpected character ${JSON.stringify(text[i])}`);

  /** Returns the index after the closing quote, or a problem. */
  const readString = (): number | JsonProblem => {
    let j = i + 1;
    for (;;) {
      if (j >= n) return syntax('unterminated string', j);
      const c = text.charCodeAt(j);
      if (c === 0x22) return j + 1;
      if (c < 0x20) return syntax('bad control character in string', j);
      if (c === 0x5c) {
        const e = text[j + 1];
        if (e === 'u') {
          HEX4.lastIndex = j + 2;
          if (!HEX4.test(text)) return syntax('bad \\u escape in string', j);
          j += 6;
        } else if (e !== undefined && ESCAPES.has(e)) {
          j += 2;
        } else {
          return syntax('bad escape in string', j);
        }
      } else {
        j++;
      }
    }
  };

  for (;;) {
    skipSpace();
    if (mode === EXPECT_VALUE) {
      const c = text.charCodeAt(i);
      if (c === 0x7b || c === 0x5b) {
        const object = c === 0x7b;
        i++;
        skipSpace();
        if (text.charCodeAt(i) === (object ? 0x7d : 0x5d)) {
          i++;
          mode = AFTER_VALUE;
        } else if (object) {
          stack.push({ object, keys: new Set(), index: 0 });
          mode = EXPECT_KEY;
        } else {
          stack.push({ object, keys: null, index: 0 });
          path.push(0);
        }
      } else if (c === 0x22) {
        const end = readString();
        if (typeof end !== 'number') return end;
        i = end;
        mode = AFTER_VALUE;
      } else if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
        NUMBER.lastIndex = i;
        if (!NUMBER.test(text)) return syntax('bad number');
        i = NUMBER.lastIndex;
        mode = AFTER_VALUE;
      } else if (text.startsWith('true', i) || text.startsWith('null', i)) {
        i += 4;
        mode = AFTER_VALUE;
      } else if (text.startsWith('false', i)) {
        i += 5;
        mode = AFTER_VALUE;
      } else {
        return unexpected();
      }
    } else if (mode === EXPECT_KEY) {
      if (text.charCodeAt(i) !== 0x22) {
        return i >= n ? unexpected() : syntax('expected a property name in double quotes');
      }
      const keyStart = i;
      const end = readString();
      if (typeof end !== 'number') return end;
      const key = JSON.parse(text.slice(keyStart, end)) as string;
      const frame = stack[stack.length - 1]!;
      if (frame.keys!.has(key)) return { kind: 'duplicate', index: keyStart, key, pointer: jsonPointer([...path, key]) };
      frame.keys!.add(key);
      path.push(key);
      i = end;
      skipSpace();
      if (text.charCodeAt(i) !== 0x3a) return i >= n ? unexpected() : syntax("expected ':' after a property name");
      i++;
      mode = EXPECT_VALUE;
    } else {
      // AFTER_VALUE
      const frame = stack[stack.length - 1];
      if (!frame) {
        return i < n ? syntax('unexpected text after the end of the document') : null;
      }
      const c = text.charCodeAt(i);
      if (c === 0x2c) {
        i++;
        path.pop();
        if (frame.object) {
          mode = EXPECT_KEY;
        } else {
          frame.index++;
          path.push(frame.index);
          mode = EXPECT_VALUE;
        }
      } else if (c === (frame.object ? 0x7d : 0x5d)) {
        i++;
        stack.pop();
        path.pop();
      } else if (i >= n) {
        return unexpected();
      } else {
        return syntax(frame.object ? "expected ',' or '}' after a property value" : "expected ',' or ']' after an array element");
      }
    }
  }
}
