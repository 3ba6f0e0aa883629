/**
 * Scans: the reads whose work grows with a tenant's data rather than with the answer (a
 * knowledge base's search, which scores every passage holding a query word). They run on
 * connections of their own (database.ts), and those few connections are handed out fairly:
 *
 * - a tenant runs at most `perTenant` scans at once (one less than there are connections, at
 *   least one), so one tenant's slow scans never hold every connection;
 * - scans waiting for a connection are served round robin by tenant, first come first served
 *   within a tenant: a tenant's long queue delays another tenant by one scan at most;
 * - a tenant has at most `maxWaiting` scans waiting; one more is refused at once
 *   (`TooManyScans`, answered 429) rather than queued without bound;
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

export class TooManyScans extends Error {
  constructor(readonly waiting: number) {
    super(`${waiting} scans of this tenant are waiting already`);
    this.name = 'TooManyScans';
  }
}

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

interface Waiter {
  start(slot: number): void;
}

export interface ScanStats {
  running: number;
  waiting: number;
  /** Scans refused since the start (a tenant's queue was full). */
  refused: number;
  /** Scans answered ScanTimedOut since the start (past their time limit). */
  timedOut: number;
}

export class FairScans {
  /** Waiting scans by tenant; the map's order is the round robin's (a tenant served moves to the end). */
  private readonly waiting = new Map<string, Waiter[]>();
  private readonly running = new Map<string, number>();
  private readonly free: number[];
  private waitingCount = 0;
  private refused = 0;
  private timedOut = 0;

  constructor(
    readonly slots: number,
    private readonly perTenant: number,
    private readonly maxWaiting: number,
  ) {
    this.free = Array.from({ length: slots }, (_, i) => slots - 1 - i);
  }

  /**
   * Runs `work` on a free connection (its index, 0 … slots − 1) once the tenant's turn comes;
   * rejects with TooManyScans, without running it, when the tenant has `maxWaiting` scans waiting.
   */
  run<T>(tenant: string, work: (slot: number) => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const waiter: Waiter = {
        start: (slot) => {
          this.enter(tenant);
          let pending: Promise<T>;
          try {
            pending = work(slot);
          } catch (err) {
            pending = Promise.reject(err);
          }
          pending
            .then(resolve, (err: unknown) => {
              if (err instanceof ScanTimedOut) this.timedOut++;
              reject(err);
            })
            .finally(() => {
              this.leave(tenant);
              this.free.push(slot);
              this.dispatch();
            });
        },
      };
      const queue = this.waiting.get(tenant);
      if (queue !== undefined && queue.length >= this.maxWaiting) {
        this.refused++;
        reject(new TooManyScans(queue.length));
        return;
      }
      // Waiting first, then the turns: with a connection free and the tenant below its limit, it starts at once.
      if (queue) queue.push(waiter);
      else this.waiting.set(tenant, [waiter]);
      this.waitingCount++;
      this.dispatch();
    });
  }

  /**
   * Counts `until` as one of the tenant's running scans, without a connection, until it settles:
   * a statement set aside past its time limit still runs, and its tenant waits for it to end
   * before its next scan starts.
   */
  holdTurn(tenant: string, until: Promise<unknown>): void {
    this.enter(tenant);
    until
      .catch(() => undefined)
      .finally(() => {
        this.leave(tenant);
        this.dispatch();
      });
  }

  stats(): ScanStats {
    return { running: this.slots - this.free.length, waiting: this.waitingCount, refused: this.refused, timedOut: this.timedOut };
  }

  private enter(tenant: string): void {
    this.running.set(tenant, (this.running.get(tenant) ?? 0) + 1);
  }

  private leave(tenant: string): void {
    const left = (this.running.get(tenant) ?? 1) - 1;
    if (left === 0) this.running.delete(tenant);
    else this.running.set(tenant, left);
  }

  /** Gives free connections to the waiting tenants in round robin order, skipping those at their limit. */
  private dispatch(): void {
    while (this.free.length > 0) {
      let next: string | undefined;
      for (const [tenant] of this.waiting) {
        if ((this.running.get(tenant) ?? 0) < this.perTenant) {
          next = tenant;
          break;
        }
      }
      if (next === undefined) return;
      const queue = this.waiting.get(next)!;
      const waiter = queue.shift()!;
      this.waitingCount--;
      // The tenant served goes to the end of the round.
      this.waiting.delete(next);
      if (queue.length > 0) this.waiting.set(next, queue);
      waiter.start(this.free.pop()!);
    }
  }
}
