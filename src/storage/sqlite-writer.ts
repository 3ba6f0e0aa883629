import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import {
  CompiledQuery,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
  type DatabaseConnection,
  type Dialect,
  type Driver,
  type QueryResult,
} from 'kysely';

/**
 * The SQLite writer connection lives on a thread of its own, so that nothing a write does
 * holds the event loop: not a long statement (a full-text merge step on a large index, a
 * deletion of many passages), not a commit, not the WAL checkpoint the commit may run, and
 * not the wait for the write lock another process holds (better-sqlite3 waits synchronously,
 * up to the busy timeout). Reads keep their own connection on the main thread: in WAL mode
 * they never wait for the writer.
 *
 * Written here rather than taken from kysely-generic-sqlite: its version for this Kysely (1.x)
 * loses errors' SQLite codes and never settles a query whose thread died, and its 2.x needs
 * Kysely 0.29, which requires Node 22. The thread's source is inline (like the Kysely SQLite
 * driver's own loop, one statement per message), so the service, its bundle and its tests
 * start it the same way.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const { LRUCache } = require(workerData.lruCache);
// The connection opens at the first message, and again at the next one after it could not
// (a file locked past the busy timeout, not a database, …): SQLite's error answers that
// message. Thrown at the thread's start, it would kill the thread and reach the main thread
// as a bare object without its message (a SqliteError does not survive the 'error' event).
let db = null;
// Switching a new file to WAL needs its exclusive lock, and SQLite answers SQLITE_BUSY at
// once, without the busy handler, while another connection holds the write lock: two
// instances starting on one fresh file. So a pragma is tried again until the connection's
// busy timeout has passed, as the busy handler would have waited.
const pause = new Int32Array(new SharedArrayBuffer(4));
const pragmaWaiting = (connection, pragma, deadline) => {
  for (;;) {
    try {
      return connection.pragma(pragma);
    } catch (err) {
      if (!String(err && err.code).startsWith('SQLITE_BUSY') || Date.now() >= deadline) throw err;
      Atomics.wait(pause, 0, 0, 10);
    }
  }
};
const open = () => {
  const connection = new Database(workerData.file);
  const start = Date.now();
  try {
    for (const pragma of workerData.pragmas) {
      pragmaWaiting(connection, pragma, start + connection.pragma('busy_timeout', { simple: true }));
    }
  } catch (err) {
    connection.close();
    throw err;
  }
  return connection;
};
// Prepared once per SQL text: preparing (parsing and planning) cost a writer as much as
// running the short statements of a page's job.
const statements = new LRUCache({ max: workerData.statementCache });
const prepare = (sql) => {
  let statement = statements.get(sql);
  if (statement === undefined) statements.set(sql, (statement = db.prepare(sql)));
  return statement;
};
// A statement waits for the write lock only as long as its request has left of the busy timeout:
// statements queued behind one that waits for a lock another process holds would each wait the
// whole timeout again, one after another (a request behind four claims: 25 s, not 5 s).
// A statement that sets the busy timeout itself (the migrations take the lock with timers) is
// obeyed until one sets it back.
const busyMs = workerData.busyTimeoutMs;
let busy = busyMs;
let ownTimeout = false;
const waitAtMost = (deadline) => {
  if (ownTimeout) return;
  const left = deadline - Date.now();
  const ms = left > busyMs * 0.8 ? busyMs : Math.max(100, Math.floor(left));
  if (ms !== busy) {
    db.pragma('busy_timeout = ' + ms);
    busy = ms;
  }
};
parentPort.on('message', (message) => {
  if (message.close) {
    if (db) db.close();
    parentPort.postMessage({ id: message.id });
    return;
  }
  try {
    if (db === null) {
      db = open();
      busy = busyMs;
    }
    // SQLite ends a transaction itself on some failures (a full disk, an I/O error): the rollback
    // that follows has nothing to do, and its own error ("no transaction is active") would
    // replace the failure that ended it.
    if (message.sql === 'rollback' && !db.inTransaction) {
      parentPort.postMessage({ id: message.id, changes: 0, lastInsertRowid: 0n });
      return;
    }
    waitAtMost(message.deadline);
    // A transaction's begin travels with its first statement (WriterConnection.deferBegin).
    if (message.begin) prepare('begin').run();
    const setting = /^\\s*pragma\\s+busy_timeout\\s*=\\s*(\\d+)/i.exec(message.sql);
    if (setting) {
      busy = Number(setting[1]);
      ownTimeout = busy !== busyMs;
    }
    const statement = prepare(message.sql);
    if (statement.reader) {
      parentPort.postMessage({ id: message.id, rows: statement.all(message.parameters) });
    } else {
      const { changes, lastInsertRowid } = statement.run(message.parameters);
      parentPort.postMessage({ id: message.id, changes, lastInsertRowid: BigInt(lastInsertRowid) });
    }
  } catch (err) {
    parentPort.postMessage({ id: message.id, error: { message: String(err && err.message), code: err && err.code } });
  }
});
`;

/** Prepared statements kept per connection, by SQL text (the service's statements are a few hundred texts). */
export const STATEMENT_CACHE = 500;

interface Answer {
  id: number;
  rows?: unknown[];
  changes?: number;
  lastInsertRowid?: bigint;
  error?: { message: string; code?: string };
}

/** The one connection: each query is a message to the thread, answered in order. */
class WriterConnection implements DatabaseConnection {
  private readonly pending = new Map<number, { resolve: (a: Answer) => void; reject: (e: Error) => void }>();
  private next = 0;
  private failure: Error | null = null;
  private beginPending = false;
  /** When the current holder's statements stop waiting for the write lock: its request's start + the busy timeout. */
  deadline = 0;

  constructor(private readonly worker: Worker) {
    worker.on('message', (answer: Answer) => {
      const waiter = this.pending.get(answer.id);
      this.pending.delete(answer.id);
      waiter?.resolve(answer);
    });
    worker.on('error', (err) => this.fail(err));
    worker.on('exit', (code) => this.fail(new Error(`The SQLite writer thread exited (code ${code}).`)));
  }

  private fail(error: Error): void {
    this.failure ??= error;
    for (const waiter of this.pending.values()) waiter.reject(this.failure);
    this.pending.clear();
  }

  /**
   * The next statement begins a transaction first, in the same message: a message costs a
   * thread wake-up each way, which costs more than a short statement. A transaction that ends
   * before any statement (`endTransaction`) sends nothing.
   */
  deferBegin(): void {
    this.beginPending = true;
  }

  /** Commits or rolls back; nothing to send when the transaction never began on the thread. */
  async endTransaction(sql: 'commit' | 'rollback'): Promise<void> {
    if (this.beginPending) {
      this.beginPending = false;
      return;
    }
    await this.executeQuery(CompiledQuery.raw(sql));
  }

  request(message: { sql?: string; parameters?: readonly unknown[]; close?: true }): Promise<Answer> {
    if (this.failure) return Promise.reject(this.failure);
    const begin = this.beginPending;
    this.beginPending = false;
    const id = this.next++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      const deadline = this.deadline;
      this.worker.postMessage(begin ? { id, begin, deadline, ...message } : { id, deadline, ...message });
    });
  }

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    const answer = await this.request({ sql: query.sql, parameters: query.parameters });
    if (answer.error) {
      // As better-sqlite3 throws it on the main thread: the SQLite code in `code`.
      throw Object.assign(new Error(answer.error.message), { name: 'SqliteError', code: answer.error.code });
    }
    if (answer.rows) return { rows: answer.rows as R[] };
    return { rows: [], numAffectedRows: BigInt(answer.changes ?? 0), insertId: answer.lastInsertRowid };
  }

  // biome-ignore lint/correctness/useYield: streaming is not offered on the writer.
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('The SQLite writer does not stream; read through storage.readDb.');
  }

  async close(): Promise<void> {
    try {
      await this.request({ close: true });
    } catch {
      // A thread that already ended has nothing left to close.
    }
    await this.worker.terminate();
  }
}

/** The writer's one connection: held by a query or transaction, and how many wait for it. */
export interface WriterStats {
  inUse: number;
  waiting: number;
}

/** Kysely runs a transaction on one connection; here there is one, so queries wait their turn. */
class WriterDriver implements Driver {
  private connection: WriterConnection | null = null;
  private queue: Promise<void> = Promise.resolve();
  private release: (() => void) | null = null;

  constructor(
    private readonly open: () => Worker,
    private readonly stats: WriterStats,
    private readonly busyTimeoutMs: number,
  ) {}

  async init(): Promise<void> {
    this.connection = new WriterConnection(this.open());
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    // Counted from when the request asks, not from its turn: the time it queued is time waited.
    const deadline = Date.now() + this.busyTimeoutMs;
    const previous = this.queue;
    let release!: () => void;
    this.queue = new Promise<void>((resolve) => (release = resolve));
    this.stats.waiting++;
    await previous;
    this.stats.waiting--;
    this.stats.inUse = 1;
    this.release = release;
    this.connection!.deadline = deadline;
    return this.connection!;
  }

  async beginTransaction(connection: DatabaseConnection): Promise<void> {
    (connection as WriterConnection).deferBegin();
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await (connection as WriterConnection).endTransaction('commit');
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    await (connection as WriterConnection).endTransaction('rollback');
  }

  async releaseConnection(): Promise<void> {
    const release = this.release;
    this.release = null;
    this.stats.inUse = 0;
    release?.();
  }

  async destroy(): Promise<void> {
    await this.connection?.close();
    this.connection = null;
  }
}

/**
 * A Kysely dialect whose one connection is `file` opened on a thread of its own, with these
 * pragmas run first. The thread starts with the first query and ends with `destroy()`; once
 * `closed()` says so, no query starts it again (Kysely would, had none run before `destroy()`).
 */
export function sqliteWriterDialect(file: string, pragmas: readonly string[], closed: () => boolean, stats: WriterStats): Dialect {
  const require = createRequire(import.meta.url);
  const driver = require.resolve('better-sqlite3');
  const lruCache = require.resolve('lru-cache');
  // The pragmas set the busy timeout; each statement waits at most what its request has left of it.
  const busyTimeoutMs = Number(/^busy_timeout = (\d+)$/.exec(pragmas.find((p) => p.startsWith('busy_timeout')) ?? '')?.[1] ?? 5000);
  const open = () => {
    if (closed()) throw new Error('The database has been closed.');
    return new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { driver, lruCache, file, pragmas: [...pragmas], statementCache: STATEMENT_CACHE, busyTimeoutMs },
    });
  };
  return {
    createAdapter: () => new SqliteAdapter(),
    createDriver: () => new WriterDriver(open, stats, busyTimeoutMs),
    createIntrospector: (db) => new SqliteIntrospector(db),
    createQueryCompiler: () => new SqliteQueryCompiler(),
  };
}
