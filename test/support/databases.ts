import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { openStorage, type DialectName, type Storage } from '../../src/storage/database.js';
import { migrateToLatest } from '../../src/storage/migrate.js';

/** The server the PostgreSQL runs use; each test file gets its own throw-away database on it. */
export const POSTGRES_ADMIN_URL = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

async function postgresReachable(): Promise<boolean> {
  const client = new pg.Client({ connectionString: POSTGRES_ADMIN_URL, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    await client.query('select 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

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
  const name = `cms_test_${process.pid}_${Math.random().toString(36).slice(2, 10)}`;
  const admin = new pg.Client({ connectionString: POSTGRES_ADMIN_URL });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(POSTGRES_ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    dialect,
    dataDir,
    databaseUrl: url.toString(),
    async drop() {
      const client = new pg.Client({ connectionString: POSTGRES_ADMIN_URL });
      await client.connect();
      await client.query(`drop database if exists ${name} with (force)`);
      await client.end();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** A migrated storage on a fresh throw-away database. */
export async function createTestStorage(dialect: DialectName): Promise<{ storage: Storage; database: TestDatabase; cleanup(): Promise<void> }> {
  const database = await createTestDatabase(dialect);
  const storage = openStorage({ databaseUrl: database.databaseUrl, dataDir: database.dataDir, poolSize: 4 });
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
