import { Migrator, sql, type Kysely, type MigrationResultSet } from 'kysely';
import type { Storage } from './database.js';
import { initial } from './migrations/001-initial.js';
import { knowledgeBase } from './migrations/002-knowledge-base.js';
import { changeCounters } from './migrations/003-change-counters.js';
import { changeTokens } from './migrations/004-change-tokens.js';
import { fairQueue } from './migrations/005-fair-queue.js';
import { canonicalLinks } from './migrations/006-canonical-links.js';
import { unicodeSearch } from './migrations/007-unicode-search.js';
import { plainReadPath } from './migrations/008-plain-read-path.js';
import { stagedPassages } from './migrations/009-staged-passages.js';
import { apiDescriptionVersions } from './migrations/010-api-description-versions.js';
import { linkRefresh } from './migrations/011-link-refresh.js';
import { crawls } from './migrations/012-crawls.js';
import { originalFileNames } from './migrations/013-original-file-names.js';
import { knowledgeBaseTotals } from './migrations/014-knowledge-base-totals.js';
import { crawlCounts } from './migrations/015-crawl-counts.js';
import { searchLookupIndex } from './migrations/016-search-lookup-index.js';
import { searchTermsPerBot } from './migrations/017-search-terms-per-bot.js';
import { runningJobs } from './migrations/018-running-jobs.js';
import { searchIndex } from './migrations/019-search-index.js';
import { postingsBlocks } from './migrations/020-postings-blocks.js';
import { truncatedPages } from './migrations/021-truncated-pages.js';
import { olderData } from './migrations/022-older-data.js';
import { formatCharacters } from './migrations/023-format-characters.js';
import { filterIndexes } from './migrations/024-filter-indexes.js';

// Arbitrary constant naming the advisory lock that serialises migrations across instances.
const MIGRATION_LOCK_KEY = 7_420_331_118;

/**
 * The migrations in order (migrateToLatest runs them; tests migrate to one of them).
 * `schema`: where Kysely's own tables are on PostgreSQL (the connection's current schema);
 * without it Kysely takes another schema's (another application's) for the service's.
 */
export function migrator(db: Kysely<any>, storage: Storage, schema?: string): Migrator {
  const migrations = {
    '001-initial': initial(storage.dialect),
    '002-knowledge-base': knowledgeBase(storage.dialect),
    '003-change-counters': changeCounters(storage.dialect),
    '004-change-tokens': changeTokens(storage.dialect),
    '005-fair-queue': fairQueue(),
    '006-canonical-links': canonicalLinks(),
    '007-unicode-search': unicodeSearch(storage.dialect),
    '008-plain-read-path': plainReadPath(storage.dialect),
    '009-staged-passages': stagedPassages(),
    '010-api-description-versions': apiDescriptionVersions(storage.dialect),
    '011-link-refresh': linkRefresh(),
    '012-crawls': crawls(),
    '013-original-file-names': originalFileNames(),
    '014-knowledge-base-totals': knowledgeBaseTotals(storage.dialect),
    '015-crawl-counts': crawlCounts(storage.dialect),
    '016-search-lookup-index': searchLookupIndex(storage.dialect),
    '017-search-terms-per-bot': searchTermsPerBot(storage.dialect),
    '018-running-jobs': runningJobs(),
    '019-search-index': searchIndex(storage.dialect),
    '020-postings-blocks': postingsBlocks(storage.dialect),
    '021-truncated-pages': truncatedPages(),
    '022-older-data': olderData(),
    '023-format-characters': formatCharacters(),
    '024-filter-indexes': filterIndexes(),
  };
  return new Migrator({ db, provider: { getMigrations: async () => migrations }, ...(schema !== undefined && { migrationTableSchema: schema }) });
}

function check(result: MigrationResultSet): string[] {
  if (result.error) {
    // Kysely's words when the database holds a migration this code does not have: a newer
    // version of the service migrated it. Migrations only go forward (docs/deployment.md).
    const unknown = /previously executed migration (\S+) is missing/.exec((result.error as Error).message ?? '')?.[1];
    if (unknown)
      throw new Error(
        `The database's schema is newer than this version of the service: it holds migration ${unknown}, which this version does not know. Run the version that migrated it, or restore the backup taken before that upgrade.`,
      );
    const failed = result.results?.find((r) => r.status === 'Error')?.migrationName;
    // No migration named: it failed before one ran (reading what was applied, say).
    throw new Error(`${failed === undefined ? 'Migrating the database' : `Migration ${failed}`} failed: ${(result.error as Error).message ?? result.error}`);
  }
  return (result.results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

/**
 * Brings the schema to the latest version. Safe when several instances start at
 * once: on PostgreSQL the whole run holds a session-level advisory lock on one
 * connection (the others wait, then find nothing left to do); on SQLite the whole
 * run is one `begin immediate` transaction, which holds the file's write lock.
 */
export async function migrateToLatest(storage: Storage): Promise<string[]> {
  const migrated = storage.dialect === 'postgres' ? migratePostgres(storage) : migrateSqlite(storage);
  return migrated.catch(namingTheDatabase(storage));
}

/** Every failure names the database: the service's start and the CLI's commands say it alike. */
const namingTheDatabase =
  (storage: Storage) =>
  (err: unknown): never => {
    throw new Error(`${storage.name}: ${(err as Error | null)?.message ?? String(err)}`, { cause: err });
  };

/** Whether the database holds this service's schema (a migration applied); one that cannot be read throws, naming it. */
export async function hasSchema(storage: Storage): Promise<boolean> {
  try {
    return (await sql<{ n: number }>`select count(*) as n from kysely_migration`.execute(storage.db)).rows.some((r) => Number(r.n) > 0);
  } catch (err) {
    // No such table: PostgreSQL's 42P01, SQLite's "no such table".
    const { code, message } = err as { code?: unknown; message?: unknown };
    if (code === '42P01' || (typeof message === 'string' && message.startsWith('no such table'))) return false;
    return namingTheDatabase(storage)(err);
  }
}

/** A PostgreSQL database the service cannot use as it is, said before anything is written; returns its current schema. */
async function checkPostgres(connection: Kysely<any>): Promise<string | undefined> {
  const { rows } = await sql<{ encoding: string; read_only: string; schema: string | null }>`
    select current_setting('server_encoding') as encoding, current_setting('transaction_read_only') as read_only, current_schema() as schema`.execute(
    connection,
  );
  const { encoding, read_only: readOnly, schema } = rows[0]!;
  if (readOnly === 'on') {
    throw new Error(
      'The database is read-only (a standby, or default_transaction_read_only = on): the service writes to it; point DATABASE_URL at the primary.',
    );
  }
  // SQL_ASCII stores the bytes it is given, so UTF-8 text comes back as it went in.
  if (encoding !== 'UTF8' && encoding !== 'SQL_ASCII') {
    throw new Error(
      `The database's encoding is ${encoding}: the service stores text as UTF-8 (names, pages and searches in any script); create one with createdb -E UTF8 -T template0 NAME.`,
    );
  }
  return schema ?? undefined;
}

async function migratePostgres(storage: Storage): Promise<string[]> {
  return storage.db.connection().execute(async (connection) => {
    const schema = await checkPostgres(connection);
    // Another instance's run (minutes, when a migration re-indexes) is waited for whole: the
    // pool's lock_timeout (LOCK_TIMEOUT_MS) is for requests, not for this wait. Put back as the
    // pool set it after (a reset would go to the database's default, not the pool's).
    const { rows } = await sql<{ value: string }>`select current_setting('lock_timeout') as value`.execute(connection);
    await sql`set lock_timeout = 0`.execute(connection);
    try {
      await sql`select pg_advisory_lock(${MIGRATION_LOCK_KEY})`.execute(connection);
      try {
        return check(await migrator(connection, storage, schema).migrateToLatest());
      } finally {
        await sql`select pg_advisory_unlock(${MIGRATION_LOCK_KEY})`.execute(connection);
      }
    } finally {
      await sql`select set_config('lock_timeout', ${rows[0]!.value}, false)`.execute(connection);
    }
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Kysely runs SQLite migrations without a transaction or lock, so two instances on one
 * file would both see "nothing applied" and the second would fail on `create table`.
 * We take the write lock first. The busy timeout is switched off while waiting for it:
 * better-sqlite3 waits synchronously, which would also stall another connection of this
 * same process that holds the lock; we wait with timers instead.
 */
async function migrateSqlite(storage: Storage): Promise<string[]> {
  return storage.db.connection().execute(async (connection) => {
    const [previous] = (await sql<{ timeout: number }>`pragma busy_timeout`.execute(connection)).rows;
    await sql`pragma busy_timeout = 0`.execute(connection);
    try {
      for (let waited = 0; ; waited += 20) {
        try {
          await sql`begin immediate`.execute(connection);
          break;
        } catch (err) {
          const code = (err as { code?: string }).code ?? '';
          if (!code.startsWith('SQLITE_BUSY') || waited > 60_000) throw err;
          await sleep(20);
        }
      }
    } finally {
      await sql.raw(`pragma busy_timeout = ${Number(previous?.timeout ?? 5000)}`).execute(connection);
    }
    try {
      const applied = check(await migrator(connection, storage).migrateToLatest());
      await sql`commit`.execute(connection);
      return applied;
    } catch (err) {
      await sql`rollback`.execute(connection).catch(() => undefined);
      throw err;
    }
  });
}
