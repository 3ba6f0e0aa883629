/**
 * Whether a failure is the database being out of reach or busy right now (try again later) rather
 * than a bug: the HTTP layer answers it 503, and the jobs retry what it stopped.
 */

// Error codes of the drivers that mean "the database cannot be reached or is busy right now"
// rather than "this request is wrong": node's socket errors, PostgreSQL's connection and
// operator classes (08, 57P0x, 53300), SQLite's lock, open and I/O failures.
const UNAVAILABLE_CODES =
  /^(ECONNREFUSED|ECONNRESET|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH|ENOTFOUND|EAI_AGAIN|EPIPE|08\w{3}|57P0[1-3]|53300|SQLITE_(BUSY|LOCKED|CANTOPEN|IOERR)\w*)$/;
const UNAVAILABLE_MESSAGES = /^(Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error)/;

/** True for a failure to reach the database (503, try again) rather than a bug (500). */
export function isDatabaseUnavailable(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown; errors?: unknown } | null;
  if (!e || typeof e !== 'object') return false;
  if (typeof e.code === 'string' && UNAVAILABLE_CODES.test(e.code)) return true;
  if (typeof e.message === 'string' && UNAVAILABLE_MESSAGES.test(e.message)) return true;
  // Node reports a connection refused on every address of a name as an AggregateError.
  return Array.isArray(e.errors) && e.errors.some(isDatabaseUnavailable);
}
