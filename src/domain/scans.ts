import type { Kysely } from 'kysely';
import { AppError } from '../errors.js';
import { TooManyWaiting } from '../fair-turns.js';
import type { Storage } from '../storage/database.js';
import { ScanTimedOut } from '../storage/scans.js';
import type { Database } from '../storage/schema.js';

/** What a refused scan is told: the contract's 429, in the words of what it was. */
export interface ScanWords {
  /** `n` of the tenant's scans wait already (its queue is full). */
  waiting(n: number): string;
  /** It ran past `limitMs` and was stopped. */
  timedOut(limitMs: number): string;
}

/**
 * Runs `work` as a scan (storage/scans.ts): the reads whose work grows with a tenant's data,
 * on connections of their own (on SQLite, threads: never the event loop), in fair turns by
 * `tenant`, bounded by SEARCH_TIMEOUT_MS. Its refusals are 429 `quota_exceeded`.
 */
export function asScan<T>(storage: Pick<Storage, 'scan'>, tenant: string, work: (db: Kysely<Database>) => Promise<T>, words: ScanWords): Promise<T> {
  return storage.scan(tenant, work).catch((err: unknown) => {
    if (err instanceof TooManyWaiting) throw new AppError('quota_exceeded', words.waiting(err.waiting), { waiting: err.waiting });
    if (err instanceof ScanTimedOut) throw new AppError('quota_exceeded', words.timedOut(err.limitMs), { time_limit_ms: err.limitMs });
    throw err;
  });
}
