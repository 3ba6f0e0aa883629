import { Migrator, sql, type Kysely, type MigrationResultSet } from 'kysely';
import type { Storage } from './database.js';
import { initial } from './migrations/001-initial.js';
import { knowledgeBase } from './migrations/002-knowledge-base.js';

// Arbitrary constant naming the advisory lock that serialises migrations across instances.
const MIGRATION_LOCK_KEY = 7_420_331_118;

function migrator(db: Kysely<any>, storage: Storage): Migrator {
  const migrations = {
    '001-initial': initial(storage.dialect),
    '002-knowledge-base': knowledgeBase(storage.dialect),
  };
  return new Migrator({ db, provider: { getMigrations: async () => migrations } });
}

function check(result: MigrationResultSet): string[] {
  if (result.error) {
    const failed = result.results?.find((r) => r.status === 'Error')?.migrationName;
    throw new Error(`Migration ${failed ?? ''} failed: ${(result.error as Error).message ?? result.error}`);
  }
  return (result.results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

/**
 * Brings the schema to the latest version. Safe when several instances start at
 * once: on PostgreSQL the whole run holds a session-level advisory lock on one
 * connection (the others wait, then find nothing left to do); on SQLite the file
 * lock and Kysely's migration lock table do the same.
 */
export async function migrateToLatest(storage: Storage): Promise<string[]> {
  if (storage.dialect !== 'postgres') return check(await migrator(storage.db, storage).migrateToLatest());
  return storage.db.connection().execute(async (connection) => {
    await sql`select pg_advisory_lock(${MIGRATION_LOCK_KEY})`.execute(connection);
    try {
      return check(await migrator(connection, storage).migrateToLatest());
    } finally {
      await sql`select pg_advisory_unlock(${MIGRATION_LOCK_KEY})`.execute(connection);
    }
  });
}
