import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { openStorage, type DialectName, type Storage, type StorageOptions } from '../../src/storage/database.js';
import { migrateToLatest } from '../../src/storage/migrate.js';
import { createThrowAwayDatabase, POSTGRES_ADMIN_URL, postgresReachable } from './postgres.js';

const reachable = await postgresReachable();
if (!reachable && process.env.CI) {
  // CI must never skip the PostgreSQL run silently.
  throw new Error(`PostgreSQL is not reachable at ${POSTGRES_ADMIN_URL}; CI requires it.`);
}
if (!reachable) console.warn(`PostgreSQL not reachable at ${POSTGRES_ADMIN_URL}: running SQLite only.`);

/** SQLite always; PostgreSQL whenever a server is reachable (always in CI). */
export const DIALECTS: DialectName[] = reachable ? ['sqlite', 'postgres'] : ['sqlite'];

export interface TestDatabase {
  dialect: DialectName;
  dataDir: string;
  databaseUrl: string | null;
  /** Drops the throw-away database and the data directory. */
  drop(): Promise<void>;
}

export async function createTestDatabase(dialect: DialectName): Promise<TestDatabase> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'cms-test-'));
  if (dialect === 'sqlite') {
    return { dialect, dataDir, databaseUrl: null, drop: async () => rmSync(dataDir, { recursive: true, force: true }) };
  }
  const database = await createThrowAwayDatabase(`cms_test_${process.pid}_${Math.random().toString(36).slice(2, 10)}`);
  return {
    dialect,
    dataDir,
    databaseUrl: database.url,
    async drop() {
      await database.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** A migrated storage on a fresh throw-away database (`options` over the test's: a pool of 4). */
export async function createTestStorage(
  dialect: DialectName,
  options: Partial<StorageOptions> = {},
): Promise<{ storage: Storage; database: TestDatabase; cleanup(): Promise<void> }> {
  const database = await createTestDatabase(dialect);
  const storage = openStorage({ databaseUrl: database.databaseUrl, dataDir: database.dataDir, poolSize: 4, ...options });
  await migrateToLatest(storage);
  return {
    storage,
    database,
    async cleanup() {
      await storage.close();
      await database.drop();
    },
  };
}
