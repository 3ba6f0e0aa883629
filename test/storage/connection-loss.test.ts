/**
 * A PostgreSQL connection that dies while a transaction holds it between two statements (a
 * failover, a restart, `idle_session_timeout`, `pg_terminate_backend`): the client emits
 * 'error', and pg-pool listens for it only while the client is idle in the pool. With no
 * listener the event crashed the process (ops sweep: every busy instance exited 1 at once).
 * Now the transaction fails as the database being unavailable (503), and the pool serves the
 * next request on a new connection.
 */
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { isDatabaseUnavailable } from '../../src/http/errors.js';
import type { Storage } from '../../src/storage/database.js';
import { createTestStorage, DIALECTS } from '../support/databases.js';

const pid = async (db: Storage['db']) => Number((await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(db)).rows[0]!.pid);

describe.runIf(DIALECTS.includes('postgres'))('a PostgreSQL connection lost in the middle of a transaction', () => {
  let opened: { storage: Storage; cleanup(): Promise<void> } | null = null;
  afterEach(async () => {
    await opened?.cleanup();
    opened = null;
  });

  it('fails that transaction as unavailable, crashes nothing, and the next statement gets a new connection', async () => {
    opened = await createTestStorage('postgres');
    const { storage } = opened;
    let failure: unknown = null;
    await storage.db
      .transaction()
      .execute(async (trx) => {
        const own = await pid(trx);
        // Another connection ends this one, as a failover or the server's own timeout would.
        await sql`select pg_terminate_backend(${own})`.execute(storage.readDb);
        // The client learns of it between statements: its 'error' event.
        await new Promise((resolve) => setTimeout(resolve, 300));
        await sql`select 1`.execute(trx);
      })
      .catch((err: unknown) => {
        failure = err;
      });
    expect(failure).not.toBeNull();
    expect(isDatabaseUnavailable(failure)).toBe(true);
    expect(Number((await sql<{ one: number }>`select 1 as one`.execute(storage.db)).rows[0]!.one)).toBe(1);
  });
});
