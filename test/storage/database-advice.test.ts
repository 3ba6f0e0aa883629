import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databaseAdvice, openStorage, type Storage } from '../../src/storage/database.js';
import { createTestDatabase, DIALECTS, type TestDatabase } from '../support/databases.js';

for (const dialect of DIALECTS) {
  describe(`databaseAdvice (${dialect})`, () => {
    let database: TestDatabase;
    let storage: Storage;
    beforeAll(async () => {
      database = await createTestDatabase(dialect);
      storage = openStorage({ dataDir: database.dataDir, databaseUrl: database.databaseUrl });
    });
    afterAll(async () => {
      await storage.close();
      await database.drop();
    });

    it('warns exactly when PostgreSQL runs without autovacuum (stale statistics make the list read whole tables)', async () => {
      const advice = await databaseAdvice(storage);
      if (dialect === 'sqlite') {
        expect(advice).toEqual([]);
        return;
      }
      const { rows } = await sql<{ autovacuum: string }>`show autovacuum`.execute(storage.db);
      const off = rows[0]!.autovacuum === 'off';
      expect(advice.some((line) => line.includes('autovacuum off'))).toBe(off);
      expect(advice).toHaveLength(off ? 1 : 0);
    });
  });
}
