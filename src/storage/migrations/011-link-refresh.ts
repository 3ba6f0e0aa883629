import { sql, type Kysely, type Migration } from 'kysely';

// Frozen in time: never edit a migration that has shipped; add a new one.
//
// Issue 16 §2: a knowledge-base link stays current. Each link keeps the validators of its last
// fetch (`etag`, `last_modified`), which a later fetch sends back as a conditional GET; the
// SHA-256 of the passages it last indexed (`content_sha256`), so a page fetched again with the
// same text writes nothing; whether those passages were stored redacted (`redacted`, the
// copilot's enhanced_privacy); when it was last checked (`checked_at`); and when its next check
// is due (`check_after`, null: none scheduled). The check queue is served by the ingestion
// worker from these two indexes: due checks across bots, and a bot's due checks in order.
// The partial index finds the links of a smart_sync copilot that have no check scheduled yet.
export function linkRefresh(): Migration {
  return {
    async up(db: Kysely<any>) {
      for (const column of ['etag', 'last_modified', 'content_sha256', 'checked_at', 'check_after']) {
        await db.schema.alterTable('kb_links').addColumn(column, 'text').execute();
      }
      await db.schema
        .alterTable('kb_links')
        .addColumn('redacted', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
      await db.schema.createIndex('kb_links_check_due').on('kb_links').column('check_after').execute();
      await db.schema.createIndex('kb_links_bot_check').on('kb_links').columns(['bot_id', 'check_after']).execute();
      await db.schema.createIndex('kb_links_unscheduled').on('kb_links').column('bot_id').where(sql.ref('check_after'), 'is', null).execute();
    },
    async down(db: Kysely<any>) {
      await db.schema.dropIndex('kb_links_unscheduled').execute();
      await db.schema.dropIndex('kb_links_bot_check').execute();
      await db.schema.dropIndex('kb_links_check_due').execute();
      for (const column of ['redacted', 'check_after', 'checked_at', 'content_sha256', 'last_modified', 'etag']) {
        await sql`alter table kb_links drop column ${sql.ref(column)}`.execute(db);
      }
    },
  };
}
