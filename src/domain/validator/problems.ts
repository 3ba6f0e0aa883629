import { AppError } from '../../errors.js';

/**
 * Reporting a document that cannot be used: the one error the validator throws
 * (400 invalid_swagger_file), positions (1-based line and column, columns counted in
 * characters) and JSON pointers for its details.
 */

export function invalidDocument(message: string, details?: Record<string, unknown>): AppError {
  return new AppError('invalid_swagger_file', message, details);
}

/** A document whose validation does not fit in memory (aliases expanding within the limits). */
export function tooLargeToValidate(): AppError {
  return invalidDocument('The document is too large to validate.');
}

export interface Position {
  line: number;
  column: number;
}

export function at(position: Position): string {
  return `(line ${position.line}, column ${position.column})`;
}

/** Position of a UTF-16 index in `text`. */
export function positionOfIndex(text: string, index: number): Position {
  const end = Math.max(0, Math.min(index, text.length));
  let line = 1;
  let lineStart = 0;
  for (let i = text.indexOf('\n'); i !== -1 && i < end; i = text.indexOf('\n', i + 1)) {
    line++;
    lineStart = i + 1;
  }
  return { line, column: countCodePoints(text.slice(lineStart, end)) + 1 };
}

/** Position of a byte offset in UTF-8 `bytes` whose text starts at `start` (after a BOM). */
export function positionOfByte(bytes: Uint8Array, start: number, offset: number): Position {
  const end = Math.max(start, Math.min(offset, bytes.length));
  let line = 1;
  let lineStart = start;
  for (let i = start; i < end; i++) {
    if (bytes[i] === 0x0a) {
      line++;
      lineStart = i + 1;
    }
  }
  const prefix = Buffer.from(bytes.buffer, bytes.byteOffset + lineStart, end - lineStart).toString('utf8');
  return { line, column: countCodePoints(prefix) + 1 };
}

function countCodePoints(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0xdc00 || c > 0xdfff || i === 0 || (s.charCodeAt(i - 1) & 0xfc00) !== 0xd800) n++;
  }
  return n;
}

/** RFC 6901 pointer of a path of keys and indexes. */
export function jsonPointer(segments: readonly (string | number)[]): string {
  let out = '';
  for (const s of segments) {
    const text = String(s);
    out += text.includes('~') || text.includes('/') ? `/${text.replace(/~/g, '~0').replace(/\//g, '~1')}` : `/${text}`;
  }
  return out;
}

/** A short description of a value's type for messages: "an array", "a string", "null". */
export function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  switch (typeof value) {
    case 'object':
      return 'an object';
    case 'string':
      return 'a string';
    case 'number':
      return 'a number';
    case 'boolean':
      return 'a boolean';
    default:
      return typeof value;
  }
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
