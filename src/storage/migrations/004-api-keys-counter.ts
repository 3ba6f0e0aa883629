import { sql, type Kysely, type Migration } from 'kysely';
import type { DialectName } from '../database.js';

// Frozen in time: never edit a migration that has shipped; add a new one.
// A second change counter, bumped by the database on every change to the api_keys table,
// so that a key row read once can be reused for as long as the counter has not moved
// (a creation or revocation on any instance moves it).
export function apiKeysCounter(dialect: DialectName): Migration {
  return {
    async up(db: Kysely<any>) {
      await db.insertInto('change_counters').values({ name: 'api_keys', version: 0 }).execute();
      if (dialect === 'postgres') {
        await sql`create function bump_api_keys_version() returns trigger language plpgsql as $$
          begin update change_counters set version = version + 1 where name = 'api_keys'; return null; end $$`.execute(db);
        await sql`create trigger api_keys_changed after insert or update or delete on api_keys
          for each statement execute function bump_api_keys_version()`.execute(db);
      } else {
        for (const event of ['insert', 'update', 'delete']) {
          await sql
            .raw(
              `create trigger api_keys_changed_${event} after ${event} on api_keys begin
                 update change_counters set version = version + 1 where name = 'api_keys'; end`,
            )
            .execute(db);
        }
      }
    },
    async down(db: Kysely<any>) {
      if (dialect === 'postgres') {
        await sql`drop trigger api_keys_changed on api_keys`.execute(db);
        await sql`drop function bump_api_keys_version()`.execute(db);
      } else {
        for (const event of ['insert', 'update', 'delete']) await sql.raw(`drop trigger api_keys_changed_${event}`).execute(db);
      }
      await db.deleteFrom('change_counters').where('name', '=', 'api_keys').execute();
    },
  };
}
