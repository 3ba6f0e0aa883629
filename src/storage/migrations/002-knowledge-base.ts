import { sql, type Kysely, type Migration } from 'kysely';
import type { DialectName } from '../database.js';

// Frozen in time: never edit a migration that has shipped; add a new one.
export function knowledgeBase(dialect: DialectName): Migration {
  return {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('knowledge_bases')
        .addColumn('bot_id', 'text', (c) => c.primaryKey())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();

      await db.schema
        .createTable('kb_links')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('bot_id', 'text', (c) => c.notNull())
        .addColumn('url', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('error', 'text')
        .addColumn('passages', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('generation', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('run_after', 'text', (c) => c.notNull())
        .addColumn('lease_owner', 'text')
        .addColumn('lease_expires_at', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .addUniqueConstraint('kb_links_bot_url', ['bot_id', 'url'])
        .execute();
      await db.schema.createIndex('kb_links_bot_created').on('kb_links').columns(['bot_id', 'created_at', 'id']).execute();
      await db.schema.createIndex('kb_links_queue').on('kb_links').columns(['status', 'run_after']).execute();

      if (dialect === 'postgres') {
        await sql`
          create table kb_passages (
            id bigint generated always as identity primary key,
            link_id text not null,
            bot_id text not null,
            seq integer not null,
            content text not null,
            tsv tsvector generated always as (to_tsvector('english', content)) stored
          )`.execute(db);
        await sql`create index kb_passages_tsv on kb_passages using gin (tsv)`.execute(db);
      } else {
        await sql`
          create table kb_passages (
            id integer primary key autoincrement,
            link_id text not null,
            bot_id text not null,
            seq integer not null,
            content text not null
          )`.execute(db);
        // Contentless FTS5 index (the text lives in kb_passages). Removing an entry costs
        // far more than removing its passage (about 55 µs against 5 µs), so a deletion only
        // notes the passage id in kb_fts_garbage: searches join kb_passages, so a stale entry
        // is never returned (ids are never reused), and the worker sweeps the entries out
        // in small batches when it is idle.
        await sql`create virtual table kb_passages_fts using fts5(content, content='', contentless_delete=1, tokenize='porter unicode61')`.execute(db);
        // No merging at every commit (it made each small commit of the sweep cost ~50 ms);
        // the idle worker merges in bounded steps, and FTS5's crisis merge still bounds
        // the number of segments.
        await sql`insert into kb_passages_fts(kb_passages_fts, rank) values ('automerge', 0)`.execute(db);
        await sql`create table kb_fts_garbage (passage_id integer primary key)`.execute(db);
        await sql`create trigger kb_passages_ai after insert on kb_passages begin
          insert into kb_passages_fts(rowid, content) values (new.id, new.content); end`.execute(db);
        await sql`create trigger kb_passages_ad after delete on kb_passages begin
          insert into kb_fts_garbage(passage_id) values (old.id); end`.execute(db);
      }
      await db.schema.createIndex('kb_passages_link').on('kb_passages').columns(['link_id', 'seq']).execute();
      await db.schema.createIndex('kb_passages_bot').on('kb_passages').column('bot_id').execute();

      await db.schema
        .createTable('audit_log')
        .addColumn('id', dialect === 'postgres' ? 'bigserial' : 'integer', (c) => (dialect === 'postgres' ? c.primaryKey() : c.primaryKey().autoIncrement()))
        .addColumn('at', 'text', (c) => c.notNull())
        .addColumn('actor_key_id', 'text')
        .addColumn('action', 'text', (c) => c.notNull())
        .addColumn('bot_id', 'text')
        .addColumn('details', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('audit_log_at').on('audit_log').columns(['at', 'id']).execute();
    },
    async down(db: Kysely<any>) {
      await db.schema.dropTable('audit_log').execute();
      if (dialect === 'sqlite') {
        await sql`drop table kb_passages_fts`.execute(db);
        await sql`drop table kb_fts_garbage`.execute(db);
      }
      await db.schema.dropTable('kb_passages').execute();
      await db.schema.dropTable('kb_links').execute();
      await db.schema.dropTable('knowledge_bases').execute();
    },
  };
}
