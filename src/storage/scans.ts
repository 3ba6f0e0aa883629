/**
 * Scans: the reads whose work grows with a tenant's data rather than with the answer (a
 * knowledge base's search, which scores every passage holding a query word). They run on
 * connections of their own (database.ts), and those few connections are handed out by fair
 * turns (fair-turns.ts): a tenant never holds every connection, waiting tenants are served
 * round robin, and a tenant's queue is bounded (`TooManyWaiting`, answered 429). Besides:
 *
 * - a scan runs for a bounded time (SEARCH_TIMEOUT_MS): past it, it is answered `ScanTimedOut`
 *   (429) and its connection serves the next scan at once. The storage stops the statement
 *   (PostgreSQL's `statement_timeout`) or, where it cannot (a SQLite statement runs to its end
 *   on its thread), sets the thread aside and opens another; the tenant keeps its turn until
 *   the set-aside statement has ended (`holdTurn`), so it cannot pile them up.
 *
 * Before this, scans waited first come first served for the connection (SQLite) or the pool
 * (PostgreSQL): a tenant sending many searches of a large knowledge base held every other
 * tenant's searches behind its own, and on PostgreSQL those waited past the pool's connect
 * timeout and failed with 503.
 */

import { FairTurns, type TurnStats } from '../fair-turns.js';

/**
 * The longest a scan may run by default (SEARCH_TIMEOUT_MS). The knowledge bases of the default
 * passage limit (KB_MAX_PASSAGES_PER_BOT, 100,000) search in well under a second; one of a
 * million passages took seconds for a word most passages hold (bench/README.md, section 6).
 */
export const SCAN_TIME_LIMIT_MS = 5000;

/** A scan that ran past its time limit (answered 429 to the tenant that asked for it). */
export class ScanTimedOut extends Error {
  constructor(readonly limitMs: number) {
    super(`The scan ran past its time limit of ${limitMs} ms`);
    this.name = 'ScanTimedOut';
  }
}

/**
 * Settles as `work` does, or rejects with ScanTimedOut once `limitMs` have passed, after calling
 * `setAside()` (which must free the connection for the next scan); `work`'s own late outcome is
 * then dropped.
 */
export function withinTimeLimit<T>(work: Promise<T>, limitMs: number, setAside: () => void): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => {
      setAside();
      reject(new ScanTimedOut(limitMs));
    }, limitMs);
    work.then(resolve, reject).finally(() => clearTimeout(timer));
  });
}

export interface ScanStats extends TurnStats {
  /** Scans answered ScanTimedOut since the start (past their time limit). */
  timedOut: number;
}

/** The scan connections' turns (fair-turns.ts), counting the scans stopped at their time limit. */
export class FairScans extends FairTurns {
  private timedOut = 0;

  override run<T>(tenant: string, work: (slot: number) => Promise<T>): Promise<T> {
    return super.run(tenant, work).catch((err: unknown) => {
      if (err instanceof ScanTimedOut) this.timedOut++;
      throw err;
    });
  }

  override stats(): ScanStats {
    return { ...super.stats(), timedOut: this.timedOut };
  }
}
