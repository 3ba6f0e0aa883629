/**
 * `copilot-service backup --out FILE`: a consistent copy of the database, taken while the
 * service runs. It never migrates (the point of a backup before an upgrade is the schema as
 * it was), and it writes a new file readable by its owner only (it holds every copilot's
 * token), never over an existing one, and under its name only once whole (publishedWhenWhole).
 *
 * - SQLite: `VACUUM INTO` on a read-only connection to the service's file: one read
 *   transaction, so the copy is the database as of one moment, whatever the service writes
 *   meanwhile (WAL mode lets it go on writing). The copy is compact and checked with
 *   `pragma integrity_check`. Restore: the copy becomes `DATA_DIR/copilot-service.sqlite`.
 * - PostgreSQL: `pg_dump --format=custom`, run without a shell; the password goes to it in
 *   PGPASSWORD, never on its command line. Restore: `pg_restore` (docs/deployment.md).
 */
import { execFile } from 'node:child_process';
import { closeSync, existsSync, linkSync, openSync, readdirSync, statSync, unlinkSync } from 'node:fs';
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

/** Creates `file` empty, mode 0600; refuses an existing file. A failure names `shown` (the name asked for). */
function createPrivate(file: string, shown: string): void {
  try {
    closeSync(openSync(file, 'wx', 0o600));
  } catch (err) {
    if ((err as { code?: string }).code === 'EEXIST') throw alreadyExists(shown);
    throw new BackupError(`${shown} cannot be written: ${describeFsError(err)}.`);
  }
}

const alreadyExists = (file: string) => new BackupError(`${file} already exists: remove it or choose another name.`);

function removeQuietly(file: string): void {
  try {
    unlinkSync(file);
  } catch {
    // Nothing was written there.
  }
}

/** `.NAME.partial-` beside `file`: with a process id after it, where that process's run writes it. */
const partialPrefix = (file: string) => `.${path.basename(file)}.partial-`;

const isRunning = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as { code?: string }).code === 'EPERM';
  }
};

/**
 * Writes a backup under a partial name beside `file` (`.NAME.partial-PID`), and gives it the
 * name `file` only once it is whole and checked (a hard link: never over a file that appeared
 * meanwhile). A run that is killed leaves no file under the name asked for (crash sweep: a
 * partial or empty copy was left there, and the next run refused the name); what it left is
 * removed by the next run for the same name.
 */
async function publishedWhenWhole<T>(file: string, write: (partial: string) => Promise<T> | T): Promise<T> {
  const dir = path.dirname(file);
  if (existsSync(file)) throw alreadyExists(file);
  if (!existsSync(dir)) throw new BackupError(`${file} cannot be written: the directory ${dir} does not exist.`);
  const prefix = partialPrefix(file);
  for (const name of readdirSync(dir)) {
    const pid = name.startsWith(prefix) ? /^(\d+)(-journal)?$/.exec(name.slice(prefix.length))?.[1] : undefined;
    if (pid !== undefined && !isRunning(Number(pid))) removeQuietly(path.join(dir, name));
  }
  const partial = path.join(dir, `${prefix}${process.pid}`);
  createPrivate(partial, file);
  try {
    const result = await write(partial);
    try {
      linkSync(partial, file);
    } catch (err) {
      if ((err as { code?: string }).code === 'EEXIST') throw alreadyExists(file);
      throw new BackupError(`${file} cannot be written: ${describeFsError(err)}.`);
    }
    return result;
  } finally {
    removeQuietly(partial);
    removeQuietly(`${partial}-journal`);
  }
}

const LAST_MIGRATION = 'select max(name) as name from kysely_migration';

export async function backupSqlite(dataDir: string, out: string): Promise<BackupResult> {
  const source = path.join(dataDir, SQLITE_FILE_NAME);
  if (!existsSync(source)) throw new BackupError(`There is no SQLite database at ${source}: is DATA_DIR the service's?`);
  const file = path.resolve(out);
  return publishedWhenWhole(file, (partial) => {
    try {
      const db = new SQLite(source, { readonly: true, fileMustExist: true });
      try {
        db.pragma('busy_timeout = 5000');
        db.prepare('vacuum into ?').run(partial);
      } finally {
        db.close();
      }
      const copy = new SQLite(partial, { readonly: true, fileMustExist: true });
      try {
        const check = copy.pragma('integrity_check', { simple: true });
        if (check !== 'ok') throw new BackupError(`The copy failed its integrity check: ${String(check)}`);
        const schema = (copy.prepare(LAST_MIGRATION).get() as { name: string | null } | undefined)?.name ?? null;
        return { file, bytes: statSync(partial).size, schema };
      } finally {
        copy.close();
      }
    } catch (err) {
      if (err instanceof BackupError) throw err;
      throw new BackupError(`The backup of ${source} failed: ${(err as Error).message}`);
    }
  });
}

/** The URL without its password, and the password (for PGPASSWORD). */
function splitPassword(databaseUrl: string): { url: string; password: string | null } {
  const url = new URL(databaseUrl);
  // As the URL's user part, or as its `password` option: either would be on pg_dump's command line.
  const password = url.password !== '' ? decodeURIComponent(url.password) : url.searchParams.get('password');
  url.password = '';
  // The other options as written: URLSearchParams would write a space as "+", which libpq reads as "+".
  const kept = url.search
    .slice(1)
    .split('&')
    .filter((pair) => pair !== '' && queryName(pair) !== 'password');
  url.search = kept.length > 0 ? `?${kept.join('&')}` : '';
  return { url: url.href, password };
}

/** The decoded name of a query string's `name=value` pair (null: not decodable). */
function queryName(pair: string): string | null {
  try {
    return decodeURIComponent(pair.split('=')[0]!.replace(/\+/g, ' '));
  } catch {
    return null;
  }
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
  const env: NodeJS.ProcessEnv = { ...process.env, ...(password !== null && { PGPASSWORD: password }) };
  return publishedWhenWhole(file, async (partial) => {
    const failure = await new Promise<string | null>((resolve) => {
      execFile(pgDump, ['--format=custom', '--file', partial, '--dbname', url], { env, maxBuffer: 16 * 1024 * 1024 }, (err, _stdout, stderr) => {
        if (!err) resolve(null);
        else if ((err as { code?: unknown }).code === 'ENOENT')
          resolve(
            `${pgDump} is not installed: install PostgreSQL's client tools (the server's major version or newer), e.g. apt-get install postgresql-client.`,
          );
        else resolve(`pg_dump failed: ${stderr.trim() || err.message}`);
      });
    });
    if (failure !== null) throw new BackupError(failure);
    return { file, bytes: statSync(partial).size, schema };
  });
}
