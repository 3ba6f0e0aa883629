import { createRequire } from 'node:module';
import type * as Jsonc from 'jsonc-parser';
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
 * again, strictly (jsonc-parser), to say which key and where.
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
  const problem = locateJsonProblem(text, true);
  if (problem?.kind !== 'duplicate') return null;
  const position = positionOfIndex(text, problem.index);
  return invalidDocument(`The document repeats the key ${JSON.stringify(problem.key)} in one object ${at(position)}.`, {
    ...position,
    pointer: problem.pointer,
  });
}

function syntaxError(text: string, err: unknown) {
  const problem = locateJsonProblem(text, false);
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
 * The first syntax error or repeated key, read strictly by jsonc-parser (comments and
 * trailing commas refused), which reports offsets; used only when something is wrong: for
 * a position when `JSON.parse`'s message has none, or for the key `JSON.parse` silently
 * replaced (keys are kept per object only when `findDuplicates`). Its parser recurses per
 * level, so it runs only after the depth check, and stops at the first problem: up to there
 * it reads the text as JSON does, so no deeper than checked.
 */
type JsonProblem = { kind: 'syntax'; index: number; message: string } | { kind: 'duplicate'; index: number; key: string; pointer: string };

const STRICT: Jsonc.ParseOptions = { disallowComments: true, allowTrailingComma: false, allowEmptyContent: false };
const STOP = Symbol('stop');

// Loaded on first use: only a document that is wrong needs it (the CLI starts without it).
const require = createRequire(import.meta.url);
let jsonc: typeof Jsonc | undefined;

function locateJsonProblem(text: string, findDuplicates: boolean): JsonProblem | null {
  let problem: JsonProblem | null = null;
  // Per open level: the keys of an object when duplicates are looked for, else an empty set (null for an array).
  const open: (Set<string> | null)[] = [];
  const noKeys = new Set<string>();
  // Whether a property name is due (after `{` or after `,` in an object).
  let keyDue = false;
  const stop = (found: JsonProblem): never => {
    problem = found;
    throw STOP;
  };
  jsonc ??= require('jsonc-parser') as typeof Jsonc;
  const { printParseErrorCode, visit } = jsonc;
  try {
    visit(
      text,
      {
        onObjectBegin: () => {
          open.push(findDuplicates ? new Set() : noKeys);
          keyDue = true;
        },
        onArrayBegin: () => {
          open.push(null);
          keyDue = false;
        },
        onObjectEnd: () => void open.pop(),
        onArrayEnd: () => void open.pop(),
        onSeparator: (character) => {
          if (character === ',') keyDue = open[open.length - 1] != null;
        },
        onObjectProperty: (key, offset, _length, _line, _column, path) => {
          keyDue = false;
          if (!findDuplicates) return;
          const keys = open[open.length - 1]!;
          if (keys.has(key)) stop({ kind: 'duplicate', index: offset, key, pointer: jsonPointer([...path(), key]) });
          keys.add(key);
        },
        onError: (code, offset) => stop(syntaxProblem(text, printParseErrorCode(code), offset, keyDue, open[open.length - 1] != null)),
      },
      STRICT,
    );
  } catch (err) {
    // A RangeError: nested deeper than the stack allows (a caller's own maxDepth); the engine's account stands.
    if (err !== STOP && !(err instanceof RangeError)) throw err;
  }
  return problem;
}

/** Our wording of the parser's error, where it is. */
function syntaxProblem(text: string, code: string, offset: number, keyDue: boolean, inObject: boolean): JsonProblem {
  const syntax = (message: string, index = offset): JsonProblem => ({ kind: 'syntax', index, message });
  switch (code) {
    case 'UnexpectedEndOfString':
    case 'InvalidEscapeCharacter':
    case 'InvalidUnicode':
    case 'InvalidCharacter':
      return stringProblem(text, offset);
  }
  if (offset >= text.length) return syntax('unexpected end of the document', text.length);
  switch (code) {
    case 'EndOfFileExpected':
      return syntax('unexpected text after the end of the document');
    case 'PropertyNameExpected':
      return syntax('expected a property name in double quotes');
    case 'ColonExpected':
      return syntax("expected ':' after a property name");
    case 'CommaExpected':
    case 'CloseBraceExpected':
    case 'CloseBracketExpected':
      return syntax(inObject ? "expected ',' or '}' after a property value" : "expected ',' or ']' after an array element");
    case 'InvalidNumberFormat':
    case 'UnexpectedEndOfNumber':
      return syntax('bad number');
    default:
      return syntax(keyDue ? 'expected a property name in double quotes' : `unexpected character ${JSON.stringify(text[offset])}`);
  }
}

// A string's opening quote and every character JSON allows after it.
const STRING_PREFIX = /"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*/y;

/** The parser reports a bad string where it opens: the character at fault, and why. */
function stringProblem(text: string, open: number): JsonProblem {
  STRING_PREFIX.lastIndex = open;
  const index = STRING_PREFIX.test(text) ? STRING_PREFIX.lastIndex : open;
  const syntax = (message: string): JsonProblem => ({ kind: 'syntax', index, message });
  if (index >= text.length) return syntax('unterminated string');
  if (text.charCodeAt(index) < 0x20) return syntax('bad control character in string');
  if (text[index] === '\\') return syntax(text[index + 1] === 'u' ? 'bad \\u escape in string' : 'bad escape in string');
  return { kind: 'syntax', index: open, message: 'bad string' };
}
