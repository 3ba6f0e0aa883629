/**
 * Knowledge-base rows written straight to the tables, as ingestion leaves them: for the tests
 * and the bench about what comes after ingestion (search, deletion). No test framework here:
 * the bench's service host imports it too.
 */
import { randomUUID } from 'node:crypto';
import { nowTimestamp } from '../../src/domain/ids.js';
import { insertPassages } from '../../src/storage/knowledge-base.repository.js';
import type { Db } from '../../src/storage/schema.js';

/**
 * Indexed links with their passages, written straight to the tables as the worker leaves them
 * (its knowledge base created first if need be), in batches: for tests about what comes after
 * ingestion. Returns the links' ids, in the order given.
 */
export async function seedIndexedLinks(db: Db, botId: string, links: ReadonlyArray<{ url: string; passages: readonly string[] }>): Promise<string[]> {
  const now = nowTimestamp();
  await db
    .insertInto('knowledge_bases')
    .values({ bot_id: botId, created_at: now, updated_at: now })
    .onConflict((oc) => oc.column('bot_id').doNothing())
    .execute();
  const ids = links.map(() => randomUUID());
  for (let i = 0; i < links.length; i += 250) {
    const batch = links.slice(i, i + 250);
    await db
      .insertInto('kb_links')
      .values(
        batch.map((link, k) => ({
          id: ids[i + k]!,
          bot_id: botId,
          url: link.url,
          status: 'indexed',
          error: null,
          passages: link.passages.length,
          attempts: 1,
          generation: 0,
          run_after: now,
          lease_owner: null,
          lease_expires_at: null,
          created_at: now,
          updated_at: now,
        })),
      )
      .execute();
    await insertPassages(
      db,
      batch.flatMap((link, k) => link.passages.map((content, seq) => ({ link_id: ids[i + k]!, bot_id: botId, seq, content }))),
    );
  }
  return ids;
}
