/**
 * Issue 16 §2: the search index's upkeep, on both databases. Deleted passages stay in their
 * segments, excluded, and no search sees them; housekeeping merges eight segments of a tier
 * into one and drops the excluded passages they hold, rewrites a segment alone when many of its
 * passages were deleted, and a merge that another instance (or a deletion) overtakes while it
 * was being computed leaves the index whole. Searches answer the same throughout.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createCopilot } from '../../src/domain/copilots/copilot.service.js';
import { BLOCK_BYTES, MERGE_FACTOR, mergeSegments } from '../../src/domain/knowledgebase/search-index.js';
import { startSearchIndexHousekeeping } from '../../src/jobs/search-index-housekeeping.js';
import type { Storage } from '../../src/storage/database.js';
import * as kb from '../../src/storage/knowledge-base.repository.js';
import { mergeSegmentsStep, type SegmentMerger } from '../../src/storage/search-index.repository.js';
import { queryTerms } from '../../src/text/search-terms.js';
import { createTestStorage, DIALECTS } from '../support/databases.js';
import { deleteLinksAndPassages, indexHits, phantomPostings, rawIndexHits, waitUntil } from '../support/knowledge-base.js';
import { searchCorpus, searchReference } from '../support/search-corpus.js';
import { seedIndexedLinks } from '../support/seed.js';

const inProcess: SegmentMerger = async (inputs, excluded) => mergeSegments(inputs, excluded);
const QUERIES = ['common', 'often', 'rare3 common', 'common rare7 often', 'fillera0'];

const excludedCount = async (storage: Storage, bot: string) =>
  Number((await storage.db.selectFrom('kb_excluded').select('count').where('bot_id', '=', bot).executeTakeFirst())?.count ?? 0);

for (const dialect of DIALECTS) {
  describe(`the search index's merges (${dialect})`, () => {
    let storage: Storage;
    let cleanup: () => Promise<void>;
    beforeAll(async () => {
      ({ storage, cleanup } = await createTestStorage(dialect));
    });
    afterAll(async () => cleanup?.());

    const segments = async (bot: string) =>
      Number(
        (
          await storage.db
            .selectFrom('kb_segments')
            .select((eb) => eb.fn.countAll().as('n'))
            .where('bot_id', '=', bot)
            .executeTakeFirstOrThrow()
        ).n,
      );
    const excludedCount = async (bot: string) =>
      Number((await storage.db.selectFrom('kb_excluded').select('count').where('bot_id', '=', bot).executeTakeFirst())?.count ?? 0);

    /** Every query answers what scoring every remaining passage answers (the reference). */
    async function expectExact(bot: string, links: ReadonlyArray<{ url: string; passages: string[] }>) {
      for (const q of QUERIES) {
        const hits = await kb.searchPassages(storage.scanDb, dialect, bot, queryTerms(q), 10);
        const expected = searchReference(links, q);
        expect(hits.length, q).toBe(Math.min(10, expected.length));
        for (const [i, hit] of hits.entries()) expect(hit.score, `${q} #${i}`).toBeCloseTo(expected[i]!.score, 6);
        for (const hit of hits) expect(hit.score).toBeCloseTo(expected.find((e) => e.url === hit.url && e.seq === hit.seq)!.score, 6);
      }
      expect(await phantomPostings(storage)).toBe(0);
    }

    /** A bot whose links were written in `writes` writes (a segment each). */
    async function botOf(links: Array<{ url: string; passages: string[] }>, writes: number) {
      const bot = randomUUID();
      const per = Math.ceil(links.length / writes);
      const ids: string[] = [];
      for (let i = 0; i < links.length; i += per) ids.push(...(await seedIndexedLinks(storage.db, bot, links.slice(i, i + per))));
      return { bot, ids };
    }

    it('eight segments of a tier become one, dropping the deleted passages they hold; searches answer the same', async () => {
      const links = searchCorpus(16, 8).map((l, i) => ({ ...l, url: `${l.url}-merge-${i}` }));
      const { bot, ids } = await botOf(links, MERGE_FACTOR * 2);
      expect(await segments(bot)).toBe(16);
      // Every fourth link deleted: excluded, never seen, still in the postings.
      const gone = new Set(ids.filter((_, i) => i % 4 === 1));
      await deleteLinksAndPassages(storage, [...gone]);
      const left = links.filter((_, i) => !gone.has(ids[i]!));
      expect(await excludedCount(bot)).toBe(links.filter((_, i) => gone.has(ids[i]!)).reduce((n, l) => n + l.passages.length, 0));
      expect(await rawIndexHits(storage, 'common')).toBeGreaterThan(await indexHits(storage, 'common'));
      await expectExact(bot, left);

      // 16 segments of 64 passages (tier 2): two merges of eight; the two merged (tier 3) wait for six more.
      expect(await mergeSegmentsStep(storage.db, dialect, inProcess)).toBe(true);
      expect(await segments(bot)).toBe(9);
      await expectExact(bot, left);
      expect(await mergeSegmentsStep(storage.db, dialect, inProcess)).toBe(true);
      expect(await segments(bot)).toBe(2);
      expect(await mergeSegmentsStep(storage.db, dialect, inProcess)).toBe(false);
      // Every deleted passage was in a merged segment: none is left, excluded or in the postings.
      expect(await excludedCount(bot)).toBe(0);
      expect(await rawIndexHits(storage, 'common')).toBe(await indexHits(storage, 'common'));
      await expectExact(bot, left);
    });

    it('a segment most of whose passages were deleted is rewritten alone', async () => {
      const links = searchCorpus(40, 40).map((l, i) => ({ ...l, url: `${l.url}-rewrite-${i}` }));
      const { bot, ids } = await botOf(links, 1);
      expect(await segments(bot)).toBe(1);
      // 1,200 of its 1,600 passages: at least MIN_EXCLUDED_TO_REWRITE, and more than an eighth.
      const gone = ids.slice(0, 30);
      await deleteLinksAndPassages(storage, gone);
      expect(await excludedCount(bot)).toBe(1200);
      expect(await mergeSegmentsStep(storage.db, dialect, inProcess)).toBe(true);
      expect(await segments(bot)).toBe(1);
      expect(await excludedCount(bot)).toBe(0);
      expect(await mergeSegmentsStep(storage.db, dialect, inProcess)).toBe(false);
      await expectExact(bot, links.slice(30));
    });

    it('a merge overtaken by another merge of the same segments writes nothing', async () => {
      const links = searchCorpus(8, 4).map((l, i) => ({ ...l, url: `${l.url}-overtaken-${i}` }));
      const { bot } = await botOf(links, MERGE_FACTOR);
      const before = await rawIndexHits(storage, 'common');
      let inner = false;
      const overtaken: SegmentMerger = async (inputs, excluded) => {
        // Another instance merges the same segments first, while this one computes.
        if (!inner) {
          inner = true;
          expect(await mergeSegmentsStep(storage.db, dialect, inProcess)).toBe(true);
        }
        return mergeSegments(inputs, excluded);
      };
      await mergeSegmentsStep(storage.db, dialect, overtaken);
      expect(inner).toBe(true);
      expect(await segments(bot)).toBe(1);
      expect(await rawIndexHits(storage, 'common')).toBe(before);
      await expectExact(bot, links);
    });

    it('passages deleted while a merge is computed stay excluded after it', async () => {
      const links = searchCorpus(8, 4).map((l, i) => ({ ...l, url: `${l.url}-meanwhile-${i}` }));
      const { bot, ids } = await botOf(links, MERGE_FACTOR);
      const deleting: SegmentMerger = async (inputs, excluded) => {
        const merged = mergeSegments(inputs, excluded);
        await deleteLinksAndPassages(storage, [ids[3]!]);
        return merged;
      };
      expect(await mergeSegmentsStep(storage.db, dialect, deleting)).toBe(true);
      expect(await segments(bot)).toBe(1);
      // The merged segment still holds them: they stay excluded until the next merge drops them.
      expect(await excludedCount(bot)).toBe(links[3]!.passages.length);
      await expectExact(
        bot,
        links.filter((_, i) => i !== 3),
      );
    });

    it("a page's few thousand words are a few rows of blocks, and every one of them is found (blocks cut between any two words)", async () => {
      // 3,000 distinct words in 300 passages, Latin and Greek (whose UTF-8 bytes sort after Latin).
      const words = Array.from({ length: 3000 }, (_, i) => `${['alpha', 'ωmega', 'zulu', 'beta', 'γamma'][i % 5]}${i}`);
      const passages = Array.from({ length: 300 }, (_, p) => words.slice(p * 10, p * 10 + 10).join(' '));
      const bot = randomUUID();
      await seedIndexedLinks(storage.db, bot, [{ url: 'https://blocks.example/page', passages }]);
      const blocks = await storage.db.selectFrom('kb_blocks').select('block').where('bot_id', '=', bot).execute();
      const bytes = blocks.reduce((n, b) => n + b.block.length, 0);
      expect(blocks.length).toBeGreaterThan(1);
      expect(blocks.length).toBeLessThanOrEqual(Math.ceil(bytes / (BLOCK_BYTES / 2)));
      for (const [i, word] of words.entries()) {
        if (i % 3 !== 0 && i % 10 !== 9) continue;
        const hits = await kb.searchPassages(storage.scanDb, dialect, bot, queryTerms(word), 10);
        expect(
          hits.map((h) => h.seq),
          word,
        ).toEqual([Math.floor(i / 10)]);
      }
    });

    it('housekeeping logs a database out of reach or busy as a warning, and goes on (it was logged as an error)', async () => {
      const links = searchCorpus(16, 2).map((l, i) => ({ ...l, url: `${l.url}-busy-${i}` }));
      const { bot } = await botOf(links, 16);
      const logger = { warn: vi.fn(), error: vi.fn() };
      let busy = 2;
      const merge: SegmentMerger = async (inputs, excluded) => {
        if (busy-- > 0) throw Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' });
        return mergeSegments(inputs, excluded);
      };
      const housekeeping = startSearchIndexHousekeeping(storage, { intervalMs: 20, merge, logger });
      try {
        await waitUntil(async () => (await segments(bot)) < MERGE_FACTOR, 'housekeeping to merge after the busy steps', { timeoutMs: 10_000 });
      } finally {
        await housekeeping.stop();
      }
      expect(logger.error).not.toHaveBeenCalled();
      expect(logger.warn).toHaveBeenCalledTimes(2);
      expect(logger.warn.mock.calls[0]![1]).toMatch(/^search index housekeeping failed: the database is out of reach or busy/);
    });

    it('housekeeping merges by itself until nothing is left to merge', async () => {
      const links = searchCorpus(24, 2).map((l, i) => ({ ...l, url: `${l.url}-housekeeping-${i}` }));
      const { bot } = await botOf(links, 24);
      expect(await segments(bot)).toBe(24);
      const housekeeping = startSearchIndexHousekeeping(storage, { intervalMs: 20 });
      try {
        await waitUntil(async () => (await segments(bot)) < MERGE_FACTOR, 'housekeeping to merge the segments', { timeoutMs: 10_000 });
      } finally {
        await housekeeping.stop();
      }
      await expectExact(bot, links);
    });
  });
}

// DESIGN §3 (enhanced_privacy: no data beyond what search needs; privacy sweep): the words of an
// enhanced_privacy copilot's deleted or replaced passages left the index only with a merge that
// a few deletions never call for. Its segments holding them are rewritten at the next step.
for (const dialect of DIALECTS) {
  describe(`an enhanced_privacy copilot's deleted passages leave the index at once (${dialect})`, () => {
    let storage: Storage;
    let cleanup: () => Promise<void>;
    beforeAll(async () => {
      ({ storage, cleanup } = await createTestStorage(dialect));
    });
    afterAll(async () => cleanup?.());

    it('rewrites the segments holding them, whatever their number; a copilot without the flag waits for the usual merges', async () => {
      const links = (tag: string) => [
        { url: `https://docs.example/${tag}/a`, passages: [`privateword${tag} alpha beta`, 'alpha gamma'] },
        { url: `https://docs.example/${tag}/b`, passages: ['alpha delta', 'beta epsilon'] },
        { url: `https://docs.example/${tag}/c`, passages: ['gamma zeta', 'delta eta'] },
      ];
      const plain = (await createCopilot(storage.db, { name: 'plain' })).id;
      const privy = (await createCopilot(storage.db, { name: 'private', enhanced_privacy: 1 })).id;
      // Each in two segments (two writes), the first link in the first.
      const plainIds = [
        ...(await seedIndexedLinks(storage.db, plain, links('p').slice(0, 1))),
        ...(await seedIndexedLinks(storage.db, plain, links('p').slice(1))),
      ];
      const privyIds = [
        ...(await seedIndexedLinks(storage.db, privy, links('q').slice(0, 1))),
        ...(await seedIndexedLinks(storage.db, privy, links('q').slice(1))),
      ];

      await deleteLinksAndPassages(storage, [plainIds[0]!]);
      expect(await mergeSegmentsStep(storage.db, dialect, inProcess)).toBe(false);
      expect(await rawIndexHits(storage, 'privatewordp')).toBe(1); // excluded, still in the postings

      await deleteLinksAndPassages(storage, [privyIds[0]!]);
      expect(await mergeSegmentsStep(storage.db, dialect, inProcess)).toBe(true);
      expect(await rawIndexHits(storage, 'privatewordq')).toBe(0);
      expect(await excludedCount(storage, privy)).toBe(0);
      expect(await mergeSegmentsStep(storage.db, dialect, inProcess)).toBe(false);
      expect(await phantomPostings(storage)).toBe(0);
      const hits = await kb.searchPassages(storage.scanDb, dialect, privy, queryTerms('alpha'), 10);
      expect(hits.map((h) => h.url)).toEqual(['https://docs.example/q/b']);
    });
  });
}
