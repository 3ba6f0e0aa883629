import type { Kysely, Migration } from 'kysely';

// Frozen in time: never edit a migration that has shipped; add a new one.
//
// Issue 17 §3: an uploaded `slack.json` was shown everywhere as its generated name
// (`ZxQ0zY7L5KM80yAFZaun.json`). Each stored document keeps the file name it was uploaded
// under (sanitised: src/domain/copilots/original-file-name.ts; null for a raw body or a
// document stored before this migration), and the readiness summary its validation gave at
// upload (score 0–100 and the platforms it is ready for, a JSON array), so the copilot list
// can show it without validating anything. Null for documents stored before this migration.
export function originalFileNames(): Migration {
  return {
    async up(db: Kysely<any>) {
      await db.schema.alterTable('swagger_documents').addColumn('original_name', 'text').execute();
      await db.schema.alterTable('swagger_documents').addColumn('readiness_score', 'integer').execute();
      await db.schema.alterTable('swagger_documents').addColumn('ready_platforms', 'text').execute();
    },
    async down(db: Kysely<any>) {
      await db.schema.alterTable('swagger_documents').dropColumn('ready_platforms').execute();
      await db.schema.alterTable('swagger_documents').dropColumn('readiness_score').execute();
      await db.schema.alterTable('swagger_documents').dropColumn('original_name').execute();
    },
  };
}
