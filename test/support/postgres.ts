import pg from 'pg';

/**
 * The PostgreSQL server the tests and the benchmark use, and throw-away databases on it.
 * Free of side effects, so that both test/support/databases.ts and bench/ can import it.
 */
export const POSTGRES_ADMIN_URL = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export async function postgresReachable(adminUrl = POSTGRES_ADMIN_URL): Promise<boolean> {
  const client = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    await client.query('select 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function adminQuery(adminUrl: string, text: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

/** Creates database `name` (a plain identifier) on the server; drop() removes it. */
export async function createThrowAwayDatabase(
  name: string,
  adminUrl = POSTGRES_ADMIN_URL,
  /** What follows `create database NAME` (e.g. `encoding 'LATIN1' template template0 …`). */
  createOptions = '',
): Promise<{ url: string; drop(): Promise<void> }> {
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`Not a plain database name: ${name}`);
  await adminQuery(adminUrl, `drop database if exists ${name} with (force)`);
  await adminQuery(adminUrl, `create database ${name} ${createOptions}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => adminQuery(adminUrl, `drop database if exists ${name} with (force)`) };
}
