import type { Kysely, Migration } from 'kysely';
import { foldText } from '../../text/folding.js';

// Frozen in time: never edit a migration that has shipped; add a new one.
//
// Folding removes format characters since this release (a soft hyphen or zero-width joiner
// inside a word no longer splits it: src/text/folding.ts). A copilot name holding one was folded
// with it, so the list's `q`, folded without it, would not find the name: each such name is
// folded again. (A knowledge base's pages are indexed again at their next check: passagesDigest.)
const BATCH = 1000;
const FORMAT_CHARACTER = /(?!\u200b)\p{Cf}/u;

export function formatCharacters(): Migration {
  return {
    async up(db: Kysely<any>) {
      let after = '';
      for (;;) {
        const rows: Array<{ id: string; name: string; name_folded: string }> = await db
          .selectFrom('copilots')
          .select(['id', 'name', 'name_folded'])
          .where('id', '>', after)
          .orderBy('id')
          .limit(BATCH)
          .execute();
        for (const row of rows) {
          const folded = foldText(row.name);
          if (FORMAT_CHARACTER.test(row.name) && folded !== row.name_folded) {
            await db.updateTable('copilots').set({ name_folded: folded }).where('id', '=', row.id).execute();
          }
        }
        if (rows.length < BATCH) break;
        after = rows[rows.length - 1]!.id;
      }
    },
    async down() {
      // Data only: nothing to undo in the schema.
    },
  };
}
