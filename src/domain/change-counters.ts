import * as counters from '../storage/change-counter.repository.js';
import type { Storage } from '../storage/database.js';

/** Numbers the database changes on every write to a table, on every instance (migrations 003, 004). */
export interface ChangeCounters {
  /** Moves on every change to a copilot: list answers are cached under it. */
  copilots: number;
  /** Moves on every creation, revocation or deletion of an API key: key rows are cached under it. */
  apiKeys: number;
}

/**
 * Shares reads among the callers waiting at the same time, without ever handing a caller a
 * read that started before its call: a caller joins the next read to start, which starts
 * when the one running has finished (or, when none runs, after the current turn of the
 * event loop, so the requests that arrived together share it). Each caller thus sees every
 * write committed before it called, as if it had read alone; under load one query serves
 * many requests. A failed read fails its callers only; the next call reads again.
 */
export function sharedFreshReads<T>(read: () => Promise<T>): () => Promise<T> {
  let next: Promise<T> | null = null;
  let running: Promise<unknown> | null = null;
  return () => {
    if (next) return next;
    const after = running ?? new Promise<void>((resolve) => setImmediate(resolve));
    next = after.then(
      () => start(),
      () => start(),
    );
    return next;
  };

  function start(): Promise<T> {
    next = null;
    const current = read();
    running = current;
    const done = () => {
      if (running === current) running = null;
    };
    current.then(done, done);
    return current;
  }
}

/** The change counters, read fresh for each caller (shared among concurrent callers). */
export function changeCountersReader(storage: Storage): () => Promise<ChangeCounters> {
  return sharedFreshReads(async () => {
    const values = await counters.readChangeCounters(storage.readDb);
    return { copilots: values.get('copilots') ?? 0, apiKeys: values.get('api_keys') ?? 0 };
  });
}
