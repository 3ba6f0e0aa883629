/**
 * A scan's time limit (storage.scan, SEARCH_TIMEOUT_MS). The turns bound how many scans a
 * tenant runs and has waiting, but not how long one runs: a search of a huge knowledge base held
 * its connection for as long as its statement took (seconds), so two tenants' such searches held
 * both scan connections and every other tenant's search waited for them. Past the limit a scan
 * is now answered ScanTimedOut and its connection serves the next scan at once: PostgreSQL stops
 * the statement (`statement_timeout`); SQLite cannot stop it from outside its thread, so the thread
 * is set aside to finish alone while the slot opens another, and the tenant's next scan waits for
 * the set-aside one to end.
 */
import { type Kysely, sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import type { Storage } from '../../src/storage/database.js';
import { ScanTimedOut } from '../../src/storage/scans.js';
import type { Database } from '../../src/storage/schema.js';
import { createTestStorage, DIALECTS } from '../support/databases.js';
import { waitUntil } from '../support/knowledge-base.js';

const LIMIT_MS = 200;
const MARK = 'scan-time-limit-test';

/** A statement that runs for seconds: a long recursive count (SQLite), a sleep (PostgreSQL). */
function slowStatement(db: Kysely<Database>, dialect: string) {
  return dialect === 'postgres'
    ? sql`select pg_sleep(20) /* ${sql.raw(MARK)} */`.execute(db)
    : sql`with recursive c(x) as (select 1 union all select x + 1 from c where x < 10000000) select count(*) as n from c`.execute(db);
}

const quick = (db: Kysely<Database>) => sql<{ one: number }>`select 1 as one`.execute(db).then((r) => Number(r.rows[0]!.one));

for (const dialect of DIALECTS) {
  describe(`a scan's time limit (${dialect})`, () => {
    let opened: { storage: Storage; cleanup(): Promise<void> } | null = null;
    afterEach(async () => {
      await opened?.cleanup();
      opened = null;
    });

    it('stops scans at the limit with ScanTimedOut and serves the next tenant at once on the connections they held', async () => {
      opened = await createTestStorage(dialect, { scanTimeLimitMs: LIMIT_MS });
      const { storage } = opened;
      await quick(storage.readDb); // migrations done, files open
      const order: string[] = [];
      const outcome = (name: string) => [
        () => order.push(`${name} answered`),
        (err: unknown) => order.push(err instanceof ScanTimedOut && err.limitMs === LIMIT_MS ? `${name} timed out` : `${name} failed: ${String(err)}`),
      ];
      // Two tenants' slow scans hold both connections.
      const a1 = storage.scan('a', (db) => slowStatement(db, dialect)).then(...outcome('a1'));
      const b1 = storage.scan('b', (db) => slowStatement(db, dialect)).then(...outcome('b1'));
      await Promise.all([a1, b1]);
      expect(order).toEqual(expect.arrayContaining(['a1 timed out', 'b1 timed out']));
      // Tenant a's next scan, and another tenant's.
      const a2 = storage.scan('a', quick).then(...outcome('a2'));
      const c = storage.scan('c', quick).then(...outcome('c'));
      await Promise.all([a2, c]);
      expect(order).toContain('c answered');
      expect(order).toContain('a2 answered');
      if (dialect === 'sqlite') {
        // a's statement still ran on its set-aside thread: a waited for it, c did not.
        expect(order.slice(2)).toEqual(['c answered', 'a2 answered']);
      } else {
        // The server stopped both statements (each would sleep 20 s), at its own time limit,
        // which the scan's (the same) may pass a moment before.
        const running = async () =>
          (
            await sql<{
              n: number;
            }>`select count(*)::int as n from pg_stat_activity where state = 'active' and query like ${`%/* ${MARK} */%`} and pid <> pg_backend_pid()`.execute(
              storage.db,
            )
          ).rows[0]!.n;
        await waitUntil(async () => (await running()) === 0, 'the server to stop both statements', { timeoutMs: 5000 });
      }
      expect(storage.scans()).toEqual({ running: 0, waiting: 0, refused: 0, timedOut: 2 });
    }, 60_000);

    it('bounds the whole scan, not each statement: short statements with work between them (scoring on a task thread) past the limit are ScanTimedOut, and no further statement runs (PostgreSQL bounded each statement only: a search ran for several times its limit)', async () => {
      opened = await createTestStorage(dialect, { scanTimeLimitMs: LIMIT_MS });
      const { storage } = opened;
      await quick(storage.readDb);
      let statements = 0;
      const steps = async (db: Kysely<Database>) => {
        for (let i = 0; i < 10; i++) {
          await quick(db);
          statements++;
          await new Promise((resolve) => setTimeout(resolve, LIMIT_MS / 4));
        }
        return 'finished';
      };
      const outcome = await storage.scan('a', steps).catch((err: unknown) => err);
      expect(outcome).toBeInstanceOf(ScanTimedOut);
      const atLimit = statements;
      expect(atLimit).toBeLessThan(10);
      await new Promise((resolve) => setTimeout(resolve, LIMIT_MS * 3));
      expect(statements).toBeLessThanOrEqual(atLimit + 1);
      expect(storage.scans()).toMatchObject({ running: 0, timedOut: 1 });
      // The tenant's turn is free again, and another's scan answers.
      await expect(storage.scan('a', quick)).resolves.toBe(1);
      await expect(storage.scan('b', quick)).resolves.toBe(1);
    }, 30_000);

    it("does not count the opening of a scan's connection (a new thread on SQLite) against its time", async () => {
      // Opening a SQLite scan thread takes tens of milliseconds; a trivial statement on it, about one:
      // the limit is between, far from the statement's time.
      opened = await createTestStorage(dialect, { scanTimeLimitMs: 40 });
      await quick(opened.storage.readDb); // migrations done, the scan connections not yet opened
      await expect(opened.storage.scan('a', quick)).resolves.toBe(1);
      expect(opened.storage.scans().timedOut).toBe(0);
    });

    it('answers a scan within the limit as before', async () => {
      opened = await createTestStorage(dialect, { scanTimeLimitMs: 10_000 });
      await expect(opened.storage.scan('a', quick)).resolves.toBe(1);
      expect(opened.storage.scans().timedOut).toBe(0);
    });
  });
}
