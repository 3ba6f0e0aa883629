import { setTimeout as sleep } from 'node:timers/promises';
import type { Db } from './schema.js';
import { isTransactionConflict } from './unavailable.js';

/** Runs of a transaction PostgreSQL ended for a conflict, the last one's error then thrown. */
const ATTEMPTS = 3;

/**
 * Runs `work` in a transaction: the caller's when `db` already is one (so a service called
 * inside a larger transaction commits or rolls back with it), else a new one on `db`. A new one
 * that PostgreSQL ended to break a deadlock or a serialization conflict is run again, after a
 * short random pause, up to ATTEMPTS times: the conflict was with another transaction, which
 * has gone on. So `work` may run more than once: it changes nothing outside the transaction
 * that a later run would not set again (a value assigned, never accumulated), and its effects
 * outside the database come after it.
 */
export async function inTransaction<T>(db: Db, work: (trx: Db) => Promise<T>): Promise<T> {
  if (db.isTransaction) return work(db);
  for (let attempt = 1; ; attempt++) {
    try {
      return await db.transaction().execute(work);
    } catch (err) {
      if (attempt >= ATTEMPTS || !isTransactionConflict(err)) throw err;
      await sleep(attempt * (10 + Math.random() * 40));
    }
  }
}
