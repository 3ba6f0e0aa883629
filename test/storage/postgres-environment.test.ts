/**
 * The service on a PostgreSQL database whose owner changed the defaults (ALTER DATABASE / ROLE
 * … SET): every connection sets what the service's SQL relies on, whatever the database says
 * (pgenv sweep: standard_conforming_strings off made every name filter 500; a serializable
 * default made concurrent writes 503; role timeouts cut searches and page stores).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { createCopilot } from '../../src/domain/copilots/copilot.service.js';
import { openStorage, type Storage } from '../../src/storage/database.js';
import { listCopilots } from '../../src/storage/copilot.repository.js';
import { migrateToLatest } from '../../src/storage/migrate.js';
import { isDatabaseUnavailable } from '../../src/storage/unavailable.js';
import { createTestDatabase, DIALECTS, type TestDatabase } from '../support/databases.js';
import { createThrowAwayDatabase } from '../support/postgres.js';

describe.runIf(DIALECTS.includes('postgres'))('PostgreSQL defaults changed by the database owner', () => {
  let database: TestDatabase | null = null;
  let storage: Storage | null = null;
  afterEach(async () => {
    await storage?.close();
    await database?.drop();
    storage = null;
    database = null;
  });

  const alterDatabase = async (url: string, settings: string[]) => {
    const name = new URL(url).pathname.slice(1);
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      for (const setting of settings) await admin.query(`alter database "${name}" set ${setting}`);
    } finally {
      await admin.end();
    }
  };

  it('every connection, of requests and of searches, sets the session as the service needs it', async () => {
    database = await createTestDatabase('postgres');
    await alterDatabase(database.databaseUrl!, [
      'standard_conforming_strings = off',
      "default_transaction_isolation = 'serializable'",
      "idle_in_transaction_session_timeout = '1s'",
      "statement_timeout = '200ms'",
      "lock_timeout = '1ms'",
    ]);
    storage = openStorage({ databaseUrl: database.databaseUrl, dataDir: database.dataDir, poolSize: 2, lockTimeoutMs: 0, scanTimeLimitMs: 4000 });
    await migrateToLatest(storage);
    const show = async (db: Storage['db'], name: string) =>
      (await sql<Record<string, string>>`select current_setting(${name}) as value`.execute(db)).rows[0]!.value;
    for (const db of [storage.db, storage.readDb]) {
      expect(await show(db, 'standard_conforming_strings')).toBe('on');
      expect(await show(db, 'default_transaction_isolation')).toBe('read committed');
      expect(await show(db, 'idle_in_transaction_session_timeout')).toBe('0');
      expect(await show(db, 'statement_timeout')).toBe('0');
      expect(await show(db, 'lock_timeout')).toBe('0'); // DATABASE_LOCK_TIMEOUT_MS=0: no limit, not the database's
    }
    expect(await show(storage.scanDb, 'statement_timeout')).toBe('4s');
    expect(await show(storage.scanDb, 'standard_conforming_strings')).toBe('on');
    // The name filter's escape clause reads as written.
    const made = await createCopilot(storage.db, { name: 'Apple 100% juice_bar' });
    const found = await listCopilots(storage.readDb, { limit: 10, nameContains: '100%', includeDeleted: false });
    expect(found.map((c) => c.id)).toEqual([made.id]);
  });

  const throwAway = async (createOptions = '') => {
    const made = await createThrowAwayDatabase(`cms_test_${process.pid}_${Math.random().toString(36).slice(2, 10)}`, undefined, createOptions);
    database = { dialect: 'postgres', dataDir: mkdtempSync(path.join(tmpdir(), 'cms-test-')), databaseUrl: made.url, drop: made.drop };
    return made.url;
  };
  const open = (url: string) => {
    storage = openStorage({ databaseUrl: url, dataDir: database!.dataDir, poolSize: 2 });
    return storage;
  };

  it('a database that is not UTF-8 is refused at the start, saying how to make one (LATIN1 answered 500 to any other script)', async () => {
    const url = await throwAway("encoding 'LATIN1' template template0 lc_collate 'C' lc_ctype 'C'");
    await expect(migrateToLatest(open(url))).rejects.toThrow(/encoding is LATIN1.*UTF-8.*createdb -E UTF8/);
  });

  it('a read-only database is refused at the start; one that turns read-only while serving is 503 (it was 500)', async () => {
    const url = await throwAway();
    const serving = open(url);
    await migrateToLatest(serving);
    await alterDatabase(url, ['default_transaction_read_only = on']);
    const later = openStorage({ databaseUrl: url, dataDir: database!.dataDir, poolSize: 1 });
    try {
      await expect(migrateToLatest(later)).rejects.toThrow(/read-only.*primary/);
      const refused = await createCopilot(later.db, { name: 'x' }).catch((err: unknown) => err);
      expect((refused as { code?: string }).code).toBe('25006');
      expect(isDatabaseUnavailable(refused)).toBe(true);
    } finally {
      await later.close();
    }
  });

  it("another application's Kysely migration tables in another schema do not stop the migrations (they were taken for the service's own)", async () => {
    const url = await throwAway();
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      await admin.query('create schema other_app');
      await admin.query('create table other_app.kysely_migration (name varchar(255) primary key, timestamp varchar(255) not null)');
      await admin.query('create table other_app.kysely_migration_lock (id varchar(255) primary key, is_locked integer not null default 0)');
      await admin.query("insert into other_app.kysely_migration values ('001-their-own', '2024-01-01')");
    } finally {
      await admin.end();
    }
    const migrated = await migrateToLatest(open(url));
    expect(migrated[0]).toBe('001-initial');
    expect(await migrateToLatest(storage!)).toEqual([]);
  });
});
