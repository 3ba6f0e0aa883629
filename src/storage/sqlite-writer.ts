import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type { CompiledQuery, DatabaseConnection, Dialect, Driver, QueryResult, TransactionSettings } from 'kysely';
import { GenericSqliteWorkerDialect } from 'kysely-generic-sqlite/worker';
import { createNodeWorkerExecutor } from 'kysely-generic-sqlite/worker-helper-node';

/**
 * The SQLite writer connection lives on a thread of its own, so that nothing a write does
 * holds the event loop: not a long statement (a full-text merge step on a large index, a
 * deletion of many passages), not a commit, not the WAL checkpoint the commit may run, and
 * not the wait for the write lock another process holds (better-sqlite3 waits synchronously,
 * up to the busy timeout). Reads keep their own connection on the main thread: in WAL mode
 * they never wait for the writer.
 *
 * kysely-generic-sqlite carries the queries over: Kysely serialises them on its single
 * connection (transactions included), the thread runs each on better-sqlite3. The thread's
 * source is inline, like the task threads' would be if they had no build, so the service,
 * its bundle and its tests all start it the same way.
 */
const WORKER_SOURCE = `
const { workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const { createNodeOnMessageCallback } = require(workerData.helper);
createNodeOnMessageCallback(({ file, pragmas }) => {
  const db = new Database(file);
  for (const pragma of pragmas) db.pragma(pragma);
  // Errors cross the thread as {name, message, stack}: the SQLite code rides in the name.
  const coded = (err) => {
    if (err && typeof err.code === 'string' && err.code.startsWith('SQLITE_')) err.name = err.code;
    return err;
  };
  return {
    db,
    query(_isSelect, sql, parameters) {
      try {
        const statement = db.prepare(sql);
        if (statement.reader) return { rows: statement.all(parameters) };
        const { changes, lastInsertRowid } = statement.run(parameters);
        return { rows: [], numAffectedRows: BigInt(changes), insertId: BigInt(lastInsertRowid) };
      } catch (err) {
        throw coded(err);
      }
    },
    close() {
      db.close();
    },
  };
});
`;

/** A writer's error with its SQLite code back in `code` (SQLITE_BUSY and the like), as on the main thread. */
function withSqliteCode(error: unknown): never {
  if (error instanceof Error && /^SQLITE_[A-Z_]+$/.test(error.name)) Object.assign(error, { code: error.name, name: 'SqliteError' });
  throw error;
}

class CodedConnection implements DatabaseConnection {
  constructor(readonly inner: DatabaseConnection) {}
  executeQuery<R>(query: CompiledQuery, options?: Parameters<DatabaseConnection['executeQuery']>[1]): Promise<QueryResult<R>> {
    return this.inner.executeQuery<R>(query, options).catch(withSqliteCode);
  }
  streamQuery<R>(query: CompiledQuery, chunkSize: number, options?: Parameters<DatabaseConnection['streamQuery']>[2]): AsyncIterableIterator<QueryResult<R>> {
    return this.inner.streamQuery<R>(query, chunkSize, options);
  }
}

/** The library's driver, its one connection wrapped so that errors keep their SQLite code. */
class CodedDriver implements Driver {
  private connection: CodedConnection | null = null;
  constructor(private readonly inner: Driver) {}
  init(options?: Parameters<Driver['init']>[0]) {
    return this.inner.init(options);
  }
  async acquireConnection(options?: Parameters<Driver['acquireConnection']>[0]) {
    const inner = await this.inner.acquireConnection(options);
    if (this.connection?.inner !== inner) this.connection = new CodedConnection(inner);
    return this.connection;
  }
  beginTransaction(connection: DatabaseConnection, settings: TransactionSettings) {
    return this.inner.beginTransaction(connection, settings);
  }
  commitTransaction(connection: DatabaseConnection) {
    return this.inner.commitTransaction(connection);
  }
  rollbackTransaction(connection: DatabaseConnection) {
    return this.inner.rollbackTransaction(connection);
  }
  savepoint(connection: DatabaseConnection, name: string, compile: Parameters<NonNullable<Driver['savepoint']>>[2]) {
    return this.inner.savepoint!(connection, name, compile);
  }
  rollbackToSavepoint(connection: DatabaseConnection, name: string, compile: Parameters<NonNullable<Driver['savepoint']>>[2]) {
    return this.inner.rollbackToSavepoint!(connection, name, compile);
  }
  releaseSavepoint(connection: DatabaseConnection, name: string, compile: Parameters<NonNullable<Driver['savepoint']>>[2]) {
    return this.inner.releaseSavepoint!(connection, name, compile);
  }
  releaseConnection(connection: DatabaseConnection, options?: Parameters<Driver['releaseConnection']>[1]) {
    return this.inner.releaseConnection((connection as CodedConnection).inner ?? connection, options);
  }
  destroy(options?: Parameters<Driver['destroy']>[0]) {
    return this.inner.destroy(options);
  }
}

/**
 * A Kysely dialect whose one connection is `file` opened on a thread of its own, with these
 * pragmas run first. The thread starts with the first query and ends with `destroy()`; once
 * `closed()` says so, no query starts it again (Kysely would, had none run before `destroy()`).
 */
export function sqliteWriterDialect(file: string, pragmas: readonly string[], closed: () => boolean): Dialect {
  const require = createRequire(import.meta.url);
  const base = new GenericSqliteWorkerDialect(
    createNodeWorkerExecutor({
      worker: () => {
        if (closed()) throw new Error('The database has been closed.');
        return new Worker(WORKER_SOURCE, {
          eval: true,
          workerData: { driver: require.resolve('better-sqlite3'), helper: require.resolve('kysely-generic-sqlite/worker-helper-node') },
        });
      },
      data: { file, pragmas: [...pragmas] },
    }),
  );
  return {
    createAdapter: () => base.createAdapter(),
    createDriver: () => new CodedDriver(base.createDriver()),
    createIntrospector: (db) => base.createIntrospector(db),
    createQueryCompiler: () => base.createQueryCompiler(),
  };
}
