import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStorage, type Storage } from '../../src/storage/database.js';
import { migrateToLatest } from '../../src/storage/migrate.js';
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
  });
}
