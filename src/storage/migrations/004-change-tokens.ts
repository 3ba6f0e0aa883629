import { sql, type Kysely, type Migration } from 'kysely';
import type { DialectName } from '../database.js';

// Frozen in time: never edit a migration that has shipped; add a new one.
// Change tokens for `copilots` (whose counter migration 003 made) and `api_keys`: every write
// sets a fresh random value instead of adding one, so that a key row or a list answer read
// once can be reused for as long as its table's token stays the same. Caches compare tokens
// for equality only; a counter would not do: after a backup restore or a failover to a
// replica that lags it runs through values it had before (and an instance may hold a cache
// entry under one of them), where a random token does not come back. On PostgreSQL a
// TRUNCATE, which fires no insert/update/delete trigger, sets a new token too.
const TABLES = ['copilots', 'api_keys'] as const;
const SAFE_INTEGER = '9007199254740991'; // tokens stay exact as JavaScript numbers
const RANDOM_TOKEN: Record<DialectName, string> = {
  postgres: `floor(random() * ${SAFE_INTEGER})::bigint`,
  sqlite: `abs(random() % ${SAFE_INTEGER})`,
};

/** Makes every write to `table` set its change_counters row to `expression` (replacing what did so before). */
async function bumpWith(db: Kysely<any>, dialect: DialectName, table: string, expression: string): Promise<void> {
  const update = `update change_counters set version = ${expression} where name = '${table}'`;
  if (dialect === 'postgres') {
    await sql.raw(`create or replace function bump_${table}_version() returns trigger language plpgsql as $$ begin ${update}; return null; end $$`).execute(db);
    await sql.raw(`drop trigger if exists ${table}_changed on ${table}`).execute(db);
    await sql
      .raw(`create trigger ${table}_changed after insert or update or delete on ${table} for each statement execute function bump_${table}_version()`)
      .execute(db);
    return;
  }
  for (const event of ['insert', 'update', 'delete']) {
    await sql.raw(`drop trigger if exists ${table}_changed_${event}`).execute(db);
    await sql.raw(`create trigger ${table}_changed_${event} after ${event} on ${table} begin ${update}; end`).execute(db);
  }
}

export function changeTokens(dialect: DialectName): Migration {
  return {
    async up(db: Kysely<any>) {
      await db.insertInto('change_counters').values({ name: 'api_keys', version: 0 }).execute();
      for (const table of TABLES) {
        await bumpWith(db, dialect, table, RANDOM_TOKEN[dialect]);
        if (dialect === 'postgres') {
          await sql.raw(`create trigger ${table}_truncated after truncate on ${table} for each statement execute function bump_${table}_version()`).execute(db);
        }
        await sql.raw(`update change_counters set version = ${RANDOM_TOKEN[dialect]} where name = '${table}'`).execute(db);
      }
    },
    async down(db: Kysely<any>) {
      if (dialect === 'postgres') {
        for (const table of TABLES) await sql.raw(`drop trigger ${table}_truncated on ${table}`).execute(db);
        await sql`drop trigger api_keys_changed on api_keys`.execute(db);
        await sql`drop function bump_api_keys_version()`.execute(db);
      } else {
        for (const event of ['insert', 'update', 'delete']) await sql.raw(`drop trigger api_keys_changed_${event}`).execute(db);
      }
      await db.deleteFrom('change_counters').where('name', '=', 'api_keys').execute();
      await bumpWith(db, dialect, 'copilots', 'version + 1'); // as migration 003 left it
    },
  };
}
