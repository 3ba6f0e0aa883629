import { sql, type Kysely, type Migration } from 'kysely';

// Frozen in time: never edit a migration that has shipped; add a new one.
//
// A page's passages are stored in bounded transactions and made visible in one short one
// (issue 13 §10: one transaction over a whole large page ends in a commit whose cost grows with
// the page, on SQLite on the event loop). Each stored set of a link's passages has a version:
// kb_links.version names the one searches see, and kb_hidden_passages lists the sets no
// search may see: the one being stored (`staging`) and the ones replaced or abandoned
// (`retired`), whose passages are deleted a batch at a time afterwards.
export function stagedPassages(): Migration {
  return {
    async up(db: Kysely<any>) {
      await db.schema
        .alterTable('kb_links')
        .addColumn('version', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
      await db.schema
        .alterTable('kb_passages')
        .addColumn('version', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
      await db.schema.dropIndex('kb_passages_link').execute();
      await db.schema.createIndex('kb_passages_link').on('kb_passages').columns(['link_id', 'version', 'seq']).execute();
      await db.schema
        .createTable('kb_hidden_passages')
        .addColumn('link_id', 'text', (c) => c.notNull())
        .addColumn('version', 'integer', (c) => c.notNull())
        .addColumn('bot_id', 'text', (c) => c.notNull())
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('kb_hidden_passages_pk', ['link_id', 'version'])
        .execute();
      await db.schema.createIndex('kb_hidden_passages_state').on('kb_hidden_passages').columns(['state', 'created_at']).execute();
    },
    async down(db: Kysely<any>) {
      await db.schema.dropTable('kb_hidden_passages').execute();
      await db.schema.dropIndex('kb_passages_link').execute();
      await db.schema.createIndex('kb_passages_link').on('kb_passages').columns(['link_id', 'seq']).execute();
      await sql`alter table kb_passages drop column version`.execute(db);
      await sql`alter table kb_links drop column version`.execute(db);
    },
  };
}
