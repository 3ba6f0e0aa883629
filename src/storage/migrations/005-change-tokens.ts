import { sql, type Kysely, type Migration } from 'kysely';
import type { DialectName } from '../database.js';

// Frozen in time: never edit a migration that has shipped; add a new one.
// The change counters become change tokens: every write sets a fresh random value instead of
// adding one. Caches compare tokens for equality only, so this keeps them right where a
// counter would not: after a backup restore or a failover to a replica that lags, a counter
// runs through values it had before (and an instance may hold a cache entry under one of
// them); a random token does not come back. PostgreSQL's TRUNCATE, which fires no row or
// statement trigger for insert/update/delete, now sets a new token too.
const TABLES = ['copilots', 'api_keys'] as const;
const SAFE_INTEGER = '9007199254740991'; // tokens stay exact as JavaScript numbers
const RANDOM_TOKEN: Record<DialectName, string> = {
  postgres: `floor(random() * ${SAFE_INTEGER})::bigint`,
  sqlite: `abs(random() % ${SAFE_INTEGER})`,
};

/** Makes every write to `table` set its change_counters row to `expression`. */
async function bumpWith(db: Kysely<any>, dialect: DialectName, table: string, expression: string): Promise<void> {
  const update = `update change_counters set version = ${expression} where name = '${table}'`;
  if (dialect === 'postgres') {
    await sql.raw(`create or replace function bump_${table}_version() returns trigger language plpgsql as $$ begin ${update}; return null; end $$`).execute(db);
    return;
  }
  for (const event of ['insert', 'update', 'delete']) {
    await sql.raw(`drop trigger ${table}_changed_${event}`).execute(db);
    await sql.raw(`create trigger ${table}_changed_${event} after ${event} on ${table} begin ${update}; end`).execute(db);
  }
}

export function changeTokens(dialect: DialectName): Migration {
  return {
    async up(db: Kysely<any>) {
      for (const table of TABLES) {
        await bumpWith(db, dialect, table, RANDOM_TOKEN[dialect]);
        if (dialect === 'postgres') {
          await sql.raw(`create trigger ${table}_truncated after truncate on ${table} for each statement execute function bump_${table}_version()`).execute(db);
        }
        await sql.raw(`update change_counters set version = ${RANDOM_TOKEN[dialect]} where name = '${table}'`).execute(db);
      }
    },
    async down(db: Kysely<any>) {
      for (const table of TABLES) {
        if (dialect === 'postgres') await sql.raw(`drop trigger ${table}_truncated on ${table}`).execute(db);
        await bumpWith(db, dialect, table, 'version + 1');
      }
    },
  };
}
