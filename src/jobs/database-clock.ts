import type { FastifyBaseLogger } from 'fastify';
import { followClockOffset } from '../domain/ids.js';
import { databaseClockOffset, type Storage } from '../storage/database.js';
import { everyInterval, jobFailed } from './rounds.js';

/** How often the database server's clock is read again. */
const CLOCK_READ_MS = 60_000;

/**
 * Takes the database server's clock as the service's (domain/ids.ts): every instance on one
 * PostgreSQL database then times leases, due work and retention, and writes its timestamps, by
 * that one clock, so an instance whose machine's clock runs fast no longer takes over work
 * another still holds (clock sweep). Returns the offset followed (null on SQLite).
 */
export async function followDatabaseClock(storage: Pick<Storage, 'dialect' | 'db'>): Promise<number | null> {
  const offsetMs = await databaseClockOffset(storage);
  if (offsetMs !== null) followClockOffset(offsetMs);
  return offsetMs;
}

/** Reads the database server's clock again every minute (a clock stepped on either side is followed). */
export function startDatabaseClock(storage: Storage, options: { logger: Pick<FastifyBaseLogger, 'error' | 'warn'> }): { stop(): Promise<void> } {
  return everyInterval(
    CLOCK_READ_MS,
    async () => {
      await followDatabaseClock(storage);
    },
    (err) => jobFailed(options.logger, err, {}, "Reading the database server's clock failed"),
  );
}
