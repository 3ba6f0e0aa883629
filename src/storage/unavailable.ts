/**
 * Whether a failure is the database being out of reach or busy right now (try again later) rather
 * than a bug: the HTTP layer answers it 503, and the jobs retry what it stopped.
 */

// Error codes of the drivers that mean "the database cannot be reached or is busy right now"
// rather than "this request is wrong": node's socket errors, PostgreSQL's connection and
// operator classes (08, 57P0x, 53300), a lock held past lock_timeout (55P03), a transaction
// chosen to end a deadlock or a serialization conflict (40P01, 40001: run again, it passes),
// a database that turned read-only (25006: a failover to a standby), SQLite's lock, open and
// I/O failures.
const UNAVAILABLE_CODES =
  /^(ECONNREFUSED|ECONNRESET|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH|ENOTFOUND|EAI_AGAIN|EPIPE|08\w{3}|57P0[1-3]|53300|55P03|40P01|40001|25006|SQLITE_(BUSY|LOCKED|CANTOPEN|IOERR)\w*)$/;
const UNAVAILABLE_MESSAGES = /^(Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error)/;

const CONNECTING = Symbol('failed while connecting');

/**
 * The database has no space left to write (SQLite's SQLITE_FULL, PostgreSQL's 53100 disk_full):
 * answered 503 like an outage, but logged at error, since only the operator can end it.
 */
export function isDiskFull(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === '53100' || (typeof code === 'string' && code.startsWith('SQLITE_FULL'));
}

/**
 * A transaction PostgreSQL ended to break a deadlock (40P01) or a serialization conflict (40001):
 * run again, it passes (inTransaction does, a few times, before it is answered 503).
 */
export function isTransactionConflict(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === '40P01' || code === '40001';
}

/**
 * Marks a failure to open a connection (storage/database.ts marks every one). Whatever its cause
 * (refused, a database dropped or renamed, one that takes no connections, a role or password
 * changed), a request then meets a database it cannot use right now: 503, not a bug's 500.
 */
export function markConnectFailure(err: unknown): unknown {
  if (err !== null && typeof err === 'object') (err as { [CONNECTING]?: true })[CONNECTING] = true;
  return err;
}

/** True for a failure to reach the database (503, try again) rather than a bug (500). */
export function isDatabaseUnavailable(err: unknown): boolean {
  return isDatabaseOutOfReach(err) || (err !== null && typeof err === 'object' && CONNECTING in err);
}

/**
 * The narrower case a start waits out: the database out of reach or busy, which may pass. A
 * connection refused for good (a missing database, a wrong password) answers the same at every
 * try, so the start says it at once.
 */
export function isDatabaseOutOfReach(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown; errors?: unknown } | null;
  if (!e || typeof e !== 'object') return false;
  if (typeof e.code === 'string' && UNAVAILABLE_CODES.test(e.code)) return true;
  if (typeof e.message === 'string' && UNAVAILABLE_MESSAGES.test(e.message)) return true;
  // Node reports a connection refused on every address of a name as an AggregateError.
  return Array.isArray(e.errors) && e.errors.some(isDatabaseOutOfReach);
}
