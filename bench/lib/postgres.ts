import { createThrowAwayDatabase, postgresReachable as reachable } from '../../test/support/postgres.js';

export const POSTGRES_ADMIN_URL = process.env.BENCH_POSTGRES_URL ?? process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export const postgresReachable = (): Promise<boolean> => reachable(POSTGRES_ADMIN_URL);

let counter = 0;

/** A throw-away database on the server; drop() removes it. */
export function createBenchDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  return createThrowAwayDatabase(`cms_bench_${process.pid}_${counter++}`, POSTGRES_ADMIN_URL);
}
