import { at, invalidDocument, jsonPointer, positionOfByte, positionOfIndex } from './problems.js';

/**
 * JSON with hostile-input protection. Before `JSON.parse`, one pass over the bytes finds
 * the nesting depth (V8 parses any depth, but a document nested millions deep costs
 * seconds and hundreds of megabytes, so it is refused first) and counts object members
 * (one `:` outside strings each). After parsing, `parse.ts` compares that count with the
 * keys it walked: fewer keys means some object repeats a key, which `JSON.parse` drops
 * silently; only then is the text read again, strictly, to say which key and where.
 */

export interface DecodedJson {
  text: string;
  /** UTF-8 bytes of `text`, starting at `start` (3 after a UTF-8 byte-order mark). */
  utf8: Uint8Array;
  start: number;
}

/** Parses JSON text; returns the value and the number of object members written. */
export function parseJson({ text, utf8, start }: DecodedJson, maxDepth: number): { value: unknown; members: number } {
  const scan = scanJson(utf8, start, maxDepth);
  if (scan.tooDeepAt >= 0) {
    const position = positionOfByte(utf8, start, scan.tooDeepAt);
    throw invalidDocument(`The document is nested more than ${maxDepth} levels deep ${at(position)}.`, { ...position, max_depth: maxDepth });
  }
  try {
    return { value: JSON.parse(text), members: scan.members };
  } catch (err) {
    throw syntaxError(text, err);
  }
}

/** The error for a document whose parsed keys are fewer than its members (or null if none is found). */
export function duplicateKeyError(text: string) {
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

interface JsonScan {
  /** Object members (`:` outside strings). Exact for valid JSON. */
  members: number;
  /** Byte offset of the first `{` or `[` that exceeds the depth limit, or -1. */
  tooDeepAt: number;
}

function scanJson(bytes: Uint8Array, start: number, maxDepth: number): JsonScan {
  const n = bytes.length;
  let depth = 0;
  let members = 0;
  for (let i = start; i < n; i++) {
    const c = bytes[i]!;
    if (c <= 0x20) continue;
    if (c === 0x22) {
      // Skip the string: to the next quote not escaped by an odd run of backslashes.
      // Most of a description's bytes are inside strings: the native indexOf jumps them.
      const open = i;
      for (;;) {
        i = bytes.indexOf(0x22, i + 1);
        if (i < 0) return { members, tooDeepAt: -1 }; // unterminated: JSON.parse reports it
        let backslashes = 0;
        while (i - backslashes - 1 > open && bytes[i - backslashes - 1] === 0x5c) backslashes++;
        if ((backslashes & 1) === 0) break;
      }
      continue;
    }
    if (c === 0x3a) {
      members++;
    } else if (c === 0x7b || c === 0x5b) {
      if (++depth > maxDepth) return { members, tooDeepAt: i };
    } else if (c === 0x7d || c === 0x5d) {
      depth--;
    }
  }
  return { members, tooDeepAt: -1 };
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
    while (i < n) {
      const c = text.charCodeAt(i);
      if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) i++;
      else break;
    }
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
