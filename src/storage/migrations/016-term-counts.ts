import { sql, type Kysely, type Migration } from 'kysely';
import { countTermPassages, passageTerms } from '../../text/search-terms.js';
import type { DialectName } from '../database.js';

// Frozen in time: never edit a migration that has shipped; add a new one.
//
// Issue 16: a search's idf needs, for each of its terms, how many of the bot's visible passages
// hold it. Counted from the matches, a word held by most of a million passages cost the search
// its whole list (1.7 s on SQLite). kb_terms keeps the count per bot and term; the writes that
// make passages visible or take them away keep it (knowledge-base.repository.ts), and a search
// reads it in one indexed lookup, so it can leave a common word's passages unread (searchPassages).
//
// On SQLite a search looks up each passage holding a rarer word: by (bot_id, id) in an index that
// also holds term_count, the lookup reads a small index row instead of the passage's table row
// (its content). That index also serves what kb_passages_bot served, which it replaces.
//
// Existing knowledge bases are counted here from their visible passages' content, with the live
// `passageTerms` (the function that indexed them; see 007).

const BATCH = 500;

export function termCounts(dialect: DialectName): Migration {
  return {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('kb_terms')
        .addColumn('bot_id', 'text', (c) => c.notNull())
        .addColumn('term', 'text', (c) => c.notNull())
        .addColumn('passages', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('kb_terms_pk', ['bot_id', 'term'])
        .execute();
      if (dialect === 'sqlite') {
        await sql`create index kb_passages_bot_terms on kb_passages (bot_id, id, term_count)`.execute(db);
        await sql`drop index kb_passages_bot`.execute(db);
      }
      const counts = new Map<string, Map<string, number>>();
      let after = 0;
      for (;;) {
        const rows: Array<{ id: number | string; bot_id: string; content: string }> = (
          await sql<{ id: number | string; bot_id: string; content: string }>`
            select p.id, p.bot_id, p.content from kb_passages p
            where p.id > ${after}
              and not exists (select 1 from kb_hidden_passages x where x.link_id = p.link_id and x.version = p.version)
            order by p.id limit ${BATCH}`.execute(db)
        ).rows;
        for (const row of rows) {
          let bot = counts.get(row.bot_id);
          if (!bot) counts.set(row.bot_id, (bot = new Map()));
          countTermPassages([passageTerms(row.content).terms], bot);
        }
        if (rows.length < BATCH) break;
        after = Number(rows[rows.length - 1]!.id);
      }
      for (const [botId, terms] of counts) {
        const all = [...terms];
        for (let i = 0; i < all.length; i += BATCH)
          await db
            .insertInto('kb_terms')
            .values(all.slice(i, i + BATCH).map(([term, passages]) => ({ bot_id: botId, term, passages })))
            .execute();
      }
    },
    async down(db: Kysely<any>) {
      if (dialect === 'sqlite') {
        await sql`create index kb_passages_bot on kb_passages (bot_id)`.execute(db);
        await sql`drop index kb_passages_bot_terms`.execute(db);
      }
      await db.schema.dropTable('kb_terms').execute();
    },
  };
}
