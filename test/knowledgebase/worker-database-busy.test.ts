/**
 * The worker's claim meets a database it cannot use right now: SQLite's write lock held by
 * another process past the busy timeout, or PostgreSQL out of reach. That is no fault of the
 * service: a warning, and the loop claims again (docs sweep: "knowledge-base worker error" at
 * error level for SQLITE_BUSY in the claim, while the CLI held the lock).
 */
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { IngestionWorker } from '../../src/jobs/ingestion-worker.js';
import { openStorage, SQLITE_FILE_NAME, type Storage } from '../../src/storage/database.js';
import { createTestStorage, DIALECTS } from '../support/databases.js';
import { waitUntil } from '../support/knowledge-base.js';

interface Entry {
  level: 'info' | 'warn' | 'error';
  msg: string;
}

for (const dialect of DIALECTS) {
  describe(`the ingestion worker when the database is busy or out of reach (${dialect})`, () => {
    const closing: Array<() => Promise<void> | void> = [];
    afterEach(async () => {
      for (const close of closing.splice(0).reverse()) await close();
    });

    it('warns that it waits, never logs an error, and claims again', async () => {
      let storage: Storage;
      if (dialect === 'sqlite') {
        const made = await createTestStorage('sqlite');
        closing.push(made.cleanup);
        storage = made.storage;
        // Another process's write transaction (the CLI, say), held past the 5 s busy timeout.
        const other = new SQLite(path.join(made.database.dataDir, SQLITE_FILE_NAME));
        other.exec('begin exclusive');
        closing.push(() => {
          other.exec('rollback');
          other.close();
        });
      } else {
        // Port 1 on loopback: nothing listens there.
        storage = openStorage({ databaseUrl: 'postgres://postgres@127.0.0.1:1/nowhere', dataDir: '/nonexistent', poolSize: 1, connectTimeoutMs: 300 });
        closing.push(() => storage.close());
      }
      const entries: Entry[] = [];
      const log = (level: Entry['level']) => (_fields: unknown, msg: string) => void entries.push({ level, msg });
      const worker = new IngestionWorker(storage, {
        concurrency: 1,
        pollIntervalMs: 20,
        fetchPolicy: { timeoutMs: 1000, maxBytes: 1024, maxRedirects: 0, allowNetworks: [] },
        taskThreads: {} as never, // no job is ever claimed
        logger: { info: log('info'), warn: log('warn'), error: log('error') } as never,
      });
      worker.start();
      try {
        await waitUntil(async () => (entries.length >= 2 ? true : null), 'two claims that failed', { timeoutMs: 30_000 });
      } finally {
        await worker.stop();
      }
      expect(entries.filter((e) => e.level === 'error')).toEqual([]);
      expect(entries.slice(0, 2)).toEqual([
        { level: 'warn', msg: 'knowledge-base worker waits: the database is out of reach or busy' },
        { level: 'warn', msg: 'knowledge-base worker waits: the database is out of reach or busy' },
      ]);
    }, 60_000);
  });
}
