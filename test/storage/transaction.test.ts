/**
 * inTransaction runs a transaction PostgreSQL ended for a conflict (a deadlock, 40P01; a
 * serialization failure, 40001) again, a few times, rather than failing the request or job that
 * lost; any other failure is thrown at once, and a transaction inside another is the outer one's.
 */
import pg from 'pg';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Storage } from '../../src/storage/database.js';
import { inTransaction } from '../../src/storage/transaction.js';
import { isDatabaseUnavailable } from '../../src/storage/unavailable.js';
import { createTestStorage, DIALECTS } from '../support/databases.js';

const conflict = (code: string) => Object.assign(new Error(`simulated ${code}`), { code });

for (const dialect of DIALECTS) {
  describe(`inTransaction (${dialect})`, () => {
    let storage: Storage;
    let databaseUrl: string | null;
    let cleanup: () => Promise<void>;
    beforeAll(async () => {
      let database: { databaseUrl: string | null };
      ({ storage, database, cleanup } = await createTestStorage(dialect));
      databaseUrl = database.databaseUrl;
      await sql`create table tx_rows (id integer primary key, n integer not null)`.execute(storage.db);
      await sql`insert into tx_rows (id, n) values (1, 0), (2, 0)`.execute(storage.db);
    });
    afterAll(async () => cleanup?.());

    it('runs a transaction ended by a deadlock or a serialization conflict again, three runs at most; then the database is busy (503)', async () => {
      for (const code of ['40P01', '40001']) {
        let runs = 0;
        const value = await inTransaction(storage.db, async (trx) => {
          runs++;
          await sql`update tx_rows set n = n + 1 where id = 1`.execute(trx);
          if (runs < 3) throw conflict(code);
          return 'done';
        });
        expect(value).toBe('done');
        expect(runs).toBe(3);

        runs = 0;
        const failed = await inTransaction(storage.db, async () => {
          runs++;
          throw conflict(code);
        }).catch((err: unknown) => err);
        expect(runs).toBe(3);
        expect(failed).toMatchObject({ code });
        expect(isDatabaseUnavailable(failed)).toBe(true);
      }
      // Only the runs that committed count: two updates, one a code.
      const { rows } = await sql<{ n: number }>`select n from tx_rows where id = 1`.execute(storage.db);
      expect(Number(rows[0]!.n)).toBe(2);
    });

    it('throws any other failure at once, and leaves a transaction inside another to the outer one', async () => {
      let runs = 0;
      const other = await inTransaction(storage.db, async () => {
        runs++;
        throw Object.assign(new Error('unique violation'), { code: '23505' });
      }).catch((err: unknown) => err);
      expect(runs).toBe(1);
      expect(other).toMatchObject({ code: '23505' });

      let inner = 0;
      let outer = 0;
      await inTransaction(storage.db, async (trx) => {
        outer++;
        await inTransaction(trx, async () => {
          inner++;
          if (outer === 1) throw conflict('40P01');
        });
      });
      expect([outer, inner]).toEqual([2, 2]);
    });

    it.runIf(dialect === 'postgres')(
      'a real deadlock with another session: the transaction PostgreSQL ends runs again once the other has gone on',
      async () => {
        const other = new pg.Client({ connectionString: databaseUrl! });
        await other.connect();
        try {
          await other.query('begin');
          await other.query('select id from tx_rows where id = 2 for update');
          let runs = 0;
          let lockedFirst!: () => void;
          const first = new Promise<void>((resolve) => (lockedFirst = resolve));
          const working = inTransaction(storage.db, async (trx) => {
            runs++;
            await sql`select id from tx_rows where id = 1 for update`.execute(trx);
            lockedFirst();
            // Waits for the other session's row 2.
            await sql`update tx_rows set n = n + 10 where id = 2`.execute(trx);
            return runs;
          });
          await first;
          // This transaction waits first, so its deadlock check runs first and it is the one ended.
          await new Promise((resolve) => setTimeout(resolve, 300));
          const crossing = other.query('update tx_rows set n = n where id = 1').catch((err: { code?: string }) => err.code);
          expect(await crossing).toMatchObject({ rowCount: 1 });
          await other.query('commit');
          expect(await working).toBe(2);
        } finally {
          await other.end();
        }
        const { rows } = await sql<{ n: number }>`select n from tx_rows where id = 2`.execute(storage.db);
        expect(Number(rows[0]!.n)).toBe(10);
      },
    );
  });
}
