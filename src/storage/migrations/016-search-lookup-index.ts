import { sql, type Kysely, type Migration } from 'kysely';
import type { DialectName } from '../database.js';

// Frozen in time: never edit a migration that has shipped; add a new one.
//
// Issue 16: on SQLite a knowledge-base search looks up every passage holding one of its words, for
// its bot and its length (term_count). By the primary key that lookup reads the passage's table
// row, content and all: 1.8 µs a passage, most of a search of a rare word over a million passages
// (bench/README.md). An index on (bot_id, id, term_count) answers it from a small index row. It
// also serves what kb_passages_bot (bot_id) served, which it replaces. PostgreSQL reads the
// passage's row anyway (its tsvector holds the term counts): nothing changes there.

export function searchLookupIndex(dialect: DialectName): Migration {
  return {
    async up(db: Kysely<any>) {
      if (dialect !== 'sqlite') return;
      await sql`create index kb_passages_bot_terms on kb_passages (bot_id, id, term_count)`.execute(db);
      await sql`drop index kb_passages_bot`.execute(db);
    },
    async down(db: Kysely<any>) {
      if (dialect !== 'sqlite') return;
      await sql`create index kb_passages_bot on kb_passages (bot_id)`.execute(db);
      await sql`drop index kb_passages_bot_terms`.execute(db);
    },
  };
}
