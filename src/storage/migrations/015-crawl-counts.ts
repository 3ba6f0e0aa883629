import { sql, type Kysely, type Migration } from 'kysely';
import type { DialectName } from '../database.js';

// Frozen in time: never edit a migration that has shipped; add a new one.
//
// Issue 16: a crawl's progress (GET …/crawls/:id, polled by the dashboard while it runs) grouped
// all its pages by state on every read: a scan of up to 50,000 rows, on SQLite synchronous on the
// event loop (26 ms at 100,000 rows, ad hoc), so a tenant polling a large crawl delayed every
// other request. The crawl row now keeps the counts the answer shows, and the database keeps
// them: triggers on crawl_pages, whatever statement adds or changes a page. Every transaction
// that changes a crawl's pages holds the crawl's row first (lockCrawl; a deleted bot's crawls
// are updated before their pages), so on PostgreSQL the triggers' updates never wait in the
// other order. Pages are deleted only once their crawl has finished (its counts final: the
// crawl job deletes them, CrawlRunner.sweep) or is gone (a purge): a deletion counts nothing.
//
//   pages_queued: waiting or queued; pages_indexed; pages_failed; pages_skipped: duplicate or
//   skipped; pages_fetched: pages whose fetch answered (crawl_pages.fetched).
const COUNTS = ['pages_queued', 'pages_indexed', 'pages_failed', 'pages_skipped', 'pages_fetched'] as const;

/** Each count's share of one page row (`p`): 0 or 1. */
function shares(p: string, pg: boolean): Record<(typeof COUNTS)[number], string> {
  const flag = (condition: string) => (pg ? `(${condition})::int` : `(${condition})`);
  return {
    pages_queued: flag(`${p}.state in ('waiting', 'queued')`),
    pages_indexed: flag(`${p}.state = 'indexed'`),
    pages_failed: flag(`${p}.state = 'failed'`),
    pages_skipped: flag(`${p}.state in ('duplicate', 'skipped')`),
    pages_fetched: `${p}.fetched`,
  };
}

export function crawlCounts(dialect: DialectName): Migration {
  const pg = dialect === 'postgres';
  return {
    async up(db: Kysely<any>) {
      for (const column of COUNTS) {
        await db.schema
          .alterTable('crawls')
          .addColumn(column, 'integer', (c) => c.notNull().defaultTo(0))
          .execute();
      }
      const page = shares('p', pg);
      const backfill = COUNTS.map((c) => `${c} = (select coalesce(sum(${page[c]}), 0) from crawl_pages p where p.crawl_id = crawls.id)`);
      await sql.raw(`update crawls set ${backfill.join(', ')}`).execute(db);

      const added = shares('new', pg);
      const removed = shares('old', pg);
      const changed = COUNTS.map((c) => `${c} = ${c} + ${added[c]} - ${removed[c]}`).join(', ');
      const when = 'old.state <> new.state or old.fetched <> new.fetched';
      if (pg) {
        await sql
          .raw(`create function crawl_pages_counts_changed() returns trigger language plpgsql as $$
            begin
              update crawls set ${changed} where id = new.crawl_id;
              return null;
            end $$`)
          .execute(db);
        // Pages come many at a time (a page's links): one update per crawl and statement.
        const sums = COUNTS.map((c) => `coalesce(sum(${shares('added', true)[c]}), 0) as ${c}`).join(', ');
        const set = COUNTS.map((c) => `${c} = k.${c} + g.${c}`).join(', ');
        await sql
          .raw(`create function crawl_pages_counts_added() returns trigger language plpgsql as $$
            begin
              update crawls k set ${set}
                from (select added.crawl_id, ${sums} from added group by added.crawl_id) g where k.id = g.crawl_id;
              return null;
            end $$`)
          .execute(db);
        await sql`create trigger crawl_pages_counts_insert after insert on crawl_pages
          referencing new table as added for each statement execute function crawl_pages_counts_added()`.execute(db);
        await sql
          .raw(`create trigger crawl_pages_counts_update after update of state, fetched on crawl_pages
            for each row when (${when}) execute function crawl_pages_counts_changed()`)
          .execute(db);
      } else {
        const set = COUNTS.map((c) => `${c} = ${c} + ${added[c]}`).join(', ');
        await sql
          .raw(`create trigger crawl_pages_counts_insert after insert on crawl_pages begin
            update crawls set ${set} where id = new.crawl_id; end`)
          .execute(db);
        await sql
          .raw(`create trigger crawl_pages_counts_update after update of state, fetched on crawl_pages when ${when} begin
            update crawls set ${changed} where id = new.crawl_id; end`)
          .execute(db);
      }
    },
    async down(db: Kysely<any>) {
      for (const event of ['insert', 'update']) {
        await sql.raw(`drop trigger crawl_pages_counts_${event}${pg ? ' on crawl_pages' : ''}`).execute(db);
      }
      if (pg) {
        for (const name of ['changed', 'added']) await sql.raw(`drop function crawl_pages_counts_${name}()`).execute(db);
      }
      for (const column of COUNTS) await db.schema.alterTable('crawls').dropColumn(column).execute();
    },
  };
}
