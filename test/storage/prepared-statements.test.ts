import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { changeCountersReader } from '../../src/domain/change-counters.js';
import { createCopilot } from '../../src/domain/copilots/copilot.service.js';
import { createApiKey, readKeys } from '../../src/domain/auth/api-keys.js';
import { openStorage, type Storage } from '../../src/storage/database.js';
import { migrateToLatest } from '../../src/storage/migrate.js';
import { createTestDatabase, DIALECTS, type TestDatabase } from '../support/databases.js';

// On PostgreSQL the queries every request runs (compiled-query.ts) are named prepared
// statements: parsed and planned once per connection. Everything else runs unnamed.
describe.runIf(DIALECTS.includes('postgres'))('named prepared statements (postgres)', () => {
  let database: TestDatabase;
  let storage: Storage;
  beforeAll(async () => {
    database = await createTestDatabase('postgres');
    // One connection: the statements prepared by one query are visible to the next.
    storage = openStorage({ databaseUrl: database.databaseUrl, dataDir: database.dataDir, poolSize: 1 });
    await migrateToLatest(storage);
  });
  afterAll(async () => {
    await storage.close();
    await database.drop();
  });

  const prepared = async () =>
    (await sql<{ name: string }>`select name from pg_prepared_statements order by name`.execute(storage.db)).rows.map((r) => r.name);

  it('prepares the change-counters read once and reuses it; ad-hoc queries stay unnamed', async () => {
    expect(await prepared()).toEqual([]);
    const read = changeCountersReader(storage);
    const first = await read();
    expect(await prepared()).toEqual(['cms_change-counters']);
    await createCopilot(storage, { name: 'changes the counter' });
    const second = await read();
    expect(second.copilots).not.toBe(first.copilots); // the prepared statement reads fresh data
    expect(await prepared()).toEqual(['cms_change-counters']);
  });

  it('keep working after a migration (another instance) adds a column to the tables they read', async () => {
    const key = await createApiKey(storage, { scopes: ['admin'] });
    const lookup = readKeys(storage);
    expect((await lookup(key.id))?.principal.keyId).toBe(key.id);
    expect(await prepared()).toContain('cms_find-api-key');
    await sql`alter table api_keys add column note text`.execute(storage.db);
    await sql`alter table change_counters add column note text`.execute(storage.db);
    expect((await lookup(key.id))?.principal.keyId).toBe(key.id);
    expect((await changeCountersReader(storage)()).apiKeys).toBeGreaterThan(0);
  });

  it('recover when a migration changes the type of a column they return (the statement runs again, unnamed)', async () => {
    const read = changeCountersReader(storage);
    await read();
    expect(await prepared()).toContain('cms_change-counters');
    await sql`alter table change_counters alter column name type varchar(100)`.execute(storage.db);
    for (let i = 0; i < 3; i++) expect((await read()).copilots).not.toBeNull();
    expect(await prepared()).toContain('cms_change-counters'); // prepared again on a fresh connection
  });

  it('are not used when turned off (DATABASE_PREPARED_STATEMENTS=false, for a pooler in transaction mode)', async () => {
    const unnamed = openStorage({ databaseUrl: database.databaseUrl, dataDir: database.dataDir, poolSize: 1, preparedStatements: false });
    try {
      await changeCountersReader(unnamed)();
      expect(await readKeys(unnamed)('nosuchkey0000000')).toBeUndefined();
      const rows = (await sql<{ name: string }>`select name from pg_prepared_statements`.execute(unnamed.db)).rows;
      expect(rows).toEqual([]);
    } finally {
      await unnamed.close();
    }
  });
});
