import { chmodSync, closeSync, existsSync, openSync } from 'node:fs';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { type Dialect, Kysely, type KyselyPlugin, PostgresDialect, type PostgresPool, SqliteDialect, type SqliteDatabase, sql } from 'kysely';
import { LRUCache } from 'lru-cache';
import pg from 'pg';
import { DataDirError, describeFsError, prepareDataDir } from './data-dir.js';
import type { Database } from './schema.js';
import { FairScans, SCAN_TIME_LIMIT_MS, ScanTimedOut, withinTimeLimit, type ScanStats } from './scans.js';
import { STATEMENT_CACHE, sqliteWriterDialect } from './sqlite-writer.js';
import { storableText } from './storable-text.js';
import { markConnectFailure } from './unavailable.js';

export type DialectName = 'sqlite' | 'postgres';

/**
 * The open database. `db` is the connection used for writes (and for reads on
 * PostgreSQL); on SQLite it runs on a thread of its own (sqlite-writer.ts), and `readDb`
 * is a second connection on the main thread, served from the WAL snapshot while a long
 * write transaction is running. `scan` runs the reads whose work grows with a tenant's
 * data rather than with the answer (a knowledge base's search) on SCAN_CONNECTIONS
 * connections of their own, handed out fairly among tenants (scans.ts): on SQLite read-only
 * connections on threads of their own, so that one tenant's search of a million passages never
 * holds the event loop that every other request needs; on PostgreSQL a small pool of its own,
 * so that searches never take the connections every other request needs.
 */
export interface Storage {
  readonly dialect: DialectName;
  /** What it opened, for messages: "PostgreSQL at host:port/database" or "the SQLite database in DIR" (never credentials). */
  readonly name: string;
  readonly db: Kysely<Database>;
  readonly readDb: Kysely<Database>;
  /**
   * Runs `work` on a scan connection once `tenant`'s turn comes (scans.ts); rejects with
   * TooManyWaiting when the tenant has SCAN_WAITING_PER_TENANT scans waiting already, and with
   * ScanTimedOut when `work` runs past the scan time limit (its statement is stopped or set aside).
   */
  scan<T>(tenant: string, work: (db: Kysely<Database>) => Promise<T>): Promise<T>;
  /** Scans running and waiting now, and refused and timed out since the start. */
  scans(): ScanStats;
  /**
   * The first scan connection, outside the turns `scan` hands out: for the bench's bare statement
   * and tests. On PostgreSQL it carries the time limit (`statement_timeout`); on SQLite it has none.
   */
  readonly scanDb: Kysely<Database>;
  /** Write connections in use and queries waiting for one (PostgreSQL: the pool; SQLite: the writer). */
  connections(): { inUse: number; idle: number; waiting: number };
  close(): Promise<void>;
}

export interface StorageOptions {
  databaseUrl: string | null;
  dataDir: string;
  /** Pool size for PostgreSQL. */
  poolSize?: number;
  /** PostgreSQL: give up on a connection that has not completed its start-up within this time. */
  connectTimeoutMs?: number;
  /** PostgreSQL: the longest a statement waits for a row or table another session locks (default LOCK_TIMEOUT_MS). */
  lockTimeoutMs?: number;
  /** The longest a scan (a knowledge base's search) may run; default SCAN_TIME_LIMIT_MS. */
  scanTimeLimitMs?: number;
}

// PostgreSQL int8 (count(*), bigserial) arrives as a string by default; our counts fit in a double.
pg.types.setTypeParser(20, (value) => Number(value));

export const SQLITE_FILE_NAME = 'copilot-service.sqlite';

/**
 * PostgreSQL: a statement waits at most this long for a lock another session holds (a psql
 * session left in a transaction, say), then fails as the database being busy (503), as SQLite's
 * busy timeout does; without it, requests waited without bound and held the pool. The service's
 * own transactions hold a copilot's row for far less.
 */
export const LOCK_TIMEOUT_MS = 30_000;

/** Connections of each process for scans (searches), besides the others: PostgreSQL a pool, SQLite threads. */
export const SCAN_CONNECTIONS = 2;

/** Scans one tenant may run at once: one connection is always left for the others. */
export const SCANS_PER_TENANT = Math.max(1, SCAN_CONNECTIONS - 1);

/** Scans one tenant may have waiting for a connection; one more is refused (429). */
export const SCAN_WAITING_PER_TENANT = 16;

/** A plugin that refuses every statement once `signal` is aborted: a scan stopped at its time limit runs no further one. */
function refusedOnceStopped(signal: AbortSignal): KyselyPlugin {
  return {
    transformQuery({ node }) {
      if (signal.aborted) throw new Error('The scan was stopped at its time limit; no further statement runs.');
      return node;
    },
    transformResult: async ({ result }) => result,
  };
}

/** PostgreSQL's code for a statement cancelled, here by `statement_timeout`. */
const QUERY_CANCELED = '57014';

function fairScans(): FairScans {
  return new FairScans(SCAN_CONNECTIONS, SCANS_PER_TENANT, SCAN_WAITING_PER_TENANT);
}

/** The database files are readable by their owner only (the directory too: data-dir.ts). */
const PRIVATE_FILE = 0o600;

/**
 * An SQLite file (the database: every copilot token, the documents, the knowledge-base text;
 * the instance lock) readable by this user only: created 0600 before SQLite opens it (SQLite
 * gives its -wal, -shm and -journal files the file's mode), and existing ones of an older
 * install tightened.
 */
export function makePrivate(file: string): void {
  closeSync(openSync(file, 'a', PRIVATE_FILE));
  for (const each of [file, `${file}-wal`, `${file}-shm`, `${file}-journal`]) {
    if (existsSync(each)) chmodSync(each, PRIVATE_FILE);
  }
}

/**
 * Pragmas of every connection to the file, the busy timeout first; the reader's is query-only
 * besides. `secure_delete`: what a deletion frees is overwritten with zeros, so a purged
 * copilot's token, documents and passages do not stay readable in the file's free pages.
 */
const SQLITE_PRAGMAS = ['busy_timeout = 5000', 'journal_mode = WAL', 'synchronous = NORMAL', 'foreign_keys = ON', 'secure_delete = ON'];

function openSqliteReader(file: string): SqliteDatabase {
  const connection = new SQLite(file, { fileMustExist: true });
  for (const pragma of SQLITE_PRAGMAS) connection.pragma(pragma);
  connection.pragma('query_only = ON');
  // Each statement prepared once per SQL text, as on the writer (sqlite-writer.ts). Kysely runs
  // one statement to the end before the next (no streaming here), so one can be reused.
  const statements = new LRUCache<string, SQLite.Statement>({ max: STATEMENT_CACHE });
  return {
    prepare(text) {
      const cached = statements.get(text);
      if (cached !== undefined) return cached;
      const statement = connection.prepare(text);
      statements.set(text, statement);
      return statement;
    },
    close: () => connection.close(),
  };
}

/** Every connection of the service's storage: text stored alike on both databases (storable-text.ts). */
const kysely = (dialect: Dialect): Kysely<Database> => new Kysely<Database>({ dialect, plugins: [storableText] });

/** "PostgreSQL at host:port/database" or "the SQLite database in DIR": never credentials. */
function describeDatabase(options: Pick<StorageOptions, 'databaseUrl' | 'dataDir'>): string {
  if (!options.databaseUrl) return `the SQLite database in ${options.dataDir}`;
  try {
    const url = new URL(options.databaseUrl);
    return `PostgreSQL at ${url.hostname || 'localhost'}:${url.port || '5432'}${url.pathname || '/'}`;
  } catch {
    return 'PostgreSQL (DATABASE_URL)';
  }
}

export function openStorage(options: StorageOptions): Storage {
  if (options.databaseUrl) {
    const pool = new pg.Pool({
      connectionString: options.databaseUrl,
      max: options.poolSize ?? 10,
      connectionTimeoutMillis: options.connectTimeoutMs ?? 5000,
    });
    keepErrorsHandled(pool);
    settingEverySession(pool, { statementTimeoutMs: 0, lockTimeoutMs: options.lockTimeoutMs ?? LOCK_TIMEOUT_MS });
    const db = kysely(new PostgresDialect({ pool: markingConnectFailures(pool) }));
    // Searches, whose work grows with a knowledge base, get connections of their own: a tenant's
    // slow searches then wait for each other, never for the connections every other request needs
    // (sharing the pool, searches of a million passages held all of it, and other requests failed
    // with 503 after the connect timeout). Opened when first used.
    // A scan is bounded as a whole (its statements, and the scoring between them on a task
    // thread): past the time limit it is answered ScanTimedOut and runs no further statement,
    // and the server stops its running one (`statement_timeout`, the same limit). Until then its
    // tenant's turn is held (holdTurn) and its connection is in use: the pool has one more for
    // each slot, so the slot's next scan does not wait for it.
    const limitMs = options.scanTimeLimitMs ?? SCAN_TIME_LIMIT_MS;
    const scanPool = new pg.Pool({
      connectionString: options.databaseUrl,
      max: 2 * SCAN_CONNECTIONS,
      connectionTimeoutMillis: options.connectTimeoutMs ?? 5000,
    });
    keepErrorsHandled(scanPool);
    settingEverySession(scanPool, { statementTimeoutMs: limitMs, lockTimeoutMs: 0 });
    const scanConnections = markingConnectFailures(scanPool);
    const scanDb = kysely(new PostgresDialect({ pool: scanConnections }));
    // Never more scans at once than the pool holds: a scan waits for its turn, not for the pool.
    const turns = fairScans();
    const timedOut = (err: unknown): never => {
      throw (err as { code?: unknown } | null)?.code === QUERY_CANCELED ? new ScanTimedOut(limitMs) : err;
    };
    return {
      dialect: 'postgres',
      name: describeDatabase(options),
      db,
      readDb: db,
      scanDb,
      scan: (tenant, work) =>
        turns.run(tenant, async () => {
          // Opening a connection (a handshake, tens of milliseconds on a busy machine) is not the
          // scan's work: one is ready in the pool before its time starts (opened when none is idle).
          if (scanPool.idleCount === 0) (await scanConnections.connect()).release();
          const stop = new AbortController();
          const running = work(scanDb.withPlugin(refusedOnceStopped(stop.signal))).catch(timedOut);
          return withinTimeLimit(running, limitMs, () => {
            stop.abort();
            turns.holdTurn(tenant, running);
          });
        }),
      scans: () => turns.stats(),
      connections: () => ({ inUse: pool.totalCount - pool.idleCount, idle: pool.idleCount, waiting: pool.waitingCount }),
      async close() {
        await db.destroy();
        await scanDb.destroy();
        // Kysely's destroy is a no-op when no query ever ran; the pools must still end,
        // or a later query would quietly open new connections.
        if (!pool.ended) await pool.end();
        if (!scanPool.ended) await scanPool.end();
      },
    };
  }
  prepareDataDir(options.dataDir);
  const file = path.join(options.dataDir, SQLITE_FILE_NAME);
  try {
    // Opened for writing here (the writer thread opens it later), so that a file that cannot
    // be written stops the start with a clear error.
    makePrivate(file);
  } catch (err) {
    throw new DataDirError(options.dataDir, `the database file ${SQLITE_FILE_NAME} cannot be opened for writing (${describeFsError(err)})`);
  }
  let closed = false;
  const writer = { inUse: 0, waiting: 0 };
  const db = kysely(sqliteWriterDialect(file, SQLITE_PRAGMAS, () => closed, writer));
  let reader: Kysely<Database> | null = null;
  // The writer's kind of thread, made read-only; each opened lazily as the reader is.
  const scanners: Array<Kysely<Database> | null> = Array.from({ length: SCAN_CONNECTIONS }, () => null);
  const scanner = (slot: number): Kysely<Database> => {
    if (closed) return db;
    scanners[slot] ??= kysely(sqliteWriterDialect(file, [...SQLITE_PRAGMAS, 'query_only = ON'], () => closed, { inUse: 0, waiting: 0 }));
    return scanners[slot];
  };
  const turns = fairScans();
  // A SQLite statement cannot be stopped from outside its thread (better-sqlite3 has no
  // interrupt): past the time limit the thread is set aside to end its statement alone and
  // close, and the slot opens a new one; its tenant's turn waits for the old one (holdTurn).
  const limitMs = options.scanTimeLimitMs ?? SCAN_TIME_LIMIT_MS;
  // A thread answers a first statement before a scan's time starts: opening it (a new thread,
  // the driver loaded, the file opened: tens of milliseconds, more on a busy machine, which is
  // when a set-aside slot opens its next one) is not the scan's work.
  const opening = new WeakMap<Kysely<Database>, Promise<unknown>>();
  const opened = (thread: Kysely<Database>): Promise<unknown> => {
    let ready = opening.get(thread);
    if (!ready) {
      ready = sql`select 1`.execute(thread);
      opening.set(thread, ready);
      ready.catch(() => opening.delete(thread));
    }
    return ready;
  };
  const settingAside = new Set<Promise<void>>();
  const setAside = (tenant: string, slot: number, thread: Kysely<Database>) => {
    if (thread === db) return; // closed meanwhile: the scan ran on the writer, which close() ends
    if (scanners[slot] === thread) scanners[slot] = null;
    const ended = thread.destroy().catch(() => undefined);
    settingAside.add(ended);
    void ended.finally(() => settingAside.delete(ended));
    turns.holdTurn(tenant, ended);
  };
  const storage: Storage = {
    dialect: 'sqlite',
    name: describeDatabase(options),
    db,
    connections: () => ({ inUse: writer.inUse, idle: 1 - writer.inUse, waiting: writer.waiting }),
    // Opened lazily: the file and its schema must exist first (after migrations).
    // Once closed, the destroyed writer is handed out so that queries fail instead of
    // silently opening a new connection.
    get readDb() {
      if (closed) return db;
      reader ??= kysely(new SqliteDialect({ database: openSqliteReader(file) }));
      return reader;
    },
    get scanDb() {
      return scanner(0);
    },
    scan: (tenant, work) =>
      turns.run(tenant, async (slot) => {
        const thread = scanner(slot);
        await opened(thread);
        return withinTimeLimit(work(thread), limitMs, () => setAside(tenant, slot, thread));
      }),
    scans: () => turns.stats(),
    async close() {
      closed = true;
      if (reader) await reader.destroy();
      for (const each of scanners) if (each) await each.destroy();
      await Promise.all(settingAside);
      await db.destroy();
    },
  };
  return storage;
}

/**
 * Null when the database answers a statement; else why not, in a sentence. A pool whose every
 * connection is held (by long statements, or by rows another session locks) gives none in its
 * connect timeout although the database answers: that is said as such, not as an outage.
 */
export async function databaseNotReady(storage: Storage): Promise<string | null> {
  try {
    await sql`select 1`.execute(storage.db);
    return null;
  } catch (err) {
    if (storage.dialect === 'postgres' && /^timeout exceeded when trying to connect/.test((err as Error).message ?? '')) {
      const { inUse, waiting } = storage.connections();
      return `Every database connection of this instance is in use (${inUse} in use, ${waiting} waiting): long statements or locked rows hold them; the database itself may be answering.`;
    }
    return 'The database is not reachable.';
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
  const advice: string[] = [];
  const { rows } = await sql<{ autovacuum: string }>`select current_setting('autovacuum') as autovacuum`.execute(storage.db);
  if (rows[0]?.autovacuum === 'off') {
    advice.push(
      'PostgreSQL runs with autovacuum off: table statistics go stale and lists can read whole tables; turn it on, or run ANALYZE after large changes',
    );
  }
  const offsetMs = (await databaseClockOffset(storage)) ?? 0;
  if (Math.abs(offsetMs) > CLOCK_SKEW_WARNING_MS) {
    advice.push(
      `This machine's clock is ${Math.round(Math.abs(offsetMs) / 1000)} s ${offsetMs < 0 ? 'ahead of' : 'behind'} the PostgreSQL server's: the service times its work and its timestamps by the server's clock, but its log lines are this machine's; keep every instance's clock synchronised (NTP)`,
    );
  }
  return advice;
}

/**
 * How far the PostgreSQL server's clock is ahead of this machine's, in milliseconds (negative:
 * behind), read at the middle of a round trip; null on SQLite (one machine, one clock).
 */
export async function databaseClockOffset(storage: Pick<Storage, 'dialect' | 'db'>): Promise<number | null> {
  if (storage.dialect !== 'postgres') return null;
  const asked = Date.now();
  const { rows } = await sql<{ server_ms: string }>`select (extract(epoch from clock_timestamp()) * 1000)::bigint::text as server_ms`.execute(storage.db);
  const answered = Date.now();
  return Number(rows[0]!.server_ms) - (asked + answered) / 2;
}

/** How far this machine's clock may be from the database server's before the start warns. */
const CLOCK_SKEW_WARNING_MS = 2000;

/**
 * The pool as Kysely takes it, every failure to connect marked as the database being unavailable
 * (unavailable.ts). Not a pool this process has ended: that is the service's own state, a bug
 * if a request meets it.
 */
function markingConnectFailures(pool: pg.Pool): PostgresPool {
  return {
    connect: () =>
      pool.connect().catch((err: unknown) => {
        throw pool.ended ? err : markConnectFailure(err);
      }),
    end: () => pool.end(),
  };
}

/**
 * What the service's SQL relies on, set on every connection whatever the database's or role's
 * defaults (ALTER DATABASE/ROLE … SET) say: string literals as written (standard_conforming_strings
 * off read the escape clause `'\\'` otherwise: every name filter was 500), read committed (a
 * serializable default made concurrent writes 503), no idle-in-transaction cut (a search scores
 * on a task thread between its statements), and the service's own timeouts (0: none).
 * Sent before the connection's first statement (the client queues statements in order).
 */
function settingEverySession(pool: pg.Pool, timeouts: { statementTimeoutMs: number; lockTimeoutMs: number }): void {
  const settings = [
    'set standard_conforming_strings = on',
    "set default_transaction_isolation = 'read committed'",
    'set idle_in_transaction_session_timeout = 0',
    `set statement_timeout = ${Math.trunc(timeouts.statementTimeoutMs)}`,
    `set lock_timeout = ${Math.trunc(timeouts.lockTimeoutMs)}`,
  ].join('; ');
  // A connection that cannot take them has failed: its next statement says so (503).
  pool.on('connect', (client) => void client.query(settings).catch(() => undefined));
}

/**
 * A client losing its connection must not crash the process. pg-pool listens for a client's
 * 'error' only while the client is idle in the pool; one checked out (a transaction between two
 * statements) that loses its connection (a failover, a restart, `pg_terminate_backend`) emitted
 * the event to no listener, and the process exited. Each client now keeps a listener of its own:
 * the next statement on it fails (503, `isDatabaseUnavailable`) and the pool drops it on release.
 */
function keepErrorsHandled(pool: pg.Pool): void {
  pool.on('error', () => undefined);
  pool.on('connect', (client) => client.on('error', () => undefined));
}
