/**
 * Each bot's search index is its own (kb_blocks is keyed by bot, migrations 019 and 020): a search reads
 * its own bot's postings only, and finds its own passages, also for bots whose ids share their
 * first hex digits (the old SQLite index, migrations 017 to 018, shared entries between those).
 */
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { nowTimestamp } from '../../src/domain/ids.js';
import type { Storage } from '../../src/storage/database.js';
import { searchPassages } from '../../src/storage/knowledge-base.repository.js';
import { queryTerms } from '../../src/text/search-terms.js';
import { createTestStorage, DIALECTS } from '../support/databases.js';
import { seedIndexedLinks } from '../support/seed.js';

/** A copilot with this id (the knowledge base's bot). */
async function copilot(storage: Storage, id: string): Promise<string> {
  const now = nowTimestamp();
  await storage.db
    .insertInto('copilots')
    .values({
      id,
      name: `Bot ${id.slice(0, 8)}`,
      name_folded: `bot ${id.slice(0, 8)}`,
      token: randomUUID().replaceAll('-', '').slice(0, 20),
      website: '',
      status: 'draft',
      prompt_message: '',
      enhanced_privacy: 0,
      smart_sync: 0,
      swagger_url: '',
      is_premade_demo_template: 0,
      created_at: now,
      updated_at: now,
      deleted_at: null,
    })
    .execute();
  return id;
}

const search = (storage: Storage, bot: string, q: string) =>
  searchPassages(storage.readDb, storage.dialect, bot, queryTerms(q), 10).then((hits) => hits.map((h) => h.content).sort());

// The words' search terms as indexed (stemmed: `key` is `kei`).
const _KEY = queryTerms('key')[0]!;
const _REQUEST = queryTerms('request')[0]!;

/** Index entries for a term as written (prefix included), by bot prefix. */
async function _entries(storage: Storage, term: string): Promise<number> {
  const { rows } = await sql<{ n: number }>`select count(*) as n from kb_passages_fts_instance where term = ${term}`.execute(storage.db);
  return Number(rows[0]!.n);
}

for (const dialect of DIALECTS) {
  describe(`search terms indexed per bot (${dialect})`, () => {
    let opened: { storage: Storage; cleanup(): Promise<void> } | null = null;
    afterEach(async () => {
      await opened?.cleanup();
      opened = null;
    });

    it('finds each bot its own passages, also when two bots’ ids share the prefix', async () => {
      opened = await createTestStorage(dialect);
      const { storage } = opened;
      // a and b share their first 8 hex digits; c does not.
      const a = await copilot(storage, 'abcdef01-1111-4111-8111-111111111111');
      const b = await copilot(storage, 'abcdef01-2222-4222-8222-222222222222');
      const c = await copilot(storage, 'fedcba98-3333-4333-8333-333333333333');
      await storage.db.transaction().execute(async (trx) => {
        await seedIndexedLinks(trx, a, [{ url: 'https://a.example/1', passages: ['Each request of a.', 'Another request of a.'] }]);
        await seedIndexedLinks(trx, b, [{ url: 'https://b.example/1', passages: ['The request of b.'] }]);
        await seedIndexedLinks(trx, c, [{ url: 'https://c.example/1', passages: ['A request of c.', 'Nothing else.'] }]);
      });
      expect(await search(storage, a, 'request')).toEqual(['Another request of a.', 'Each request of a.']);
      expect(await search(storage, b, 'request')).toEqual(['The request of b.']);
      expect(await search(storage, c, 'request else')).toEqual(['A request of c.', 'Nothing else.']);
    });
  });
}
