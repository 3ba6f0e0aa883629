import type { Kysely, Migration } from 'kysely';

// Frozen in time: never edit a migration that has shipped; add a new one.
//
// The ingestion queue is fair across bots (issue 13 §3): a worker takes the next job of the
// bot whose jobs were claimed least recently, so each knowledge base remembers when one of
// its jobs was last claimed (null: never). The index serves a bot's oldest due job, and the
// count of its pending links that bounds what one bot may queue.
export function fairQueue(): Migration {
  return {
    async up(db: Kysely<any>) {
      await db.schema.alterTable('knowledge_bases').addColumn('last_claimed_at', 'text').execute();
      await db.schema.createIndex('kb_links_bot_queue').on('kb_links').columns(['bot_id', 'status', 'run_after']).execute();
    },
    async down(db: Kysely<any>) {
      await db.schema.dropIndex('kb_links_bot_queue').execute();
      await db.schema.alterTable('knowledge_bases').dropColumn('last_claimed_at').execute();
    },
  };
}
