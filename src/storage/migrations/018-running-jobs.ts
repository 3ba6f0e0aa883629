import { sql, type Kysely, type Migration } from 'kysely';

// Frozen in time: never edit a migration that has shipped; add a new one.
//
// Issue 13 §3: the fair queue serves first the bot with the fewest jobs running (then the one
// claimed least recently). Counting a bot's running jobs must not read its whole queue (a crawl
// queues thousands of links): this index holds only the claimed pending links, a few per worker.

export function runningJobs(): Migration {
  return {
    async up(db: Kysely<any>) {
      await sql`create index kb_links_running on kb_links (bot_id) where status = 'pending' and lease_owner is not null`.execute(db);
    },
    async down(db: Kysely<any>) {
      await sql`drop index kb_links_running`.execute(db);
    },
  };
}
