import { sql, type Kysely, type Migration } from 'kysely';
import type { DialectName } from '../database.js';

// Frozen in time: never edit a migration that has shipped; add a new one.
//
// Issue 16 §2, search at 1,000,000 passages on PostgreSQL: a word most passages hold is a block of
// about a megabyte per large segment, and a search read it whole (sent as hex, parsed again) to
// decode a few of its chunks. kb_blocks.heads keeps, for a block that is one large term in chunks,
// its chunk headers alone (search-index.ts `headsOf`): a search reads those and then only the
// chunks that may rank (docs/search-index.md, "Heads"). Null for every other block, and for blocks
// written before this migration until a merge writes them again: those are read whole.

export function chunkHeads(dialect: DialectName): Migration {
  const pg = dialect === 'postgres';
  return {
    async up(db: Kysely<any>) {
      await sql`alter table kb_blocks add column heads ${pg ? sql`bytea` : sql`blob`}`.execute(db);
      // Out of line and never compressed, as the blocks (020): a read of a few chunks by
      // `substring` then reads only their part of the block.
      if (pg) await sql`alter table kb_blocks alter column heads set storage external`.execute(db);
    },
    async down(db: Kysely<any>) {
      await sql`alter table kb_blocks drop column heads`.execute(db);
    },
  };
}
