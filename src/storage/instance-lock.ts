import path from 'node:path';
import SQLite from 'better-sqlite3';
import { makePrivate } from './database.js';

/** The file whose lock the serving process holds, beside the SQLite database. */
export const INSTANCE_LOCK_FILE = 'copilot-service.instance.lock';

export class InstanceLockError extends Error {
  override name = 'InstanceLockError';
}

/**
 * One serving process per SQLite database: SQLite is one process's, and two services on one
 * DATA_DIR both started "ready", then failed each other's writes ("database is locked") and
 * jobs. The serving process holds an exclusive SQLite lock on a file of its own for as long as
 * it runs; the operating system releases it when the process ends, however it ends, so a crash
 * leaves no stale lock. The CLI's commands (keys, migrate, backup) do not take it: they are
 * meant to run beside the service.
 */
export function holdInstanceLock(dataDir: string): { release(): void } {
  const file = path.join(dataDir, INSTANCE_LOCK_FILE);
  makePrivate(file);
  const db = new SQLite(file, { timeout: 0 });
  try {
    db.pragma('journal_mode = DELETE');
    db.exec('BEGIN EXCLUSIVE');
  } catch (err) {
    db.close();
    if ((err as { code?: unknown }).code === 'SQLITE_BUSY') {
      throw new InstanceLockError(
        `Another service process is serving the SQLite database in ${dataDir} (it holds ${file}). SQLite is one process's: run one instance per DATA_DIR, or several on PostgreSQL (DATABASE_URL).`,
      );
    }
    throw err;
  }
  return {
    release() {
      if (db.open) db.close();
    },
  };
}
