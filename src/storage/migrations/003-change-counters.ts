import { sql, type Kysely, type Migration } from 'kysely';
import type { DialectName } from '../database.js';

// Frozen in time: never edit a migration that has shipped; add a new one.
// A counter the database bumps on every change to the copilots table, so that a response
// built from that table can be cached under the version it was built at.
export function changeCounters(dialect: DialectName): Migration {
  return {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('change_counters')
        .addColumn('name', 'text', (c) => c.primaryKey())
        .addColumn('version', 'bigint', (c) => c.notNull())
        .execute();
      await db.insertInto('change_counters').values({ name: 'copilots', version: 0 }).execute();
      if (dialect === 'postgres') {
        await sql`create function bump_copilots_version() returns trigger language plpgsql as $$
          begin update change_counters set version = version + 1 where name = 'copilots'; return null; end $$`.execute(db);
        await sql`create trigger copilots_changed after insert or update or delete on copilots
          for each statement execute function bump_copilots_version()`.execute(db);
      } else {
        for (const event of ['insert', 'update', 'delete']) {
          await sql
            .raw(
              `create trigger copilots_changed_${event} after ${event} on copilots begin
                 update change_counters set version = version + 1 where name = 'copilots'; end`,
            )
            .execute(db);
        }
      }
    },
    async down(db: Kysely<any>) {
      if (dialect === 'postgres') {
        await sql`drop trigger copilots_changed on copilots`.execute(db);
        await sql`drop function bump_copilots_version()`.execute(db);
      } else {
        for (const event of ['insert', 'update', 'delete']) await sql.raw(`drop trigger copilots_changed_${event}`).execute(db);
      }
      await db.schema.dropTable('change_counters').execute();
    },
  };
}
