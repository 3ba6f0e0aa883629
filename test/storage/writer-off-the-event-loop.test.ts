import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStorage, type Storage } from '../../src/storage/database.js';
import { migrateToLatest } from '../../src/storage/migrate.js';
import { sqliteWriterDialect } from '../../src/storage/sqlite-writer.js';
import { createTestDatabase, DIALECTS, type TestDatabase } from '../support/databases.js';

// A statement that keeps the writer connection busy for a while on either database.
const LONG = sql<{ n: number }>`with recursive c(x) as (select 1 union all select x + 1 from c where x < 3000000) select count(*) as n from c`;

for (const dialect of DIALECTS) {
  describe(`the writer connection (${dialect})`, () => {
    let database: TestDatabase;
    let storage: Storage;
    beforeAll(async () => {
      database = await createTestDatabase(dialect);
      storage = openStorage({ dataDir: database.dataDir, databaseUrl: database.databaseUrl });
      await migrateToLatest(storage);
    });
    afterAll(async () => {
      await storage.close();
      await database.drop();
    });

    it('runs a long statement off the event loop: timers fire and reads answer while it runs', async () => {
      const order: string[] = [];
      const long = LONG.execute(storage.db).then(() => order.push('long statement'));
      await new Promise((resolve) => setImmediate(resolve));
      order.push('timer');
      await sql`select 1`.execute(storage.readDb);
      order.push('read');
      await long;
      expect(order).toEqual(['timer', 'read', 'long statement']);
    });

    it("keeps the database's error codes (a unique key broken twice in one transaction rolls back whole)", async () => {
      const row = { id: 'k1', name: 'n', secret_hash: 'h', scopes: '[]', bots: null, created_at: '2026-01-01T00:00:00.000000Z', revoked_at: null };
      const failure = await storage.db
        .transaction()
        .execute(async (trx) => {
          await trx.insertInto('api_keys').values(row).execute();
          await trx.insertInto('api_keys').values(row).execute();
        })
        .catch((err: unknown) => err as { code?: string });
      expect(failure?.code).toMatch(dialect === 'sqlite' ? /^SQLITE_CONSTRAINT/ : /^23505$/);
      expect(await storage.db.selectFrom('api_keys').select('id').where('id', '=', 'k1').execute()).toEqual([]);
    });

    // On SQLite a transaction's begin travels with its first statement (one message to the writer's thread, not two).
    it('rolls back a transaction whose first statement fails, and commits one that ran no statement', async () => {
      const row = { id: 'k2', name: 'n', secret_hash: 'h', scopes: '[]', bots: null, created_at: '2026-01-01T00:00:00.000000Z', revoked_at: null };
      await storage.db.insertInto('api_keys').values(row).execute();
      const failure = await storage.db
        .transaction()
        .execute(async (trx) => {
          await trx.insertInto('api_keys').values(row).execute();
        })
        .catch((err: unknown) => err as { code?: string });
      expect(failure?.code).toMatch(dialect === 'sqlite' ? /^SQLITE_CONSTRAINT/ : /^23505$/);
      expect(await storage.db.transaction().execute(async () => 'nothing ran')).toBe('nothing ran');
      // The connection is in no transaction: the next ones begin and commit as usual.
      await storage.db.transaction().execute(async (trx) => {
        await trx.updateTable('api_keys').set({ name: 'renamed' }).where('id', '=', 'k2').execute();
      });
      await expect(
        storage.db.transaction().execute(async (trx) => {
          await trx.updateTable('api_keys').set({ name: 'rolled back' }).where('id', '=', 'k2').execute();
          throw new Error('abandoned');
        }),
      ).rejects.toThrow('abandoned');
      expect(await storage.readDb.selectFrom('api_keys').select('name').where('id', '=', 'k2').executeTakeFirst()).toEqual({ name: 'renamed' });
    });

    it('runs a statement prepared before the schema changed against the new schema', async () => {
      await sql`create table prepared_probe (a integer)`.execute(storage.db);
      await sql`insert into prepared_probe (a) values (1)`.execute(storage.db);
      const read = () => sql`select * from prepared_probe`.execute(storage.readDb).then((r) => r.rows);
      const written = () => sql`select * from prepared_probe`.execute(storage.db).then((r) => r.rows);
      expect(await read()).toEqual([{ a: 1 }]);
      expect(await written()).toEqual([{ a: 1 }]);
      await sql`alter table prepared_probe add column b integer default 2`.execute(storage.db);
      expect(await read()).toEqual([{ a: 1, b: 2 }]);
      expect(await written()).toEqual([{ a: 1, b: 2 }]);
      await sql`drop table prepared_probe`.execute(storage.db);
    });
  });
}

describe('the SQLite writer thread that cannot open its database', () => {
  it('says why on every query: an Error with SQLite’s message and code (it was a bare object, printed "[object Object]")', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'writer-notadb-'));
    const file = path.join(dir, 'copilot-service.sqlite');
    writeFileSync(file, 'this is not a database, but a text file in its place '.repeat(200));
    const db = new Kysely<unknown>({ dialect: sqliteWriterDialect(file, ['journal_mode = WAL'], () => false, { inUse: 0, waiting: 0 }) });
    try {
      for (let i = 0; i < 2; i++) {
        const err = await sql`select 1`.execute(db).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(Error);
        expect(err).toMatchObject({ code: 'SQLITE_NOTADB', message: expect.stringMatching(/not a database/) });
      }
    } finally {
      await db.destroy();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('waits, within the busy timeout, for the write lock another connection holds on a new file before switching it to WAL', async () => {
    // SQLite answers the switch to WAL with SQLITE_BUSY at once, without its busy handler, while
    // another connection holds the write lock: two instances starting on one fresh file failed
    // "database is locked" (one run in twenty of the two-process migrate test).
    const dir = mkdtempSync(path.join(os.tmpdir(), 'writer-new-file-'));
    const file = path.join(dir, 'copilot-service.sqlite');
    const locker = new SQLite(file);
    locker.exec('create table t (x integer)');
    locker.exec('begin immediate');
    const db = new Kysely<unknown>({
      dialect: sqliteWriterDialect(file, ['busy_timeout = 5000', 'journal_mode = WAL'], () => false, { inUse: 0, waiting: 0 }),
    });
    try {
      setTimeout(() => locker.exec('commit'), 200);
      expect((await sql<{ n: number }>`select count(*) as n from t`.execute(db)).rows).toEqual([{ n: 0 }]);
      expect((await sql<{ journal_mode: string }>`pragma journal_mode`.execute(db)).rows).toEqual([{ journal_mode: 'wal' }]);
    } finally {
      locker.close();
      await db.destroy();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('requests queued behind one that waits for a lock another process holds wait out the same busy timeout, not one each', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'writer-queued-'));
    const file = path.join(dir, 'copilot-service.sqlite');
    const setup = new SQLite(file);
    setup.exec('pragma journal_mode = wal; create table t (x integer)');
    setup.close();
    const db = new Kysely<unknown>({
      dialect: sqliteWriterDialect(file, ['busy_timeout = 2000', 'journal_mode = WAL'], () => false, { inUse: 0, waiting: 0 }),
    });
    await sql`select 1`.execute(db); // the thread and its connection open
    // Another process's write transaction, ended 1.2 s after the busy timeout.
    const locker = new SQLite(file);
    locker.exec('begin immediate');
    try {
      const writes = [1, 2, 3].map((x) =>
        sql`insert into t (x) values (${x})`.execute(db).then(
          () => 'written',
          (err: { code?: string }) => err.code,
        ),
      );
      await new Promise((resolve) => setTimeout(resolve, 3200));
      locker.exec('commit');
      // Each waited once, from when it asked: with a whole timeout each, the second and third
      // would still be waiting at the release, and be written.
      expect(await Promise.all(writes)).toEqual(['SQLITE_BUSY', 'SQLITE_BUSY', 'SQLITE_BUSY']);
      // The lock free, the next request waits (and writes) as before.
      expect((await sql`insert into t (x) values (4)`.execute(db)).numAffectedRows).toBe(1n);
    } finally {
      if (locker.open) locker.close();
      await db.destroy();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a busy timeout a statement sets itself (the migrations take the lock with timers) is kept until one sets it back', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'writer-own-timeout-'));
    const db = new Kysely<unknown>({
      dialect: sqliteWriterDialect(path.join(dir, 'db.sqlite'), ['busy_timeout = 500'], () => false, { inUse: 0, waiting: 0 }),
    });
    const timeout = async (c: Kysely<unknown>) => Number(Object.values((await sql`pragma busy_timeout`.execute(c)).rows[0] as object)[0]);
    try {
      await db.connection().execute(async (c) => {
        await sql`pragma busy_timeout = 0`.execute(c);
        // Held past most of the timeout: the statements after would otherwise get what is left of it.
        await new Promise((resolve) => setTimeout(resolve, 600));
        expect(await timeout(c)).toBe(0);
        await sql`pragma busy_timeout = 500`.execute(c);
      });
      expect(await timeout(db)).toBe(500);
    } finally {
      await db.destroy();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('opens it at a later query once it can (a lock held past the busy timeout, then released)', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'writer-locked-'));
    const file = path.join(dir, 'copilot-service.sqlite');
    // A database in rollback-journal mode, held by another connection's exclusive transaction:
    // switching it to WAL needs a lock that does not come within the busy timeout.
    const locker = new SQLite(file);
    locker.exec('create table t (x integer)');
    locker.exec('begin exclusive');
    const db = new Kysely<unknown>({
      dialect: sqliteWriterDialect(file, ['busy_timeout = 50', 'journal_mode = WAL'], () => false, { inUse: 0, waiting: 0 }),
    });
    try {
      const err = await sql`select count(*) as n from t`.execute(db).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(Error);
      expect(err).toMatchObject({ code: expect.stringMatching(/^SQLITE_BUSY/) });
      locker.exec('commit');
      locker.close();
      expect((await sql<{ n: number }>`select count(*) as n from t`.execute(db)).rows).toEqual([{ n: 0 }]);
      expect((await sql<{ journal_mode: string }>`pragma journal_mode`.execute(db)).rows).toEqual([{ journal_mode: 'wal' }]);
    } finally {
      if (locker.open) locker.close();
      await db.destroy();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
