/**
 * Issue 16: knowledge-base search is exact bm25 as searchPassages documents it, on both
 * databases, whatever the index and lookup it uses: held to a reference that scores every
 * passage, for rare and common words alone and together, at several limits.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scorePassages } from '../../src/domain/knowledgebase/search-index.js';
import type { Storage } from '../../src/storage/database.js';
import * as kb from '../../src/storage/knowledge-base.repository.js';
import { queryTerms } from '../../src/text/search-terms.js';
import { createTestStorage, DIALECTS } from '../support/databases.js';
import { searchCorpus as corpus, searchReference as reference } from '../support/search-corpus.js';
import { seedIndexedLinks } from '../support/seed.js';

for (const dialect of DIALECTS) {
  describe(`search is exact bm25 (${dialect})`, () => {
    let storage: Storage;
    let cleanup: () => Promise<void>;
    beforeAll(async () => {
      ({ storage, cleanup } = await createTestStorage(dialect));
    });
    afterAll(async () => cleanup?.());

    it('answers what scoring every passage answers, for rare and common words alone and together', async () => {
      const bot = randomUUID();
      const links = corpus(40, 10);
      await seedIndexedLinks(storage.db, bot, links);
      const queries = [
        'common',
        'often',
        'rare3',
        'rare3 common',
        'common rare7 often',
        'often rare11',
        'rare1 rare2 common',
        'common often',
        'nothing here',
        'rare39 fillera0',
      ];
      // As the service scores; and by chunks whatever the terms' sizes (the service: 64 KiB or more).
      const scorers = { service: undefined, 'by chunks': (...args: Parameters<typeof scorePassages>) => scorePassages(args[0], args[1], args[2], args[3], 0) };
      for (const [how, scorer] of Object.entries(scorers))
        for (const q of queries)
          for (const limit of [1, 5, 10, 50]) {
            const hits = await kb.searchPassages(storage.scanDb, dialect, bot, queryTerms(q), limit, scorer);
            const expected = reference(links, q);
            expect(hits.length, `${q} (limit ${limit}, ${how})`).toBe(Math.min(limit, expected.length));
            // The scores are the best ones …
            for (const [i, hit] of hits.entries()) expect(hit.score, `${q} #${i}`).toBeCloseTo(expected[i]!.score, 6);
            // … and each is its passage's own.
            for (const hit of hits) expect(hit.score).toBeCloseTo(expected.find((e) => e.url === hit.url && e.seq === hit.seq)!.score, 6);
          }
    });
  });
}
