/**
 * SQLite's FTS5 index is one for every bot, and a search read all of each of its words' entries
 * before keeping its own bot's passages: one copilot's large knowledge base slowed every other
 * copilot's search of a word it holds. Each term is now indexed under its bot (migration 017,
 * `searchTermPrefix`), so a search reads its own bot's entries only. Two bots whose ids share the
 * prefix share entries, and each still finds only its own passages.
 */
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { nowTimestamp } from '../../src/domain/ids.js';
import type { Storage } from '../../src/storage/database.js';
import { searchPassages, searchTermPrefix } from '../../src/storage/knowledge-base.repository.js';
import { searchTermsPerBot } from '../../src/storage/migrations/017-search-terms-per-bot.js';
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
const KEY = queryTerms('key')[0]!;
const REQUEST = queryTerms('request')[0]!;

/** Index entries for a term as written (prefix included), by bot prefix. */
async function entries(storage: Storage, term: string): Promise<number> {
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

    if (dialect === 'sqlite') {
      it("indexes a bot's terms under its prefix, so a search reads no other bot's entries", async () => {
        opened = await createTestStorage(dialect);
        const { storage } = opened;
        const big = await copilot(storage, randomUUID());
        const small = await copilot(storage, randomUUID());
        await storage.db.transaction().execute(async (trx) => {
          await seedIndexedLinks(trx, big, [{ url: 'https://big.example/1', passages: Array.from({ length: 50 }, (_, i) => `Each request ${i}.`) }]);
          await seedIndexedLinks(trx, small, [{ url: 'https://small.example/1', passages: ['One request.'] }]);
        });
        // One entry per bot and occurrence, under the bot's prefix; none under the bare term.
        expect(await entries(storage, REQUEST)).toBe(0);
        expect(await entries(storage, `${searchTermPrefix(big)}${REQUEST}`)).toBe(50);
        expect(await entries(storage, `${searchTermPrefix(small)}${REQUEST}`)).toBe(1);
        expect(await search(storage, small, 'request')).toEqual(['One request.']);
      });

      it('migration 017 indexes existing passages under their bots, and back', async () => {
        opened = await createTestStorage(dialect);
        const { storage } = opened;
        const migration = searchTermsPerBot('sqlite');
        // The index as 016 left it: terms of every bot under the bare term.
        await migration.down!(storage.db);
        const a = await copilot(storage, randomUUID());
        const b = await copilot(storage, randomUUID());
        await storage.db.transaction().execute(async (trx) => {
          await seedIndexedLinks(trx, a, [{ url: 'https://a.example/1', passages: ['Rotate the API key, then revoke the old key.', ''] }]);
          await seedIndexedLinks(trx, b, [{ url: 'https://b.example/1', passages: ['The key of b.'] }]);
        });
        expect(await entries(storage, KEY)).toBe(3);

        await migration.up(storage.db);
        expect(await entries(storage, KEY)).toBe(0);
        expect(await entries(storage, `${searchTermPrefix(a)}${KEY}`)).toBe(2);
        expect(await entries(storage, `${searchTermPrefix(b)}${KEY}`)).toBe(1);
        expect(await search(storage, a, 'key')).toEqual(['Rotate the API key, then revoke the old key.']);
        expect(await search(storage, b, 'key')).toEqual(['The key of b.']);
        // New passages go in under their bot too (the trigger).
        await storage.db.transaction().execute((trx) => seedIndexedLinks(trx, b, [{ url: 'https://b.example/2', passages: ['A second key.'] }]));
        expect(await entries(storage, `${searchTermPrefix(b)}${KEY}`)).toBe(2);
        expect(await search(storage, b, 'key')).toEqual(['A second key.', 'The key of b.']);

        await migration.down!(storage.db);
        expect(await entries(storage, KEY)).toBe(4);
        expect(await entries(storage, `${searchTermPrefix(b)}${KEY}`)).toBe(0);
      });
    }
  });
}
