import { sql, type Kysely, type Migration } from 'kysely';
import { segmentOf, summaryOf } from '../../domain/knowledgebase/search-index.js';
import { passageTerms } from '../../text/search-terms.js';
import type { DialectName } from '../database.js';

// Frozen in time: never edit a migration that has shipped; add a new one.
//
// Issue 16 §2: knowledge-base search at 1,000,000 passages. SQLite's FTS5 index and PostgreSQL's
// tsvector with its GIN index read every (passage, term) entry of a query's words: a word most
// passages hold cost seconds. The service keeps an index of its own instead (docs/search-index.md):
// each bot's postings as one blob per (segment, term) in kb_postings, a segment being what one
// write added or what a merge of segments left (kb_segments), and the bot's deleted passages
// still held by some segment as one blob of ids (kb_excluded).
//
// Existing passages are indexed from their content with the live `passageTerms` and `segmentOf`
// (the index must be built as the searches read it), a bot's passages in id order, SEGMENT
// passages a segment; then FTS5 (its table, vocabulary table, garbage table and triggers) and the
// tsvector (its column, GIN index and trigger) are dropped, and with them kb_passages.terms,
// which only their triggers read.

const SEGMENT = 4096;

export function searchIndex(dialect: DialectName): Migration {
  const pg = dialect === 'postgres';
  return {
    async up(db: Kysely<any>) {
      const id = pg ? sql`bigint generated always as identity primary key` : sql`integer primary key autoincrement`;
      const blob = pg ? sql`bytea` : sql`blob`;
      const withoutRowid = pg ? sql`` : sql`without rowid`;
      await sql`create table kb_segments (
        id ${id},
        bot_id text not null,
        passages integer not null,
        min_id bigint not null,
        max_id bigint not null,
        created_at text not null
      )`.execute(db);
      await sql`create index kb_segments_bot on kb_segments (bot_id, id)`.execute(db);
      // Keyed by segment before term: a segment's rows are written together, next to each other
      // (a term first would scatter a page's few hundred rows over the whole table, each a page
      // of its own to write); a search looks each term up in each of its bot's segments.
      await sql`create table kb_postings (
        bot_id text not null,
        segment bigint not null,
        term text not null,
        postings ${blob} not null,
        primary key (bot_id, segment, term)
      ) ${withoutRowid}`.execute(db);
      // PostgreSQL: postings out of line but never compressed (varint deltas hardly compress;
      // compressing every large blob written cost the server, and decompressing it every read).
      if (pg) await sql`alter table kb_postings alter column postings set storage external`.execute(db);
      await sql`create table kb_excluded (
        bot_id text primary key,
        ids ${blob} not null,
        count integer not null
      )`.execute(db);

      const now = new Date().toISOString();
      const bots = await sql<{ bot_id: string }>`select distinct bot_id from kb_passages order by bot_id`.execute(db);
      for (const { bot_id } of bots.rows) {
        let after = 0;
        for (;;) {
          const rows = await sql<{ id: number | string; content: string; term_count: number }>`
            select id, content, term_count from kb_passages where bot_id = ${bot_id} and id > ${after} order by id limit ${SEGMENT}`.execute(db);
          if (rows.rows.length === 0) break;
          const passages = rows.rows.map((r) => ({ id: Number(r.id), terms: passageTerms(r.content).terms, term_count: Number(r.term_count) }));
          after = passages[passages.length - 1]!.id;
          const summary = summaryOf(passages);
          if (summary.passages === 0) continue;
          const inserted = await sql<{ id: number | string }>`insert into kb_segments (bot_id, passages, min_id, max_id, created_at)
            values (${bot_id}, ${summary.passages}, ${summary.minId}, ${summary.maxId}, ${now}) returning id`.execute(db);
          const segment = Number(inserted.rows[0]!.id);
          const entries = [...segmentOf(passages)];
          for (let i = 0; i < entries.length; i += 2000)
            await sql`insert into kb_postings (bot_id, term, segment, postings) values ${sql.join(
              entries.slice(i, i + 2000).map(([term, postings]) => sql`(${bot_id}, ${term}, ${segment}, ${postings})`),
            )}`.execute(db);
        }
      }

      if (pg) {
        await sql`drop trigger kb_passages_index on kb_passages`.execute(db);
        await sql`drop function kb_passages_index()`.execute(db);
        await sql`alter table kb_passages drop column tsv, drop column terms`.execute(db); // and the GIN index
      } else {
        for (const trigger of ['kb_passages_ai', 'kb_passages_ad', 'kb_passages_terms_required'])
          await sql.raw(`drop trigger if exists ${trigger}`).execute(db);
        await sql`drop table kb_passages_fts_instance`.execute(db);
        await sql`drop table kb_passages_fts`.execute(db);
        await sql`drop table kb_fts_garbage`.execute(db);
        await sql`alter table kb_passages drop column terms`.execute(db);
      }
    },
    async down() {
      throw new Error('Migration 019-search-index does not go back: restore the backup taken before the upgrade (docs/deployment.md).');
    },
  };
}
