/**
 * `copilot-service backup --out FILE`: a consistent copy of the database, taken while the
 * service runs. It never migrates (the point of a backup before an upgrade is the schema as
 * it was), and it writes a new file readable by its owner only (it holds every copilot's
 * token), never over an existing one.
 *
 * - SQLite: `VACUUM INTO` on a read-only connection to the service's file: one read
 *   transaction, so the copy is the database as of one moment, whatever the service writes
 *   meanwhile (WAL mode lets it go on writing). The copy is compact and checked with
 *   `pragma integrity_check`. Restore: the copy becomes `DATA_DIR/copilot-service.sqlite`.
 * - PostgreSQL: `pg_dump --format=custom`, run without a shell; the password goes to it in
 *   PGPASSWORD, never on its command line. Restore: `pg_restore` (docs/deployment.md).
 */
import { execFile } from 'node:child_process';
import { closeSync, existsSync, openSync, statSync, unlinkSync } from 'node:fs';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import pg from 'pg';
import { describeFsError } from './data-dir.js';
import { SQLITE_FILE_NAME } from './database.js';

export class BackupError extends Error {}

export interface BackupResult {
  file: string;
  bytes: number;
  /** The last migration applied to the database copied (null: none). */
  schema: string | null;
}

/** Creates `file` empty, mode 0600; refuses an existing file. */
function createPrivate(file: string): void {
  try {
    closeSync(openSync(file, 'wx', 0o600));
  } catch (err) {
    if ((err as { code?: string }).code === 'EEXIST') throw new BackupError(`${file} already exists: remove it or choose another name.`);
    throw new BackupError(`${file} cannot be written: ${describeFsError(err)}.`);
  }
}

function removeQuietly(file: string): void {
  try {
    unlinkSync(file);
  } catch {
    // Nothing was written there.
  }
}

const LAST_MIGRATION = 'select max(name) as name from kysely_migration';

export function backupSqlite(dataDir: string, out: string): BackupResult {
  const source = path.join(dataDir, SQLITE_FILE_NAME);
  if (!existsSync(source)) throw new BackupError(`There is no SQLite database at ${source}: is DATA_DIR the service's?`);
  const file = path.resolve(out);
  createPrivate(file);
  try {
    const db = new SQLite(source, { readonly: true, fileMustExist: true });
    try {
      db.pragma('busy_timeout = 5000');
      db.prepare('vacuum into ?').run(file);
    } finally {
      db.close();
    }
    const copy = new SQLite(file, { readonly: true, fileMustExist: true });
    try {
      const check = copy.pragma('integrity_check', { simple: true });
      if (check !== 'ok') throw new BackupError(`The copy failed its integrity check: ${String(check)}`);
      const schema = (copy.prepare(LAST_MIGRATION).get() as { name: string | null } | undefined)?.name ?? null;
      return { file, bytes: statSync(file).size, schema };
    } finally {
      copy.close();
    }
  } catch (err) {
    removeQuietly(file);
    if (err instanceof BackupError) throw err;
    throw new BackupError(`The backup of ${source} failed: ${(err as Error).message}`);
  }
}

/** The URL without its password, and the password (for PGPASSWORD). */
function splitPassword(databaseUrl: string): { url: string; password: string | null } {
  const url = new URL(databaseUrl);
  const password = url.password === '' ? null : decodeURIComponent(url.password);
  url.password = '';
  return { url: url.href, password };
}

export async function backupPostgres(databaseUrl: string, out: string, pgDump = 'pg_dump'): Promise<BackupResult> {
  const file = path.resolve(out);
  const { url, password } = splitPassword(databaseUrl);
  const client = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: 10_000 });
  let schema: string | null;
  try {
    await client.connect();
    schema = (await client.query<{ name: string | null }>(LAST_MIGRATION)).rows[0]?.name ?? null;
  } catch (err) {
    throw new BackupError(`The PostgreSQL database cannot be read (${new URL(url).host}${new URL(url).pathname}): ${(err as Error).message}`);
  } finally {
    await client.end().catch(() => undefined);
  }
  createPrivate(file);
  const env: NodeJS.ProcessEnv = { ...process.env, ...(password !== null && { PGPASSWORD: password }) };
  const failure = await new Promise<string | null>((resolve) => {
    execFile(pgDump, ['--format=custom', '--file', file, '--dbname', url], { env, maxBuffer: 16 * 1024 * 1024 }, (err, _stdout, stderr) => {
      if (!err) resolve(null);
      else if ((err as { code?: unknown }).code === 'ENOENT')
        resolve(`${pgDump} is not installed: install PostgreSQL's client tools (the server's major version or newer), e.g. apt-get install postgresql-client.`);
      else resolve(`pg_dump failed: ${stderr.trim() || err.message}`);
    });
  });
  if (failure !== null) {
    removeQuietly(file);
    throw new BackupError(failure);
  }
  return { file, bytes: statSync(file).size, schema };
}
