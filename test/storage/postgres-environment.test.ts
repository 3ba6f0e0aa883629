/**
 * The service on a PostgreSQL database whose owner changed the defaults (ALTER DATABASE / ROLE
 * … SET): every connection sets what the service's SQL relies on, whatever the database says
 * (pgenv sweep: standard_conforming_strings off made every name filter 500; a serializable
 * default made concurrent writes 503; role timeouts cut searches and page stores).
 */
import { sql } from 'kysely';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { createCopilot } from '../../src/domain/copilots/copilot.service.js';
import { openStorage, type Storage } from '../../src/storage/database.js';
import { listCopilots } from '../../src/storage/copilot.repository.js';
import { migrateToLatest } from '../../src/storage/migrate.js';
import { createTestDatabase, DIALECTS, type TestDatabase } from '../support/databases.js';

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
});
