import { sql, type Kysely, type Migration } from 'kysely';
import { blocksOf } from '../../domain/knowledgebase/search-index.js';
import type { DialectName } from '../database.js';

// Frozen in time: never edit a migration that has shipped; add a new one.
//
// Issue 16 §2, the crawl at 200 pages/s: kb_postings held one row per (segment, term), so a page
// of a few hundred distinct words was a few hundred rows, and a crawl's SQLite writer spent most
// of its time inserting them. kb_blocks holds a segment's blobs packed into blocks of about
// 4 KiB, in term order, each keyed by its first term (search-index.ts `blocksOf`): a page is a
// row or two. Existing segments are packed with the live `blocksOf` (the index must be stored as
// the searches read it); then kb_postings goes.
//
// The first term compares as UTF-8 bytes on both databases (PostgreSQL: collation "C"; SQLite's
// default), the order `blocksOf` sorts in, which the lookup "the block whose first term is the
// greatest not after the term" relies on.

export function postingsBlocks(dialect: DialectName): Migration {
  const pg = dialect === 'postgres';
  return {
    async up(db: Kysely<any>) {
      const blob = pg ? sql`bytea` : sql`blob`;
      const term = pg ? sql`text collate "C"` : sql`text`;
      const withoutRowid = pg ? sql`` : sql`without rowid`;
      await sql`create table kb_blocks (
        bot_id text not null,
        segment bigint not null,
        first_term ${term} not null,
        block ${blob} not null,
        primary key (bot_id, segment, first_term)
      ) ${withoutRowid}`.execute(db);
      // PostgreSQL: blocks out of line but never compressed, as kb_postings' blobs were (019).
      if (pg) await sql`alter table kb_blocks alter column block set storage external`.execute(db);

      const segments = await sql<{ bot_id: string; id: number | string }>`select bot_id, id from kb_segments order by id`.execute(db);
      for (const { bot_id, id } of segments.rows) {
        const rows = await sql<{ term: string; postings: Uint8Array }>`
          select term, postings from kb_postings where bot_id = ${bot_id} and segment = ${id}`.execute(db);
        const blocks = blocksOf(rows.rows.map((r) => [r.term, r.postings] as const));
        for (let i = 0; i < blocks.length; i += 500)
          await sql`insert into kb_blocks (bot_id, segment, first_term, block) values ${sql.join(
            blocks.slice(i, i + 500).map((b) => sql`(${bot_id}, ${id}, ${b.firstTerm}, ${b.block})`),
          )}`.execute(db);
      }
      await sql`drop table kb_postings`.execute(db);
    },
    async down() {
      throw new Error('Migration 020-postings-blocks does not go back: restore the backup taken before the upgrade (docs/deployment.md).');
    },
  };
}
