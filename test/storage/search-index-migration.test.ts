/**
 * Migrations 019-search-index and 020-postings-blocks on a database that holds knowledge bases
 * indexed the old way (SQLite FTS5, PostgreSQL tsvector): every stored passage is indexed in
 * segments of the new index (019: a row per segment and term), packed into blocks (020), a set
 * being stored stays hidden, searches then answer what scoring every passage answers, and the
 * old indexes are gone.
 */
import { randomUUID } from 'node:crypto';
import { type Kysely, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BLOCK_BYTES, segmentOf } from '../../src/domain/knowledgebase/search-index.js';
import { openStorage, type Storage } from '../../src/storage/database.js';
import { searchPassages } from '../../src/storage/knowledge-base.repository.js';
import { migrateToLatest, migrator } from '../../src/storage/migrate.js';
import { passageTerms, queryTerms } from '../../src/text/search-terms.js';
import { createTestDatabase, DIALECTS, type TestDatabase } from '../support/databases.js';
import { indexEntries, phantomPostings } from '../support/knowledge-base.js';
import { searchCorpus, searchReference } from '../support/search-corpus.js';

const NOW = '2026-11-01T00:00:00.000000Z';

for (const dialect of DIALECTS) {
  describe(`migrations 019-search-index and 020-postings-blocks on existing data (${dialect})`, () => {
    let database: TestDatabase;
    let storage: Storage;
    const big = randomUUID();
    const small = randomUUID();
    // 5,000 passages: two segments of the new index (4,096 a segment).
    const bigLinks = searchCorpus(500, 10).map((l, i) => ({ ...l, url: `${l.url}-019-${i}` }));
    const smallLinks = searchCorpus(3, 2).map((l, i) => ({ ...l, url: `https://small.example/${i}` }));
    let deletedLink = '';

    /** Links and passages as the service wrote them before 019 (terms given: the old triggers index them). */
    async function writeOld(db: Kysely<any>, bot: string, links: ReadonlyArray<{ url: string; passages: string[] }>, version = 0) {
      await db
        .insertInto('knowledge_bases')
        .values({ bot_id: bot, created_at: NOW, updated_at: NOW })
        .onConflict((oc) => oc.column('bot_id').doNothing())
        .execute();
      const ids: string[] = [];
      for (const link of links) {
        const id = randomUUID();
        ids.push(id);
        const rows = link.passages.map((content, seq) => ({ link_id: id, bot_id: bot, seq, content, version, ...passageTerms(content) }));
        await db
          .insertInto('kb_links')
          .values({
            id,
            bot_id: bot,
            url: link.url,
            status: 'indexed',
            error: null,
            passages: rows.length,
            term_count: rows.reduce((n, r) => n + r.term_count, 0),
            version,
            attempts: 1,
            generation: 0,
            run_after: NOW,
            lease_owner: null,
            lease_expires_at: null,
            created_at: NOW,
            updated_at: NOW,
          })
          .execute();
        await db.insertInto('kb_passages').values(rows).execute();
      }
      return ids;
    }

    beforeAll(async () => {
      database = await createTestDatabase(dialect);
      storage = openStorage({ databaseUrl: database.databaseUrl, dataDir: database.dataDir, poolSize: 2 });
      const db = storage.db as unknown as Kysely<any>;
      const to018 = await migrator(db, storage).migrateTo('018-running-jobs');
      if (to018.error) throw to018.error;
      const ids = await writeOld(db, big, bigLinks);
      await writeOld(db, small, smallLinks);
      // A link deleted before the upgrade (SQLite kept its stale index entries for a sweep).
      deletedLink = bigLinks[7]!.url;
      await db.deleteFrom('kb_passages').where('link_id', '=', ids[7]!).execute();
      await db.deleteFrom('kb_links').where('id', '=', ids[7]!).execute();
      // A new version of a link's page being stored: hidden until published.
      await db.insertInto('kb_hidden_passages').values({ link_id: ids[3]!, version: 1, bot_id: big, state: 'staging', created_at: NOW }).execute();
      await db
        .insertInto('kb_passages')
        .values(
          ['A staged passage: common common stagedword.'].map((content, seq) => ({
            link_id: ids[3]!,
            bot_id: big,
            seq,
            content,
            version: 1,
            ...passageTerms(content),
          })),
        )
        .execute();
      expect(await migrateToLatest(storage)).toEqual([
        '019-search-index',
        '020-postings-blocks',
        '021-truncated-pages',
        '022-older-data',
        '023-format-characters',
        '024-filter-indexes',
      ]);
    });
    afterAll(async () => {
      await storage?.close();
      await database?.drop();
    });

    it('indexes every stored passage in segments, and searches answer exactly', async () => {
      const segments = await storage.db.selectFrom('kb_segments').select('passages').where('bot_id', '=', big).orderBy('id').execute();
      // 4,991 stored passages (10 deleted, 1 staged), every one with terms.
      expect(segments.map((s) => Number(s.passages))).toEqual([4096, 4991 - 4096]);
      const left = bigLinks.filter((l) => l.url !== deletedLink);
      for (const q of ['common', 'often', 'rare3 common', 'common rare7 often', 'fillera0', 'stagedword']) {
        const hits = await searchPassages(storage.scanDb, dialect, big, queryTerms(q), 10);
        const expected = searchReference(left, q);
        expect(hits.length, q).toBe(Math.min(10, expected.length));
        for (const [i, hit] of hits.entries()) expect(hit.score, `${q} #${i}`).toBeCloseTo(expected[i]!.score, 6);
      }
      const hits = await searchPassages(storage.scanDb, dialect, small, queryTerms('common'), 10);
      expect(hits.map((h) => h.url).sort()).toEqual(
        searchReference(smallLinks, 'common')
          .map((e) => e.url)
          .sort(),
      );
      expect(await phantomPostings(storage)).toBe(0);
    });

    it("packs each segment's postings into blocks holding every term's blob of its passages", async () => {
      const segments = await storage.db.selectFrom('kb_segments').select(['id', 'bot_id', 'min_id', 'max_id']).execute();
      const entries = await indexEntries(storage);
      for (const s of segments) {
        const passages = await storage.db
          .selectFrom('kb_passages')
          .select(['id', 'content', 'term_count'])
          .where('bot_id', '=', s.bot_id)
          .where('id', '>=', s.min_id)
          .where('id', '<=', s.max_id)
          .execute();
        const own = passages.map((p) => ({ id: Number(p.id), terms: passageTerms(p.content).terms, term_count: Number(p.term_count) }));
        const expected = segmentOf(own);
        const stored = entries.filter((e) => e.segment === Number(s.id));
        expect(stored.length).toBe(expected.size);
        for (const e of stored) expect(Buffer.from(e.postings).equals(expected.get(e.term)!), e.term).toBe(true);
        // A row per block of about BLOCK_BYTES, not a row per term.
        const blocks = await storage.db.selectFrom('kb_blocks').select('block').where('segment', '=', s.id).execute();
        const bytes = blocks.reduce((n, b) => n + b.block.length, 0);
        expect(blocks.length).toBeLessThanOrEqual(Math.ceil(bytes / (BLOCK_BYTES / 2)) + 1);
      }
      // A term's block is found by comparing first terms as UTF-8 bytes, as blocksOf sorts them,
      // whatever the database's collation (SQLite compares text so by default).
      if (dialect === 'postgres') {
        const { rows } = await sql<{ collation_name: string }>`
          select collation_name from information_schema.columns where table_name = 'kb_blocks' and column_name = 'first_term'`.execute(storage.db);
        expect(rows[0]?.collation_name).toBe('C');
      }
    });

    it('drops the old indexes and the terms column they read', async () => {
      const tables = await storage.db.introspection.getTables();
      const names = tables.map((t) => t.name);
      for (const gone of ['kb_passages_fts', 'kb_passages_fts_instance', 'kb_fts_garbage', 'kb_postings']) expect(names).not.toContain(gone);
      const columns = tables.find((t) => t.name === 'kb_passages')!.columns.map((c) => c.name);
      expect(columns).not.toContain('terms');
      expect(columns).not.toContain('tsv');
    });
  });
}
