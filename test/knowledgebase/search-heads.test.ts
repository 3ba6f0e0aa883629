/**
 * Issue 16 §2: a search by heads (kb_blocks.heads, docs/search-index.md "Heads"), on both
 * databases. A merged block of one large term in chunks keeps its heads; a search reads them and
 * then only the chunks that may rank, cut out of the block by the database, and answers what
 * scoring every passage answers, deleted passages left out, whatever way it scores.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MERGE_FACTOR, mergeSegments, scoreWithHeads } from '../../src/domain/knowledgebase/search-index.js';
import type { Storage } from '../../src/storage/database.js';
import * as kb from '../../src/storage/knowledge-base.repository.js';
import { mergeSegmentsStep, type PassageScorer } from '../../src/storage/search-index.repository.js';
import { queryTerms } from '../../src/text/search-terms.js';
import { createTestStorage, DIALECTS } from '../support/databases.js';
import { searchCorpus, searchReference } from '../support/search-corpus.js';
import { seedIndexedLinks } from '../support/seed.js';

const QUERIES = ['common', 'often', 'common often', 'rare3 common', 'common rare7 often', 'fillera0 common', 'nothing here'];

for (const dialect of DIALECTS) {
  describe(`a search by heads (${dialect})`, () => {
    let storage: Storage;
    let cleanup: () => Promise<void>;
    beforeAll(async () => {
      ({ storage, cleanup } = await createTestStorage(dialect));
    });
    afterAll(async () => cleanup?.());

    it('reads the heads of large terms and the chunks that may rank, and answers as scoring every passage does', async () => {
      // 6,400 passages in eight writes of a tier, merged into one segment, every block of one
      // term in chunks given its heads whatever its size ("common": about 5,400 postings, 42 chunks).
      const bot = randomUUID();
      const links = searchCorpus(128, 50).map((l, i) => ({ ...l, url: `${l.url}-heads-${i}` }));
      const ids: string[] = [];
      for (let i = 0; i < links.length; i += links.length / MERGE_FACTOR)
        ids.push(...(await seedIndexedLinks(storage.db, bot, links.slice(i, i + links.length / MERGE_FACTOR))));
      expect(await mergeSegmentsStep(storage.db, dialect, async (inputs, excluded) => mergeSegments(inputs, excluded, 0))).toBe(true);
      const blocks = await storage.db.selectFrom('kb_blocks').select(['first_term', 'block', 'heads']).where('bot_id', '=', bot).execute();
      const common = blocks.find((b) => b.first_term === 'common')!;
      expect(common.heads).not.toBeNull();
      expect(common.heads!.length).toBeLessThan(common.block.length / 5);
      expect(blocks.filter((b) => b.heads === null).length).toBeGreaterThan(0);

      // Each call's bytes read besides the heads, and whether a blob was read whole.
      let calls = 0;
      let lastRead = 0;
      const counting =
        (byChunksFrom?: number): PassageScorer =>
        (blobs, totals, limit, excluded, read, budget) => {
          calls++;
          lastRead = read.reduce((n, r) => n + r.bytes.length, 0);
          return scoreWithHeads(blobs, totals, limit, excluded, read, budget, byChunksFrom);
        };
      async function expectExact(left: typeof links) {
        for (const heads of [false, true])
          for (const byChunksFrom of [undefined, 0])
            for (const q of QUERIES)
              for (const limit of [1, 10, 50]) {
                const how = `${q} (limit ${limit}, heads ${heads}, by chunks from ${byChunksFrom})`;
                const hits = await kb.searchPassages(storage.scanDb, dialect, bot, queryTerms(q), limit, counting(byChunksFrom), heads);
                const expected = searchReference(left, q);
                expect(hits.length, how).toBe(Math.min(limit, expected.length));
                for (const [i, hit] of hits.entries()) expect(hit.score, `${how} #${i}`).toBeCloseTo(expected[i]!.score, 6);
                for (const hit of hits) expect(hit.score, how).toBeCloseTo(expected.find((e) => e.url === hit.url && e.seq === hit.seq)!.score, 6);
              }
      }
      await expectExact(links);

      // "common" alone by chunks: its heads, then the chunks of its best stretches (the first
      // call's budget), in two calls.
      calls = 0;
      await kb.searchPassages(storage.scanDb, dialect, bot, ['common'], 10, counting(0), true);
      expect(calls).toBe(2);
      expect(lastRead).toBeGreaterThan(0);
      expect(lastRead).toBeLessThan(common.block.length / 2);
      // Without heads, one call over the whole blocks.
      calls = 0;
      lastRead = 0;
      await kb.searchPassages(storage.scanDb, dialect, bot, ['common'], 10, counting(0), false);
      expect([calls, lastRead]).toEqual([1, 0]);

      // Deleted passages inside the merged segment (excluded): the chunks holding them are read
      // whatever their bounds (each word's df stays exact).
      const gone = new Set(ids.filter((_, i) => i % 5 === 2));
      await storage.db.transaction().execute((trx) => kb.deleteLinksAndPassages(trx, dialect, [...gone]));
      await expectExact(links.filter((_, i) => !gone.has(ids[i]!)));
    });
  });
}
