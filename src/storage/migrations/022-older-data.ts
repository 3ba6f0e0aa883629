import { sql, type Kysely, type Migration } from 'kysely';

// Frozen in time: never edit a migration that has shipped; add a new one.
//
// What earlier migrations added without bringing the data already stored up to it (upgrade sweep):
// - 010 kept a copilot's versions from then on: a document stored before it had no version, so
//   the first upload after the upgrade became version 1 with no changes, and a breaking change
//   was never reported (nor sent to the webhook). Each copilot's stored document without any
//   version becomes its version 1.
// - 011 stored the passages of enhanced_privacy copilots redacted from then on: links stored
//   before it stayed in clear, searchable, until a check that a copilot without smart_sync never
//   gets. Each such link is due for a check now, which fetches its page in full (a link whose
//   redaction differs from its copilot's is never answered from a 304) and stores it redacted.
// - 021 said `truncated` from then on, and a check answered 304 never learnt it of a page stored
//   before. The links that read 0 forget their HTTP validators, so their next check (the
//   schedule, or POST …/refresh) reads the page whole once.
export function olderData(): Migration {
  return {
    async up(db: Kysely<any>) {
      await sql`
        insert into api_description_versions
          (copilot_id, version, sha256, size, media_type, content, source, url, breaking_changes, other_changes, created_at)
        select d.copilot_id, 1, d.sha256, d.size, d.media_type, d.content,
               case when c.swagger_url like 'http%' then 'sync' else 'upload' end,
               case when c.swagger_url like 'http%' then c.swagger_url else null end,
               0, 0, d.created_at
        from swagger_documents d
        join copilots c on c.id = d.copilot_id
        where not exists (select 1 from api_description_versions v where v.copilot_id = d.copilot_id)
          and d.created_at = (select max(o.created_at) from swagger_documents o where o.copilot_id = d.copilot_id)
        on conflict (copilot_id, version) do nothing
      `.execute(db);
      await db
        .updateTable('kb_links')
        .set({ check_after: '1970-01-01T00:00:00.000000Z' })
        .where('redacted', '=', 0)
        .where('status', '<>', 'pending')
        .where('bot_id', 'in', (eb: any) => eb.selectFrom('copilots').select('id').where('enhanced_privacy', '=', 1).where('deleted_at', 'is', null))
        .execute();
      await db
        .updateTable('kb_links')
        .set({ etag: null, last_modified: null })
        .where('truncated', '=', 0)
        .where((eb: any) => eb.or([eb('etag', 'is not', null), eb('last_modified', 'is not', null)]))
        .execute();
    },
    async down() {
      // Data only: nothing to undo in the schema.
    },
  };
}
