import { sql, type Kysely, type Migration } from 'kysely';
import type { DialectName } from '../database.js';
import { changeCounters } from './003-change-counters.js';
import { changeTokens } from './004-change-tokens.js';

// Frozen in time: never edit a migration that has shipped; add a new one.
// Requests read the key and the copilots from their tables every time, so the change tokens
// that migrations 003 and 004 made every write set (for caches keyed by them) are dropped
// with their triggers.
const TABLES = ['copilots', 'api_keys'] as const;

export function plainReadPath(dialect: DialectName): Migration {
  return {
    async up(db: Kysely<any>) {
      for (const table of TABLES) {
        if (dialect === 'postgres') {
          await sql.raw(`drop trigger if exists ${table}_changed on ${table}`).execute(db);
          await sql.raw(`drop trigger if exists ${table}_truncated on ${table}`).execute(db);
          await sql.raw(`drop function if exists bump_${table}_version()`).execute(db);
        } else {
          for (const event of ['insert', 'update', 'delete']) await sql.raw(`drop trigger if exists ${table}_changed_${event}`).execute(db);
        }
      }
      await db.schema.dropTable('change_counters').ifExists().execute();
    },
    async down(db: Kysely<any>) {
      await changeCounters(dialect).up(db);
      await changeTokens(dialect).up(db);
    },
  };
}
