/**
 * Migration 007-unicode-search on a database that already holds copilots and indexed passages
 * (written as the service wrote them before it): names are folded, every passage is indexed
 * again under its search terms, and search then answers alike on both databases.
 */
import { randomUUID } from 'node:crypto';
import { Migrator, type Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queryTerms } from '../../src/text/search-terms.js';
import { listCopilots } from '../../src/storage/copilot.repository.js';
import { openStorage, type DialectName, type Storage } from '../../src/storage/database.js';
import { insertPassages, searchPassages } from '../../src/storage/knowledge-base.repository.js';
import { migrateToLatest } from '../../src/storage/migrate.js';
import { initial } from '../../src/storage/migrations/001-initial.js';
import { knowledgeBase } from '../../src/storage/migrations/002-knowledge-base.js';
import { changeCounters } from '../../src/storage/migrations/003-change-counters.js';
import { changeTokens } from '../../src/storage/migrations/004-change-tokens.js';
import { fairQueue } from '../../src/storage/migrations/005-fair-queue.js';
import { canonicalLinks } from '../../src/storage/migrations/006-canonical-links.js';
import { createTestDatabase, DIALECTS, type TestDatabase } from '../support/databases.js';

const NOW = '2024-01-01T00:00:00.000000Z';

/** The schema as it stood before 007. */
async function migrateTo006(db: Kysely<any>, dialect: DialectName): Promise<void> {
  const migrations = {
    '001-initial': initial(dialect),
    '002-knowledge-base': knowledgeBase(dialect),
    '003-change-counters': changeCounters(dialect),
    '004-change-tokens': changeTokens(dialect),
    '005-fair-queue': fairQueue(),
    '006-canonical-links': canonicalLinks(),
  };
  const result = await new Migrator({ db, provider: { getMigrations: async () => migrations } }).migrateToLatest();
  if (result.error) throw result.error;
}

const PASSAGES: Record<string, string[]> = {
  'https://docs.example/cafe': ['Le café est servi. Crème brûlée.', 'Die Straße ÜBER dem Fluss.'],
  'https://docs.example/keys': ['Rotate the API key: create a new key, then revoke the old key.'],
  'https://docs.example/api': ['The API reference lists every endpoint.'],
};

for (const dialect of DIALECTS) {
  describe(`migration 007-unicode-search on existing data (${dialect})`, () => {
    let database: TestDatabase;
    let storage: Storage;
    const bot = randomUUID();
    const copilot = randomUUID();
    const linkIds = new Map<string, string>();

    beforeAll(async () => {
      database = await createTestDatabase(dialect);
      storage = openStorage({ databaseUrl: database.databaseUrl, dataDir: database.dataDir, poolSize: 2 });
      const db = storage.db as unknown as Kysely<any>;
      await migrateTo006(db, dialect);
      // Rows as the service stored them before 007.
      await db
        .insertInto('copilots')
        .values({
          id: copilot,
          name: 'Éclair équipe ÜBER',
          token: 'T'.repeat(20),
          website: '',
          status: 'draft',
          prompt_message: 'p',
          enhanced_privacy: 0,
          smart_sync: 0,
          swagger_url: '',
          is_premade_demo_template: 0,
          created_at: NOW,
          updated_at: NOW,
          deleted_at: null,
        })
        .execute();
      await db.insertInto('knowledge_bases').values({ bot_id: bot, created_at: NOW, updated_at: NOW }).execute();
      for (const [url, passages] of Object.entries(PASSAGES)) {
        const id = randomUUID();
        linkIds.set(url, id);
        await db
          .insertInto('kb_links')
          .values({
            id,
            bot_id: bot,
            url,
            status: 'indexed',
            error: null,
            passages: passages.length,
            attempts: 1,
            generation: 0,
            run_after: NOW,
            lease_owner: null,
            lease_expires_at: null,
            created_at: NOW,
            updated_at: NOW,
          })
          .execute();
        await db
          .insertInto('kb_passages')
          .values(passages.map((content, seq) => ({ link_id: id, bot_id: bot, seq, content })))
          .execute();
      }
      // A deleted passage: SQLite noted its stale index entry for the sweep.
      await db.deleteFrom('kb_passages').where('content', '=', 'Die Straße ÜBER dem Fluss.').execute();
      await db.updateTable('kb_links').set({ passages: 1 }).where('id', '=', linkIds.get('https://docs.example/cafe')!).execute();
      // 007 onwards, then whatever later migrations exist.
      expect((await migrateToLatest(storage)).slice(0, 4)).toEqual([
        '007-unicode-search',
        '008-plain-read-path',
        '009-staged-passages',
        '010-api-description-versions',
      ]);
    });
    afterAll(async () => {
      await storage?.close();
      await database?.drop();
    });

    const search = async (q: string) =>
      (await searchPassages(storage.db, dialect, bot, queryTerms(q), 10)).map((h) => [h.url.replace('https://docs.example', ''), h.seq]);

    it('re-indexes every existing passage under its search terms', async () => {
      expect(await search('cafe')).toEqual([['/cafe', 0]]);
      expect(await search('CRÈME brulee')).toEqual([['/cafe', 0]]);
      expect(await search('how do I rotate an api key')).toEqual([
        ['/keys', 0],
        ['/api', 0],
      ]);
      expect(await search('the')).toEqual([]);
      expect(await search('strasse')).toEqual([]); // deleted before the migration
    });

    it('counts each passage’s terms and each link’s', async () => {
      const passages = await storage.db.selectFrom('kb_passages').select(['link_id', 'term_count']).execute();
      expect(passages).toHaveLength(3);
      for (const p of passages) expect(p.term_count).toBeGreaterThan(0);
      const links = await storage.db.selectFrom('kb_links').select(['id', 'term_count']).execute();
      for (const l of links) {
        expect(l.term_count).toBe(passages.filter((p) => p.link_id === l.id).reduce((sum, p) => sum + p.term_count, 0));
      }
    });

    it('leaves no search terms in kb_passages, and none of the full-text indexes that read them (019 replaced them)', async () => {
      const columns = (await storage.db.introspection.getTables()).find((t) => t.name === 'kb_passages')!.columns.map((c) => c.name);
      expect(columns).not.toContain('terms');
      expect(columns).not.toContain('tsv');
      const tables = (await storage.db.introspection.getTables()).map((t) => t.name);
      for (const gone of ['kb_passages_fts', 'kb_passages_fts_instance', 'kb_fts_garbage']) expect(tables).not.toContain(gone);
    });

    it('folds the names of existing copilots', async () => {
      for (const q of ['éclair', 'ECLAIR', 'uber']) {
        const rows = await listCopilots(storage.db, { limit: 10, includeDeleted: false, nameContains: q });
        expect(
          rows.map((r) => r.id),
          q,
        ).toEqual([copilot]);
      }
    });

    it('insertPassages indexes a new passage and counts its terms', async () => {
      const link = linkIds.get('https://docs.example/api')!;
      const before = await storage.db.selectFrom('kb_links').select('term_count').where('id', '=', link).executeTakeFirstOrThrow();
      await insertPassages(storage.db, [{ link_id: link, bot_id: bot, seq: 1, content: 'Glossary of endpoints.' }]);
      const after = await storage.db.selectFrom('kb_links').select('term_count').where('id', '=', link).executeTakeFirstOrThrow();
      expect(after.term_count).toBe(before.term_count + 2); // glossari, endpoint
      expect(await search('endpoints glossary')).toEqual([
        ['/api', 1],
        ['/api', 0],
      ]);
    });
  });
}
