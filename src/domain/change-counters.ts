import * as counters from '../storage/change-counter.repository.js';
import type { Storage } from '../storage/database.js';

/**
 * Tokens the database sets to a fresh random value on every write to a table, whichever
 * instance makes it (migrations 003 and 004). `null` when the database has no token for the
 * table (its row was deleted by hand): then nothing may be cached.
 */
export interface ChangeCounters {
  /** Changes on every change to a copilot: list answers are cached under it. */
  copilots: number | null;
  /** Changes on every creation, revocation or deletion of an API key: key rows are cached under it. */
  apiKeys: number | null;
}

/**
 * Shares reads among the callers of one turn of the event loop, without ever handing a
 * caller a read that started before its call: a caller joins the next read to start, which
 * starts at the end of the current turn (so the requests that arrived together share it).
 * Each caller thus sees every write committed before it called, as if it had read alone;
 * under load one query serves several requests. A read does not wait for an earlier one
 * still in flight (on PostgreSQL, waiting left the process idle while every connection's
 * request waited on the same round trip). A failed read fails its callers only.
 */
export function sharedFreshReads<T>(read: () => Promise<T>): () => Promise<T> {
  let next: Promise<T> | null = null;
  return () => {
    next ??= new Promise<void>((resolve) => setImmediate(resolve)).then(() => {
      next = null;
      return read();
    });
    return next;
  };
}

/** The change counters, read fresh for each caller (shared among concurrent callers). */
export function changeCountersReader(storage: Storage): () => Promise<ChangeCounters> {
  return sharedFreshReads(async () => {
    const values = await counters.readChangeCounters(storage.readDb);
    return { copilots: values.get('copilots') ?? null, apiKeys: values.get('api_keys') ?? null };
  });
}
