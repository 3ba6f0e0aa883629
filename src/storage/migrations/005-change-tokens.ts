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

export function changeTokens(dialect: DialectName): Migration {
  return {
    async up(db: Kysely<any>) {
      for (const table of TABLES) {
        if (dialect === 'postgres') {
          await sql
            .raw(
              `create or replace function bump_${table}_version() returns trigger language plpgsql as $$
                 begin update change_counters set version = floor(random() * ${SAFE_INTEGER})::bigint where name = '${table}'; return null; end $$`,
            )
            .execute(db);
          await sql.raw(`create trigger ${table}_truncated after truncate on ${table} for each statement execute function bump_${table}_version()`).execute(db);
          await sql.raw(`update change_counters set version = floor(random() * ${SAFE_INTEGER})::bigint where name = '${table}'`).execute(db);
        } else {
          for (const event of ['insert', 'update', 'delete']) {
            await sql.raw(`drop trigger ${table}_changed_${event}`).execute(db);
            await sql
              .raw(
                `create trigger ${table}_changed_${event} after ${event} on ${table} begin
                   update change_counters set version = abs(random() % ${SAFE_INTEGER}) where name = '${table}'; end`,
              )
              .execute(db);
          }
          await sql.raw(`update change_counters set version = abs(random() % ${SAFE_INTEGER}) where name = '${table}'`).execute(db);
        }
      }
    },
    async down(db: Kysely<any>) {
      for (const table of TABLES) {
        if (dialect === 'postgres') {
          await sql.raw(`drop trigger ${table}_truncated on ${table}`).execute(db);
          await sql
            .raw(
              `create or replace function bump_${table}_version() returns trigger language plpgsql as $$
                 begin update change_counters set version = version + 1 where name = '${table}'; return null; end $$`,
            )
            .execute(db);
        } else {
          for (const event of ['insert', 'update', 'delete']) {
            await sql.raw(`drop trigger ${table}_changed_${event}`).execute(db);
            await sql
              .raw(
                `create trigger ${table}_changed_${event} after ${event} on ${table} begin
                   update change_counters set version = version + 1 where name = '${table}'; end`,
              )
              .execute(db);
          }
        }
      }
    },
  };
}
