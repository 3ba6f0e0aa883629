import { AppError } from '../errors.js';
import { isTimestamp } from './ids.js';

/** A position in a list ordered by (created_at, id) descending; opaque to clients. */
export interface Cursor {
  createdAt: string;
  id: string;
}

/**
 * A cursor names its list (`copilots`, `deliveries`, or a bot's `links:<bot id>`,
 * `crawls:<bot id>`): another list's cursor is refused as one this service did not issue,
 * where it was read as a position in this one (lists sweep).
 */
function encodeCursor(list: string, cursor: Cursor): string {
  return Buffer.from(JSON.stringify([list, cursor.createdAt, cursor.id])).toString('base64url');
}

export function decodeCursor(list: string, text: string): Cursor {
  const invalid = () => new AppError('invalid_cursor', 'The cursor is not one this service issued for this list.', { cursor: text.slice(0, 100) });
  if (!/^[A-Za-z0-9_-]{1,400}$/.test(text)) throw invalid();
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    throw invalid();
  }
  if (!Array.isArray(value) || value.length !== 3 || value[0] !== list) throw invalid();
  const [, createdAt, id] = value;
  if (typeof createdAt !== 'string' || !isTimestamp(createdAt) || typeof id !== 'string' || id.length === 0 || id.length > 100) {
    throw invalid();
  }
  return { createdAt, id };
}

/** A page of `rows` (read with `limit + 1`) of a list ordered by (created_at, id), with the cursor that follows it. */
export function pageByCreation<R extends { created_at: string; id: string }>(rows: readonly R[], limit: number, list: string) {
  return pageOf(rows, limit, (last) => encodeCursor(list, { createdAt: last.created_at, id: last.id }));
}

/**
 * The largest position a part may hold: the columns they come from are 32-bit integers
 * (PostgreSQL's `integer`). Also the largest version a path may name (the same column).
 */
export const MAX_POSITION = 2_147_483_647;

/** A position given by small whole numbers (a version, a change's place in it); opaque to clients. */
export function encodePosition(parts: readonly number[]): string {
  return Buffer.from(JSON.stringify(parts)).toString('base64url');
}

export function decodePosition(text: string, count: number): number[] {
  const invalid = () => new AppError('invalid_cursor', 'The cursor is not one this service issued.', { cursor: text.slice(0, 100) });
  if (!/^[A-Za-z0-9_-]{1,100}$/.test(text)) throw invalid();
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    throw invalid();
  }
  if (!Array.isArray(value) || value.length !== count || !value.every((n) => Number.isSafeInteger(n) && n >= 0 && n <= MAX_POSITION)) throw invalid();
  return value as number[];
}

/**
 * A page of `rows` read with `limit + 1`: the first `limit` of them, and the cursor that
 * follows the last of those when the extra row shows that more remain.
 */
export function pageOf<R>(rows: readonly R[], limit: number, cursorAfter: (last: R) => string): { rows: R[]; nextCursor: string | null } {
  const more = rows.length > limit;
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return { rows: page, nextCursor: more && last !== undefined ? cursorAfter(last) : null };
}
