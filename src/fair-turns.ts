/**
 * Turns on a few slots, shared fairly among tenants (a tenant: a copilot, whose knowledge base
 * or API description the work reads). Two kinds of work a client can make long take them: the
 * knowledge base's searches on the scan connections (storage/scans.ts), and the validations of a
 * copilot's API description on the task threads (threads/task-threads.ts).
 *
 * - a tenant runs at most `perTenant` pieces of work at once (one less than there are slots, at
 *   least one), so one tenant's slow work never holds every slot;
 * - work waiting for a slot is served round robin by tenant, first come first served within a
 *   tenant: a tenant's long queue delays each piece of another tenant's by one piece at most;
 * - a tenant has at most `maxWaiting` pieces waiting; one more is refused at once
 *   (`TooManyWaiting`, answered 429) rather than queued without bound.
 */

export class TooManyWaiting extends Error {
  constructor(readonly waiting: number) {
    super(`${waiting} pieces of work of this tenant are waiting already`);
    this.name = 'TooManyWaiting';
  }
}

interface Waiter {
  start(slot: number): void;
}

export interface TurnStats {
  running: number;
  waiting: number;
  /** Work refused since the start (a tenant's queue was full). */
  refused: number;
}

export class FairTurns {
  /** Waiting work by tenant; the map's order is the round robin's (a tenant served moves to the end). */
  private readonly waiting = new Map<string, Waiter[]>();
  private readonly running = new Map<string, number>();
  private readonly free: number[];
  private waitingCount = 0;
  private refused = 0;

  constructor(
    readonly slots: number,
    private readonly perTenant: number,
    private readonly maxWaiting: number,
  ) {
    this.free = Array.from({ length: slots }, (_, i) => slots - 1 - i);
  }

  /**
   * Runs `work` on a free slot (its index, 0 … slots − 1) once the tenant's turn comes; rejects
   * with TooManyWaiting, without running it, when the tenant has `maxWaiting` pieces waiting.
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
          pending.then(resolve, reject).finally(() => {
            this.leave(tenant);
            this.free.push(slot);
            this.dispatch();
          });
        },
      };
      const queue = this.waiting.get(tenant);
      if (queue !== undefined && queue.length >= this.maxWaiting) {
        this.refused++;
        reject(new TooManyWaiting(queue.length));
        return;
      }
      // Waiting first, then the turns: with a slot free and the tenant below its limit, it starts at once.
      if (queue) queue.push(waiter);
      else this.waiting.set(tenant, [waiter]);
      this.waitingCount++;
      this.dispatch();
    });
  }

  /**
   * Counts `until` as one of the tenant's running pieces of work, without a slot, until it
   * settles: work set aside past its time limit still runs, and its tenant waits for it to end
   * before its next piece starts.
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

  stats(): TurnStats {
    return { running: this.slots - this.free.length, waiting: this.waitingCount, refused: this.refused };
  }

  private enter(tenant: string): void {
    this.running.set(tenant, (this.running.get(tenant) ?? 0) + 1);
  }

  private leave(tenant: string): void {
    const left = (this.running.get(tenant) ?? 1) - 1;
    if (left === 0) this.running.delete(tenant);
    else this.running.set(tenant, left);
  }

  /** Gives free slots to the waiting tenants in round robin order, skipping those at their limit. */
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
