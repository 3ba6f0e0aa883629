import type { Kysely, Migration } from 'kysely';
import type { DialectName } from '../database.js';

// Frozen in time: never edit a migration that has shipped; add a new one.
export function initial(dialect: DialectName): Migration {
  const binary = dialect === 'postgres' ? 'bytea' : 'blob';
  return {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('copilots')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('token', 'text', (c) => c.notNull().unique())
        .addColumn('website', 'text', (c) => c.notNull().defaultTo(''))
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('prompt_message', 'text', (c) => c.notNull())
        .addColumn('enhanced_privacy', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('smart_sync', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('swagger_url', 'text', (c) => c.notNull().defaultTo(''))
        .addColumn('is_premade_demo_template', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .addColumn('deleted_at', 'text')
        .execute();
      await db.schema.createIndex('copilots_created_at_id').on('copilots').columns(['created_at desc', 'id desc']).execute();

      await db.schema
        .createTable('api_keys')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('secret_hash', 'text', (c) => c.notNull())
        .addColumn('scopes', 'text', (c) => c.notNull())
        .addColumn('bots', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('revoked_at', 'text')
        .execute();

      await db.schema
        .createTable('swagger_documents')
        .addColumn('file_name', 'text', (c) => c.primaryKey())
        .addColumn('copilot_id', 'text', (c) => c.notNull())
        .addColumn('media_type', 'text', (c) => c.notNull())
        .addColumn('sha256', 'text', (c) => c.notNull())
        .addColumn('size', 'integer', (c) => c.notNull())
        .addColumn('content', binary, (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('swagger_documents_copilot').on('swagger_documents').column('copilot_id').execute();
    },
    async down(db: Kysely<any>) {
      await db.schema.dropTable('swagger_documents').execute();
      await db.schema.dropTable('api_keys').execute();
      await db.schema.dropTable('copilots').execute();
    },
  };
}
