import type { Db } from './schema.js';

/**
 * Runs `work` in a transaction: the caller's when `db` already is one (so a service called
 * inside a larger transaction commits or rolls back with it), else a new one on `db`.
 */
export function inTransaction<T>(db: Db, work: (trx: Db) => Promise<T>): Promise<T> {
  return db.isTransaction ? work(db) : db.transaction().execute(work);
}
