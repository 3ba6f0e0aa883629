import type { Kysely, Migration } from 'kysely';

// Frozen in time: never edit a migration that has shipped; add a new one.
//
// Issue 16 §2: crawls of a site (from a start URL, following links) or of a sitemap. A crawl
// is a row of `crawls` (its request, its robots.txt, its state, when its next page may be
// fetched, and the lease of the instance starting it); its frontier is `crawl_pages`: every
// URL it accepted, once (the key), with its depth and where it stands: `waiting` (not yet in
// the queue), `queued` (a pending knowledge-base link: the fair queue fetches it), then
// `indexed`, `failed`, `duplicate` (its canonical is another page), `skipped` or `cancelled`.
// `prior_status`/`prior_error`: what the bot's link was before the crawl queued it again (null:
// the crawl created it), so a cancel or a duplicate leaves the bot's own links as they were.
export function crawls(): Migration {
  return {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('crawls')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('bot_id', 'text', (c) => c.notNull())
        .addColumn('mode', 'text', (c) => c.notNull())
        .addColumn('start_url', 'text', (c) => c.notNull())
        .addColumn('origin', 'text', (c) => c.notNull())
        .addColumn('path_prefix', 'text', (c) => c.notNull())
        .addColumn('max_pages', 'integer', (c) => c.notNull())
        .addColumn('max_depth', 'integer', (c) => c.notNull())
        .addColumn('include_patterns', 'text', (c) => c.notNull())
        .addColumn('exclude_patterns', 'text', (c) => c.notNull())
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('discovered', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('blocked', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('robots_txt', 'text')
        .addColumn('crawl_delay_ms', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('next_fetch_at', 'text', (c) => c.notNull())
        .addColumn('error', 'text')
        .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('run_after', 'text', (c) => c.notNull())
        .addColumn('lease_owner', 'text')
        .addColumn('lease_expires_at', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('started_at', 'text')
        .addColumn('finished_at', 'text')
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('crawls_bot').on('crawls').columns(['bot_id', 'created_at', 'id']).execute();
      await db.schema.createIndex('crawls_state').on('crawls').columns(['state', 'run_after']).execute();
      await db.schema
        .createTable('crawl_pages')
        .addColumn('crawl_id', 'text', (c) => c.notNull())
        .addColumn('url', 'text', (c) => c.notNull())
        .addColumn('bot_id', 'text', (c) => c.notNull())
        .addColumn('seq', 'integer', (c) => c.notNull())
        .addColumn('depth', 'integer', (c) => c.notNull())
        .addColumn('via_canonical', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('fetched', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('prior_status', 'text')
        .addColumn('prior_error', 'text')
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('crawl_pages_pk', ['crawl_id', 'url'])
        .execute();
      // The frontier in order (waiting pages by depth, then as found) and the pages in the queue.
      await db.schema.createIndex('crawl_pages_frontier').on('crawl_pages').columns(['crawl_id', 'state', 'depth', 'seq']).execute();
      // A claimed link's crawl page (the worker looks it up by the link's bot and URL).
      await db.schema.createIndex('crawl_pages_link').on('crawl_pages').columns(['bot_id', 'url', 'state']).execute();
    },
    async down(db: Kysely<any>) {
      await db.schema.dropTable('crawl_pages').execute();
      await db.schema.dropTable('crawls').execute();
    },
  };
}
