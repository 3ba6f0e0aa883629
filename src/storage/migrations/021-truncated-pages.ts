import type { Kysely, Migration } from 'kysely';

// Frozen in time: never edit a migration that has shipped; add a new one.
//
// An HTML page is read to its first 4 Mi characters (extract.ts MAX_HTML_CHARS): the text past
// that was not indexed, and nothing said so. A link now keeps whether its stored passages are of
// the page's first part only (1), shown on the wire as the link's `truncated`. Links stored
// before this migration read 0 until their page is indexed again.
export function truncatedPages(): Migration {
  return {
    async up(db: Kysely<any>) {
      await db.schema
        .alterTable('kb_links')
        .addColumn('truncated', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
    },
    async down(db: Kysely<any>) {
      await db.schema.alterTable('kb_links').dropColumn('truncated').execute();
    },
  };
}
