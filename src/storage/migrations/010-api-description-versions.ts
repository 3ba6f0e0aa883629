import type { Kysely, Migration } from 'kysely';
import type { DialectName } from '../database.js';

// Frozen in time: never edit a migration that has shipped; add a new one.
//
// Issue 16 §1: every accepted version of a copilot's API description (uploaded, or fetched by
// the sync job from its swagger_url), the changes between consecutive versions, and each
// syncing copilot's schedule and lease (so one instance fetches it at a time), and the
// webhook deliveries of breaking changes.
export function apiDescriptionVersions(dialect: DialectName): Migration {
  const binary = dialect === 'postgres' ? 'bytea' : 'blob';
  return {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('api_description_versions')
        .addColumn('copilot_id', 'text', (c) => c.notNull())
        .addColumn('version', 'integer', (c) => c.notNull())
        .addColumn('sha256', 'text', (c) => c.notNull())
        .addColumn('size', 'integer', (c) => c.notNull())
        .addColumn('media_type', 'text', (c) => c.notNull())
        .addColumn('content', binary, (c) => c.notNull())
        .addColumn('source', 'text', (c) => c.notNull())
        .addColumn('url', 'text')
        .addColumn('breaking_changes', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('other_changes', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('api_description_versions_pk', ['copilot_id', 'version'])
        .execute();
      await db.schema
        .createTable('api_description_changes')
        .addColumn('copilot_id', 'text', (c) => c.notNull())
        .addColumn('version', 'integer', (c) => c.notNull())
        .addColumn('seq', 'integer', (c) => c.notNull())
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('breaking', 'integer', (c) => c.notNull())
        .addColumn('method', 'text')
        .addColumn('path', 'text')
        .addColumn('message', 'text', (c) => c.notNull())
        .addColumn('before_value', 'text')
        .addColumn('after_value', 'text')
        .addPrimaryKeyConstraint('api_description_changes_pk', ['copilot_id', 'version', 'seq'])
        .execute();
      await db.schema
        .createTable('api_description_sync')
        .addColumn('copilot_id', 'text', (c) => c.primaryKey())
        .addColumn('next_sync_at', 'text', (c) => c.notNull())
        .addColumn('lease_owner', 'text')
        .addColumn('lease_expires_at', 'text')
        .addColumn('etag', 'text')
        .addColumn('last_modified', 'text')
        .addColumn('last_synced_at', 'text')
        .addColumn('last_outcome', 'text')
        .addColumn('last_error', 'text')
        .execute();
      await db.schema.createIndex('api_description_sync_due').on('api_description_sync').column('next_sync_at').execute();
      await db.schema
        .createTable('webhook_deliveries')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('event', 'text', (c) => c.notNull())
        .addColumn('copilot_id', 'text')
        .addColumn('url', 'text', (c) => c.notNull())
        .addColumn('payload', 'text', (c) => c.notNull())
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('next_attempt_at', 'text', (c) => c.notNull())
        .addColumn('lease_owner', 'text')
        .addColumn('lease_expires_at', 'text')
        .addColumn('last_status', 'integer')
        .addColumn('last_error', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('delivered_at', 'text')
        .execute();
      await db.schema.createIndex('webhook_deliveries_due').on('webhook_deliveries').columns(['state', 'next_attempt_at']).execute();
      await db.schema.createIndex('webhook_deliveries_created').on('webhook_deliveries').columns(['created_at', 'id']).execute();
    },
    async down(db: Kysely<any>) {
      await db.schema.dropTable('webhook_deliveries').execute();
      await db.schema.dropTable('api_description_sync').execute();
      await db.schema.dropTable('api_description_changes').execute();
      await db.schema.dropTable('api_description_versions').execute();
    },
  };
}
