import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import type { Worker as WorkerThread } from 'node:worker_threads';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { openStorage, SQLITE_FILE_NAME, type Storage } from '../../src/storage/database.js';
import { migrateToLatest } from '../../src/storage/migrate.js';
import { CHECKPOINT_INTERVAL_MS, startCheckpointer } from '../../src/storage/sqlite-checkpointer.js';

// Every worker thread the checkpointer starts, so that a test can stop one as a crash would.
const workers = vi.hoisted(() => [] as WorkerThread[]);
vi.mock('node:worker_threads', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:worker_threads')>();
  class RecordedWorker extends real.Worker {
    constructor(...args: ConstructorParameters<typeof real.Worker>) {
      super(...args);
      workers.push(this);
    }
  }
  return { ...real, Worker: RecordedWorker };
});

// The service runs SQLite's WAL checkpoints on a worker thread (a large commit would
// otherwise copy the WAL back on the event loop): the writer's automatic checkpoints are
// off, and the worker must keep the WAL bounded in their place.
describe('SQLite background checkpoints', () => {
  const cleanups: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  async function open(backgroundCheckpoints: boolean) {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'cms-ckpt-'));
    cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
    const storage = openStorage({
      databaseUrl: null,
      dataDir,
      ...(backgroundCheckpoints && { backgroundCheckpoints: { onFailure: (err: unknown) => expect.fail(String(err)) } }),
    });
    cleanups.push(() => storage.close());
    await migrateToLatest(storage);
    if (!backgroundCheckpoints) await sql`pragma wal_autocheckpoint = 0`.execute(storage.db);
    const walFile = path.join(dataDir, `${SQLITE_FILE_NAME}-wal`);
    return {
      storage,
      wal: () => statSync(walFile).size,
      // The WAL header's checkpoint sequence number moves each time the WAL restarts after a complete checkpoint.
      walHeader: () => ({ checkpointSequence: readFileSync(walFile).readUInt32BE(12) }),
    };
  }

  /** Writes about 1 MB in one transaction. */
  const writeAMegabyte = (storage: Storage, round: number) =>
    storage.db.transaction().execute(async (trx) => {
      for (let i = 0; i < 4; i++) {
        await trx
          .insertInto('audit_log')
          .values(
            Array.from({ length: 50 }, (_, j) => ({
              at: `r${round}`,
              actor_key_id: null,
              action: 'test',
              bot_id: null,
              details: `${i}-${j}-`.padEnd(5000, 'x'),
            })),
          )
          .execute();
      }
    });

  it('turns the writer’s automatic checkpoints off and checkpoints every WAL frame from the worker', async () => {
    const { storage } = await open(true);
    const [setting] = (await sql<{ wal_autocheckpoint: number }>`pragma wal_autocheckpoint`.execute(storage.db)).rows;
    expect(setting!.wal_autocheckpoint).toBe(0);
    // A small writer cache, so that a large transaction spills while it runs, not all in its commit.
    const [cache] = (await sql<{ cache_size: number }>`pragma cache_size`.execute(storage.db)).rows;
    expect(cache!.cache_size).toBe(-2000);
    await writeAMegabyte(storage, 0);
    const result = await storage.checkpointer!.runNow();
    expect(result.log).toBeGreaterThan(200);
    expect(result.checkpointed).toBe(result.log);
  });

  it('keeps the WAL bounded by the worker’s checkpoints, where with none it would grow with every write', async () => {
    const withWorker = await open(true);
    const without = await open(false);
    for (let round = 0; round < 8; round++) {
      await writeAMegabyte(withWorker.storage, round);
      await writeAMegabyte(without.storage, round);
      await withWorker.storage.checkpointer!.runNow(); // as its timer would, every 250 ms
    }
    expect(without.wal()).toBeGreaterThan(7_000_000);
    expect(withWorker.wal()).toBeLessThan(3_000_000);
    const count = await withWorker.storage.db
      .selectFrom('audit_log')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    expect(Number(count.n)).toBe(8 * 200);
  });

  it('checkpoints on its own timer: the WAL restarts from its beginning with no checkpoint asked for', async () => {
    const { storage, walHeader } = await open(true);
    await writeAMegabyte(storage, 0);
    const before = walHeader().checkpointSequence;
    const deadline = Date.now() + 10 * CHECKPOINT_INTERVAL_MS;
    let after = before;
    while (after === before && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, CHECKPOINT_INTERVAL_MS / 5));
      await storage.db.insertInto('audit_log').values({ at: 'tick', actor_key_id: null, action: 'test', bot_id: null, details: '' }).execute();
      after = walHeader().checkpointSequence;
    }
    expect(after).not.toBe(before);
  });

  it('when the worker dies, reports it and puts the writer back on SQLite’s own checkpoints, which keep the WAL bounded', async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'cms-ckpt-'));
    cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
    const failures: unknown[] = [];
    const storage = openStorage({ databaseUrl: null, dataDir, backgroundCheckpoints: { onFailure: (err) => failures.push(err) } });
    cleanups.push(() => storage.close());
    await migrateToLatest(storage);
    const autocheckpoint = async () => (await sql<{ wal_autocheckpoint: number }>`pragma wal_autocheckpoint`.execute(storage.db)).rows[0]!.wal_autocheckpoint;
    expect(await autocheckpoint()).toBe(0);

    await workers.at(-1)!.terminate();
    await vi.waitFor(() => expect(failures).toHaveLength(1));
    expect(String(failures[0])).toMatch(/exited/);
    expect(await autocheckpoint()).toBe(1000);
    await expect(storage.checkpointer!.runNow()).rejects.toThrow(/exited/);

    // 8 MB in 1 MB transactions: SQLite's own checkpoint (every 1000 pages) restarts the WAL.
    const walFile = path.join(dataDir, `${SQLITE_FILE_NAME}-wal`);
    for (let round = 0; round < 8; round++) await writeAMegabyte(storage, round);
    expect(statSync(walFile).size).toBeLessThan(7_000_000);
  });

  it('answers every request after it stopped, and stops once however often it is asked', async () => {
    const { storage } = await open(true);
    const checkpointer = storage.checkpointer!;
    const stops = [checkpointer.stop(), checkpointer.stop()];
    expect(stops[0]).toBe(stops[1]);
    await Promise.all(stops);
    await expect(checkpointer.runNow()).rejects.toThrow(/stopping|exited/);
  });

  it('reports a worker that cannot run (here: no database file) instead of failing silently', async () => {
    const failure = await new Promise<unknown>((resolve) => {
      const checkpointer = startCheckpointer(path.join(tmpdir(), 'cms-no-such-dir', 'none.sqlite'), resolve);
      cleanups.push(() => checkpointer.stop());
    });
    expect(String(failure)).toMatch(/unable to open|directory does not exist|no such file/i);
  });

  it('is not started for a storage that does not ask for it (CLI commands)', async () => {
    const { storage } = await open(false);
    expect(storage.checkpointer).toBeUndefined();
  });
});
