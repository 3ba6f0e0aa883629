import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { followClockOffset, nowTimestamp, timestampIn } from '../../src/domain/ids.js';
import { followDatabaseClock } from '../../src/jobs/database-clock.js';
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

    it.runIf(dialect === 'postgres')(
      "warns when this machine's clock is seconds from the database server's (clock sweep: instances share leases and timestamps by their own clocks)",
      async () => {
        for (const [skewMs, word] of [
          [3_600_000, 'ahead of'],
          [-90_000, 'behind'],
        ] as const) {
          const now = Date.now;
          vi.spyOn(Date, 'now').mockImplementation(() => now() + skewMs);
          try {
            const advice = await databaseAdvice(storage);
            const said = advice.find((line) => line.includes('clock'));
            expect(said, String(advice)).toContain(`${Math.round(Math.abs(skewMs) / 1000)} s ${word}`);
            expect(said).toContain('NTP');
          } finally {
            vi.restoreAllMocks();
          }
        }
        expect((await databaseAdvice(storage)).some((line) => line.includes('clock'))).toBe(false);
      },
    );

    it.runIf(dialect === 'postgres')(
      "takes the server's clock as the service's: an instance whose machine runs an hour fast writes the server's time (clock sweep: it took over leases still held)",
      async () => {
        const now = Date.now;
        vi.spyOn(Date, 'now').mockImplementation(() => now() + 3_600_000);
        try {
          const offset = await followDatabaseClock(storage);
          expect(Math.abs(offset! + 3_600_000)).toBeLessThan(1000);
          const written = Date.parse(nowTimestamp());
          expect(Math.abs(written - now())).toBeLessThan(1000);
          expect(Math.abs(Date.parse(timestampIn(60_000)) - (now() + 60_000))).toBeLessThan(1000);
        } finally {
          vi.restoreAllMocks();
          followClockOffset(0);
        }
      },
    );
  });
}
