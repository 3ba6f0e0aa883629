import { chmodSync, closeSync, existsSync, openSync } from 'node:fs';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect, sql } from 'kysely';
import pg from 'pg';
import { DataDirError, describeFsError, prepareDataDir } from './data-dir.js';
import type { Database } from './schema.js';
import { startCheckpointer, type Checkpointer } from './sqlite-checkpointer.js';

export type DialectName = 'sqlite' | 'postgres';

/**
 * The open database. `db` is the connection used for writes (and for reads on
 * PostgreSQL); on SQLite `readDb` is a second connection so that reads are served
 * from the WAL snapshot while a long write transaction is running.
 */
export interface Storage {
  readonly dialect: DialectName;
  readonly db: Kysely<Database>;
  readonly readDb: Kysely<Database>;
  /** SQLite with background checkpoints: the worker running them. */
  readonly checkpointer?: Checkpointer;
  close(): Promise<void>;
}

export interface StorageOptions {
  databaseUrl: string | null;
  dataDir: string;
  /** Pool size for PostgreSQL. */
  poolSize?: number;
  /** PostgreSQL: give up on a connection that has not completed its start-up within this time. */
  connectTimeoutMs?: number;
  /**
   * SQLite: run WAL checkpoints on a worker thread instead of in the committing call
   * (a long-running service wants this; a one-shot CLI command does not).
   */
  backgroundCheckpoints?: { onFailure(error: unknown): void };
}

// PostgreSQL int8 (count(*), bigserial) arrives as a string by default; our counts fit in a double.
pg.types.setTypeParser(20, (value) => Number(value));

export const SQLITE_FILE_NAME = 'copilot-service.sqlite';

/** The database files are readable by their owner only (the directory too: data-dir.ts). */
const PRIVATE_FILE = 0o600;

/**
 * The SQLite file (every copilot token, the documents, the knowledge-base text) readable by
 * this user only: created 0600 before SQLite opens it (SQLite gives its -wal and -shm files
 * the database file's mode), and an existing file, WAL or SHM of an older install tightened.
 */
function makePrivate(file: string): void {
  closeSync(openSync(file, 'a', PRIVATE_FILE));
  for (const each of [file, `${file}-wal`, `${file}-shm`]) {
    if (existsSync(each)) chmodSync(each, PRIVATE_FILE);
  }
}

function openSqlite(file: string, readonly: boolean): SQLite.Database {
  const connection = new SQLite(file, { readonly: false, fileMustExist: readonly });
  connection.pragma('journal_mode = WAL');
  connection.pragma('busy_timeout = 5000');
  connection.pragma('synchronous = NORMAL');
  connection.pragma('foreign_keys = ON');
  if (readonly) connection.pragma('query_only = ON');
  // The writer's commit writes every page its cache still holds dirty to the WAL, on the
  // event loop. With SQLite's own default of 2 MB (better-sqlite3 sets 16 MB), a large
  // transaction spills most of its pages while it runs, between the steps that yield to the
  // event loop (bench/README.md has the measurements).
  else connection.pragma('cache_size = -2000');
  return connection;
}

export function openStorage(options: StorageOptions): Storage {
  if (options.databaseUrl) {
    const pool = new pg.Pool({ connectionString: options.databaseUrl, max: options.poolSize ?? 10, connectionTimeoutMillis: options.connectTimeoutMs ?? 5000 });
    // An idle client losing its connection must not crash the process.
    pool.on('error', () => undefined);
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
    return {
      dialect: 'postgres',
      db,
      readDb: db,
      async close() {
        await db.destroy();
        // Kysely's destroy is a no-op when no query ever ran; the pool must still end,
        // or a later query would quietly open new connections.
        if (!pool.ended) await pool.end();
      },
    };
  }
  prepareDataDir(options.dataDir);
  const file = path.join(options.dataDir, SQLITE_FILE_NAME);
  let writer: SQLite.Database;
  try {
    makePrivate(file);
    writer = openSqlite(file, false);
  } catch (err) {
    throw new DataDirError(options.dataDir, `the database file ${SQLITE_FILE_NAME} cannot be opened for writing (${describeFsError(err)})`);
  }
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: writer }) });
  let reader: Kysely<Database> | null = null;
  let closed = false;
  let checkpointer: Checkpointer | undefined;
  if (options.backgroundCheckpoints) {
    const { onFailure } = options.backgroundCheckpoints;
    try {
      checkpointer = startCheckpointer(file, (error) => {
        // Back to SQLite's own checkpoints, so the WAL stays bounded.
        if (writer.open) writer.pragma('wal_autocheckpoint = 1000');
        onFailure(error);
      });
    } catch (err) {
      writer.close();
      throw err;
    }
    writer.pragma('wal_autocheckpoint = 0');
  }
  const storage: Storage = {
    dialect: 'sqlite',
    db,
    checkpointer,
    // Opened lazily: the file and its schema must exist first (after migrations).
    // Once closed, the destroyed writer is handed out so that queries fail instead of
    // silently opening a new connection.
    get readDb() {
      if (closed) return db;
      reader ??= new Kysely<Database>({ dialect: new SqliteDialect({ database: openSqlite(file, true) }) });
      return reader;
    },
    async close() {
      closed = true;
      await checkpointer?.stop();
      if (reader) await reader.destroy();
      await db.destroy();
      if (writer.open) writer.close(); // destroy() skips a connection no query ever used
    },
  };
  return storage;
}

/** True when the database answers a trivial query. */
export async function isDatabaseReachable(storage: Storage): Promise<boolean> {
  try {
    await sql`select 1`.execute(storage.db);
    return true;
  } catch {
    return false;
  }
}

/**
 * What an operator should change in the database's own settings, one sentence each (logged
 * at start). PostgreSQL's planner chooses plans from table statistics that autovacuum keeps
 * current; with it off, a table that grew since its last ANALYZE is planned as if it were
 * still small, and the copilot list reads the whole table for every page.
 */
export async function databaseAdvice(storage: Storage): Promise<string[]> {
  if (storage.dialect !== 'postgres') return [];
  const { rows } = await sql<{ autovacuum: string }>`show autovacuum`.execute(storage.db);
  return rows[0]?.autovacuum === 'off'
    ? ['PostgreSQL runs with autovacuum off: table statistics go stale and lists can read whole tables; turn it on, or run ANALYZE after large changes']
    : [];
}
