import type { Kysely, Migration } from 'kysely';

// Frozen in time: never edit a migration that has shipped; add a new one.
//
// The audit log's filters by bot and by action (a key limited to a bot filters every page by
// it) read the whole log newest first until a page was full: no index led to a bot's or an
// action's entries. Each now has one, in the order pages are read. So do a copilot's webhook
// deliveries (a limited key's list of them, and every purge, read the whole table).
export function filterIndexes(): Migration {
  return {
    async up(db: Kysely<any>) {
      await db.schema.createIndex('audit_log_bot').on('audit_log').columns(['bot_id', 'id']).execute();
      await db.schema.createIndex('audit_log_action').on('audit_log').columns(['action', 'id']).execute();
      await db.schema.createIndex('webhook_deliveries_copilot').on('webhook_deliveries').columns(['copilot_id', 'created_at', 'id']).execute();
    },
    async down(db: Kysely<any>) {
      await db.schema.dropIndex('webhook_deliveries_copilot').execute();
      await db.schema.dropIndex('audit_log_action').execute();
      await db.schema.dropIndex('audit_log_bot').execute();
    },
  };
}
