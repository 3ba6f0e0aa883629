import { sql, type Kysely, type Migration } from 'kysely';
import { countTermPassages, encodeTermPassages, passageTerms } from '../../text/search-terms.js';
import type { DialectName } from '../database.js';

// Frozen in time: never edit a migration that has shipped; add a new one.
//
// Issue 16: a search's idf needs, for each of its terms, how many of the bot's visible passages
// hold it. Counted from the matches, a word held by most of a million passages cost the search
// its whole list (1.7 s on SQLite). kb_terms keeps the count per bot and term, and a search
// reads it in one indexed lookup, so it can leave a common word's passages unread
// (searchPassages). kb_link_terms keeps the same counts per link, for its visible passages: what
// kb_terms loses when that set is replaced or deleted, without reading the passages again. The
// writes that change a link's visible set keep both (knowledge-base.repository.ts).
//
// On SQLite a search looks up each passage holding a rarer word: by (bot_id, id) in an index that
// also holds term_count, the lookup reads a small index row instead of the passage's table row
// (its content). That index also serves what kb_passages_bot served, which it replaces.
//
// Existing knowledge bases are counted here from their visible passages' content, with the live
// `passageTerms` (the function that indexed them; see 007).

const LINKS = 100;
const ROWS = 500;

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
      await db.schema
        .createTable('kb_link_terms')
        .addColumn('link_id', 'text', (c) => c.primaryKey())
        .addColumn('bot_id', 'text', (c) => c.notNull())
        .addColumn('term_passages', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('kb_link_terms_bot').on('kb_link_terms').column('bot_id').execute();
      if (dialect === 'sqlite') {
        await sql`create index kb_passages_bot_terms on kb_passages (bot_id, id, term_count)`.execute(db);
        await sql`drop index kb_passages_bot`.execute(db);
      }
      const perBot = new Map<string, Map<string, number>>();
      let after = '';
      for (;;) {
        const links: Array<{ id: string; bot_id: string; version: number | string }> = await db
          .selectFrom('kb_links')
          .select(['id', 'bot_id', 'version'])
          .where('id', '>', after)
          .orderBy('id')
          .limit(LINKS)
          .execute();
        for (const link of links) {
          const { rows } = await sql<{ content: string }>`
            select p.content from kb_passages p
            where p.link_id = ${link.id} and p.version = ${link.version}
              and not exists (select 1 from kb_hidden_passages x where x.link_id = p.link_id and x.version = p.version)`.execute(db);
          if (rows.length === 0) continue;
          const counts = countTermPassages(rows.map((r) => passageTerms(r.content).terms));
          await db
            .insertInto('kb_link_terms')
            .values({ link_id: link.id, bot_id: link.bot_id, term_passages: encodeTermPassages(counts) })
            .execute();
          const bot = perBot.get(link.bot_id) ?? new Map<string, number>();
          for (const [term, n] of counts) bot.set(term, (bot.get(term) ?? 0) + n);
          perBot.set(link.bot_id, bot);
        }
        if (links.length < LINKS) break;
        after = links[links.length - 1]!.id;
      }
      for (const [botId, terms] of perBot) {
        const all = [...terms];
        for (let i = 0; i < all.length; i += ROWS)
          await db
            .insertInto('kb_terms')
            .values(all.slice(i, i + ROWS).map(([term, passages]) => ({ bot_id: botId, term, passages })))
            .execute();
      }
    },
    async down(db: Kysely<any>) {
      if (dialect === 'sqlite') {
        await sql`create index kb_passages_bot on kb_passages (bot_id)`.execute(db);
        await sql`drop index kb_passages_bot_terms`.execute(db);
      }
      await db.schema.dropTable('kb_link_terms').execute();
      await db.schema.dropTable('kb_terms').execute();
    },
  };
}
