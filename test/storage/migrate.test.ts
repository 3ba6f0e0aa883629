import { execFile } from 'node:child_process';
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { openStorage, type DialectName, type Storage } from '../../src/storage/database.js';
import { migrateToLatest } from '../../src/storage/migrate.js';
import { buildCli } from '../support/build.js';
import { createTestDatabase, DIALECTS, type TestDatabase } from '../support/databases.js';

const ALL_MIGRATIONS = [
  '001-initial',
  '002-knowledge-base',
  '003-change-counters',
  '004-change-tokens',
  '005-fair-queue',
  '006-canonical-links',
  '007-unicode-search',
  '008-plain-read-path',
  '009-staged-passages',
  '010-api-description-versions',
  '011-link-refresh',
  '012-crawls',
  '013-original-file-names',
  '014-knowledge-base-totals',
  '015-crawl-counts',
  '016-search-lookup-index',
  '017-search-terms-per-bot',
  '018-running-jobs',
  '019-search-index',
  '020-postings-blocks',
  '021-truncated-pages',
  '022-older-data',
  '023-format-characters',
  '024-filter-indexes',
];
const TABLES = ['copilots', 'api_keys', 'swagger_documents', 'knowledge_bases', 'kb_links', 'kb_passages', 'audit_log'];

async function tableNames(storage: Storage): Promise<string[]> {
  const tables = await storage.db.introspection.getTables({ withInternalKyselyTables: true });
  return tables.map((t) => t.name);
}

async function appliedMigrations(storage: Storage): Promise<string[]> {
  const rows = await (storage.db as any).selectFrom('kysely_migration').select('name').orderBy('name').execute();
  return rows.map((r: { name: string }) => r.name);
}

for (const dialect of DIALECTS) {
  describe(`migrations (${dialect})`, () => {
    const cleanups: Array<() => Promise<void>> = [];
    afterEach(async () => {
      for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
    });

    async function freshDatabase(): Promise<TestDatabase> {
      const database = await createTestDatabase(dialect as DialectName);
      cleanups.push(() => database.drop());
      return database;
    }

    function open(database: TestDatabase): Storage {
      const storage = openStorage({ databaseUrl: database.databaseUrl, dataDir: database.dataDir, poolSize: 2 });
      cleanups.push(() => storage.close());
      return storage;
    }

    it('applies every migration once; a second run is a no-op', async () => {
      const storage = open(await freshDatabase());
      expect(await migrateToLatest(storage)).toEqual(ALL_MIGRATIONS);
      expect(await migrateToLatest(storage)).toEqual([]);
      expect(await appliedMigrations(storage)).toEqual(ALL_MIGRATIONS);
      expect(await tableNames(storage)).toEqual(expect.arrayContaining(TABLES));
      // Migration 008 leaves no change tokens behind (requests read their tables directly).
      expect(await tableNames(storage)).not.toContain('change_counters');
    });

    it('two instances migrating one fresh database at the same time both succeed', async () => {
      const database = await freshDatabase();
      const a = open(database);
      const b = open(database);
      const [appliedByA, appliedByB] = await Promise.all([migrateToLatest(a), migrateToLatest(b)]);
      // Every migration ran exactly once, by one of the two.
      expect([...appliedByA, ...appliedByB].sort()).toEqual(ALL_MIGRATIONS);
      for (const storage of [a, b]) {
        expect(await tableNames(storage)).toEqual(expect.arrayContaining(TABLES));
        expect(await appliedMigrations(storage)).toEqual(ALL_MIGRATIONS);
        expect(await migrateToLatest(storage)).toEqual([]);
      }
      // The schema works from both instances.
      await a.db
        .insertInto('api_keys')
        .values({ id: 'k1', name: '', secret_hash: 'x', scopes: '[]', bots: null, created_at: 'now', revoked_at: null })
        .execute();
      expect(await b.db.selectFrom('api_keys').select('id').execute()).toEqual([{ id: 'k1' }]);
    });

    it.runIf(dialect === 'postgres')("waits for another instance's run longer than the lock timeout its requests have", async () => {
      const database = await freshDatabase();
      const holder = openStorage({ databaseUrl: database.databaseUrl, dataDir: database.dataDir, poolSize: 1 });
      cleanups.push(() => holder.close());
      const waiting = openStorage({ databaseUrl: database.databaseUrl, dataDir: database.dataDir, poolSize: 1, lockTimeoutMs: 100 });
      cleanups.push(() => waiting.close());
      // Another instance's run, held past the lock timeout (a re-indexing migration takes minutes).
      const applied = await holder.db.connection().execute(async (c) => {
        await sql`select pg_advisory_lock(${7_420_331_118})`.execute(c);
        const run = migrateToLatest(waiting);
        await new Promise((resolve) => setTimeout(resolve, 600));
        await sql`select pg_advisory_unlock(${7_420_331_118})`.execute(c);
        return run;
      });
      expect(applied).toEqual(ALL_MIGRATIONS);
      // The connection keeps the requests' lock timeout afterwards.
      expect((await sql<{ lock_timeout: string }>`show lock_timeout`.execute(waiting.db)).rows[0]!.lock_timeout).toBe('100ms');
    });

    it('two processes running `copilot-service migrate` at once on one fresh database both succeed', async () => {
      const cli = await buildCli();
      const database = await freshDatabase();
      const migrate = () =>
        new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
          const env = { PATH: process.env.PATH ?? '', DATA_DIR: database.dataDir, ...(database.databaseUrl && { DATABASE_URL: database.databaseUrl }) };
          execFile(process.execPath, [cli, 'migrate'], { env, cwd: database.dataDir }, (err, stdout, stderr) =>
            resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
          );
        });
      const runs = await Promise.all([migrate(), migrate()]);
      for (const run of runs) expect(run.code, run.stderr).toBe(0);
      const outputs = runs.map((r) => r.stdout.trim()).sort();
      // One applied everything (or both found their share), never the same migration twice.
      const applied = outputs.flatMap((o) => (o.startsWith('Applied: ') ? o.slice('Applied: '.length).split(', ') : []));
      expect(applied.sort()).toEqual(ALL_MIGRATIONS);
      const storage = open(database);
      expect(await appliedMigrations(storage)).toEqual(ALL_MIGRATIONS);
      expect(await tableNames(storage)).toEqual(expect.arrayContaining(TABLES));
    });

    it('a third instance starting later finds nothing to do', async () => {
      const database = await freshDatabase();
      const a = open(database);
      await migrateToLatest(a);
      const c = open(database);
      expect(await migrateToLatest(c)).toEqual([]);
    });
  });
}
