import { sql, type Kysely, type Migration } from 'kysely';
import { passageTerms } from '../../text/search-terms.js';
import type { DialectName } from '../database.js';
import { searchTermPrefix } from '../knowledge-base.repository.js';

// Frozen in time: never edit a migration that has shipped; add a new one.
//
// SQLite's FTS5 index is one for every bot, and a search reads each of its words' entries
// (kb_passages_fts_instance, by term) before it keeps its own bot's passages: a copilot's search
// of a word another copilot's large knowledge base holds read all of that copilot's entries too,
// so one tenant's data slowed every other tenant's searches. Each term is now indexed under its
// bot: prefixed with the first 8 hex digits of the bot's id (`searchTermPrefix`,
// knowledge-base.repository.ts), so a search reads its own bot's entries. Two bots whose ids
// share those digits share entries, as every bot did before: slower, never wrong (a search keeps
// its bot's passages). PostgreSQL's GIN index is looked up with the bot's passages already: no
// change there.
//
// Existing passages are re-indexed from their content (the terms are not kept in kb_passages),
// with the live `passageTerms` and `searchTermPrefix`, as 007 does: the index must be built as
// the queries read it. The trigger's SQL is this migration's own.

const BATCH = 500;

/** The bot's prefix, as the trigger writes it (and `searchTermPrefix` computes it). */
const PREFIX = `lower(substr(replace(new.bot_id, '-', ''), 1, 8))`;

export function searchTermsPerBot(dialect: DialectName): Migration {
  return {
    async up(db: Kysely<any>) {
      if (dialect !== 'sqlite') return;
      // The terms are separated by single spaces: each one gets the prefix.
      await newIndex(
        db,
        `insert into kb_passages_fts(rowid, content)
          values (new.id, case when new.terms = '' then '' else ${PREFIX} || replace(new.terms, ' ', ' ' || ${PREFIX}) end)`,
      );
      await reindex(db, (row, terms) => (terms === '' ? '' : terms.replace(/^| /g, (m) => `${m}${searchTermPrefix(row.bot_id)}`)));
    },
    async down(db: Kysely<any>) {
      if (dialect !== 'sqlite') return;
      // Back to one entry per term for every bot (007's trigger and index).
      await newIndex(db, 'insert into kb_passages_fts(rowid, content) values (new.id, new.terms)');
      await reindex(db, (_row, terms) => terms);
    },
  };
}

/**
 * An empty FTS5 index (and its fts5vocab table) in place of the one there, and the trigger that
 * indexes a new passage with `index` (then clears its terms, as 007's did).
 */
async function newIndex(db: Kysely<any>, index: string): Promise<void> {
  await sql`drop trigger kb_passages_ai`.execute(db);
  await sql`drop table kb_passages_fts_instance`.execute(db);
  await sql`drop table kb_passages_fts`.execute(db);
  await sql`delete from kb_fts_garbage`.execute(db); // entries of the index just dropped
  await sql`create virtual table kb_passages_fts using fts5(content, content='', contentless_delete=1, tokenize='ascii')`.execute(db);
  await sql`insert into kb_passages_fts(kb_passages_fts, rank) values ('automerge', 0)`.execute(db);
  await sql`create virtual table kb_passages_fts_instance using fts5vocab(kb_passages_fts, instance)`.execute(db);
  await sql
    .raw(`create trigger kb_passages_ai after insert on kb_passages begin ${index}; update kb_passages set terms = null where id = new.id; end`)
    .execute(db);
}

/**
 * Indexes every passage again, BATCH at a time in id order, under `indexed(row, terms)`: its
 * search terms (`passageTerms` of its content; the terms are not kept in kb_passages) as written
 * to the index. (007 has its own copy: a migration that has shipped is never edited.)
 */
async function reindex(db: Kysely<any>, indexed: (row: { bot_id: string }, terms: string) => string): Promise<void> {
  let after = 0;
  for (;;) {
    const rows: Array<{ id: number | string; bot_id: string; content: string }> = await db
      .selectFrom('kb_passages')
      .select(['id', 'bot_id', 'content'])
      .where('id', '>', after)
      .orderBy('id')
      .limit(BATCH)
      .execute();
    if (rows.length > 0) {
      const values = rows.map((r) => sql`(${Number(r.id)}, ${indexed(r, passageTerms(r.content).terms)})`);
      await sql`insert into kb_passages_fts(rowid, content) values ${sql.join(values)}`.execute(db);
    }
    if (rows.length < BATCH) break;
    after = Number(rows[rows.length - 1]!.id);
  }
}
