import { sql, type Kysely, type Migration } from 'kysely';
import type { DialectName } from '../database.js';

// Frozen in time: never edit a migration that has shipped; add a new one.
//
// Issue 16: the bot's totals — its passages and their search terms — were summed over its
// links (kb_links.passages, kb_links.term_count) by every search (bm25's N and average
// length) and twice by every page stored (the passage limit): a read of all its links each
// time, which a crawl of 10,000 pages made quadratic. The knowledge base row now keeps the two
// sums, and the database keeps them: triggers on kb_links, whatever statement changes a link's
// counts. On PostgreSQL a change of a link's counts thus updates the knowledge base row; every
// transaction that changes them takes that row's lock before the links' (storing a page:
// lockBotForStore; deleting links: lockKnowledgeBase), so two never wait for each other.
export function knowledgeBaseTotals(dialect: DialectName): Migration {
  return {
    async up(db: Kysely<any>) {
      await db.schema
        .alterTable('knowledge_bases')
        .addColumn('passages', 'bigint', (c) => c.notNull().defaultTo(0))
        .execute();
      await db.schema
        .alterTable('knowledge_bases')
        .addColumn('term_count', 'bigint', (c) => c.notNull().defaultTo(0))
        .execute();
      await sql`update knowledge_bases set
        passages = (select coalesce(sum(l.passages), 0) from kb_links l where l.bot_id = knowledge_bases.bot_id),
        term_count = (select coalesce(sum(l.term_count), 0) from kb_links l where l.bot_id = knowledge_bases.bot_id)`.execute(db);
      if (dialect === 'postgres') {
        await sql`create function kb_links_totals() returns trigger language plpgsql as $$
          begin
            if tg_op = 'INSERT' then
              update knowledge_bases set passages = passages + new.passages, term_count = term_count + new.term_count where bot_id = new.bot_id;
            else
              update knowledge_bases set passages = passages + new.passages - old.passages, term_count = term_count + new.term_count - old.term_count
                where bot_id = new.bot_id;
            end if;
            return null;
          end $$`.execute(db);
        // Deletions come many links at a time: one update per bot and statement.
        await sql`create function kb_links_totals_deleted() returns trigger language plpgsql as $$
          begin
            update knowledge_bases k set passages = k.passages - g.passages, term_count = k.term_count - g.term_count
              from (select bot_id, sum(passages) as passages, sum(term_count) as term_count from gone group by bot_id) g
              where k.bot_id = g.bot_id and (g.passages <> 0 or g.term_count <> 0);
            return null;
          end $$`.execute(db);
        await sql`create trigger kb_links_totals_insert after insert on kb_links
          for each row when (new.passages <> 0 or new.term_count <> 0) execute function kb_links_totals()`.execute(db);
        await sql`create trigger kb_links_totals_update after update of passages, term_count on kb_links
          for each row when (old.passages <> new.passages or old.term_count <> new.term_count) execute function kb_links_totals()`.execute(db);
        await sql`create trigger kb_links_totals_delete after delete on kb_links
          referencing old table as gone for each statement execute function kb_links_totals_deleted()`.execute(db);
      } else {
        await sql`create trigger kb_links_totals_insert after insert on kb_links when new.passages <> 0 or new.term_count <> 0 begin
          update knowledge_bases set passages = passages + new.passages, term_count = term_count + new.term_count where bot_id = new.bot_id; end`.execute(db);
        await sql`create trigger kb_links_totals_update after update of passages, term_count on kb_links
          when old.passages <> new.passages or old.term_count <> new.term_count begin
          update knowledge_bases set passages = passages + new.passages - old.passages, term_count = term_count + new.term_count - old.term_count
            where bot_id = new.bot_id; end`.execute(db);
        await sql`create trigger kb_links_totals_delete after delete on kb_links when old.passages <> 0 or old.term_count <> 0 begin
          update knowledge_bases set passages = passages - old.passages, term_count = term_count - old.term_count where bot_id = old.bot_id; end`.execute(db);
      }
    },
    async down(db: Kysely<any>) {
      for (const event of ['insert', 'update', 'delete'])
        await sql.raw(`drop trigger kb_links_totals_${event}${dialect === 'postgres' ? ' on kb_links' : ''}`).execute(db);
      if (dialect === 'postgres') {
        await sql`drop function kb_links_totals()`.execute(db);
        await sql`drop function kb_links_totals_deleted()`.execute(db);
      }
      await db.schema.alterTable('knowledge_bases').dropColumn('term_count').execute();
      await db.schema.alterTable('knowledge_bases').dropColumn('passages').execute();
    },
  };
}
