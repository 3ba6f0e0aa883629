/**
 * Issue 16 §2: the search index of our own (src/domain/knowledgebase/search-index.ts), not
 * wired into the service yet. Its postings survive encoding, merging and exclusion, and its
 * scoring answers what `searchPassages` answers on both databases: the same passages, in the
 * same order, with the same scores, also once links are deleted.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  decodePostings,
  encodePostings,
  mergePostings,
  type Posting,
  type ScoredPassage,
  scorePassages,
  segmentOf,
} from '../../src/domain/knowledgebase/search-index.js';
import type { Storage } from '../../src/storage/database.js';
import * as kb from '../../src/storage/knowledge-base.repository.js';
import { passageTerms, queryTerms } from '../../src/text/search-terms.js';
import { createTestStorage, DIALECTS } from '../support/databases.js';
import { searchCorpus } from '../support/search-corpus.js';
import { seedIndexedLinks } from '../support/seed.js';

const listOf = (blobs: Buffer[], excluded?: number[]): Posting[] => {
  const l = decodePostings(blobs, excluded);
  return Array.from({ length: l.count }, (_, i) => ({ id: l.ids[i]!, tf: l.tfs[i]!, length: l.lengths[i]! }));
};

describe('postings', () => {
  const a: Posting[] = [
    { id: 1, tf: 1, length: 3 },
    { id: 130, tf: 256, length: 16_383 },
    { id: 2 ** 31 - 1, tf: 2, length: 7 },
  ];

  it('come back as written, however large the ids, counts and lengths', () => {
    expect(listOf([encodePostings(a)])).toEqual(a);
    expect(listOf([encodePostings([])])).toEqual([]);
  });

  it('refuses ids that do not ascend', () => {
    expect(() => encodePostings([a[1]!, a[0]!])).toThrow(RangeError);
    expect(() => encodePostings([a[0]!, a[0]!])).toThrow(RangeError);
  });

  it('of several segments whose ids interleave (written at the same moment) come back in id order; excluded ids are left out', () => {
    const first = [2, 5, 9].map((id) => ({ id, tf: id, length: 10 + id }));
    const second = [1, 6, 7, 12].map((id) => ({ id, tf: id, length: 10 + id }));
    const blobs = [encodePostings(first), encodePostings(second)];
    const all = [...first, ...second].sort((x, y) => x.id - y.id);
    expect(listOf(blobs)).toEqual(all);
    expect(listOf(blobs, [1, 7, 9, 40])).toEqual(all.filter((p) => ![1, 7, 9].includes(p.id)));
    // A merge is one blob of the same postings; nothing left is null.
    expect(listOf([mergePostings(blobs, [6])!])).toEqual(all.filter((p) => p.id !== 6));
    expect(mergePostings(blobs, [1, 2, 5, 6, 7, 9, 12])).toBeNull();
  });

  it("a segment holds each term's occurrences per passage, and the passage's length", () => {
    const segment = segmentOf([
      { id: 8, terms: 'b a a', term_count: 3 },
      { id: 3, terms: 'a c', term_count: 2 },
    ]);
    expect([...segment.keys()].sort()).toEqual(['a', 'b', 'c']);
    expect(listOf([segment.get('a')!])).toEqual([
      { id: 3, tf: 1, length: 2 },
      { id: 8, tf: 2, length: 3 },
    ]);
    expect(listOf([segment.get('b')!])).toEqual([{ id: 8, tf: 1, length: 3 }]);
  });
});

for (const dialect of DIALECTS) {
  describe(`the index's scoring answers what searchPassages answers (${dialect})`, () => {
    let storage: Storage;
    let cleanup: () => Promise<void>;
    beforeAll(async () => {
      ({ storage, cleanup } = await createTestStorage(dialect));
    });
    afterAll(async () => cleanup?.());

    /** The index's answer: its passages ordered as searchPassages orders them (ties by URL in code point order, then passage). */
    async function indexSearch(bot: string, q: string, limit: number, segments: Array<Map<string, Buffer>>, excluded: number[]) {
      const row = await storage.db.selectFrom('knowledge_bases').select(['passages', 'term_count']).where('bot_id', '=', bot).executeTakeFirstOrThrow();
      const scored: ScoredPassage[] = scorePassages(
        queryTerms(q).map((term) => segments.flatMap((s) => s.get(term) ?? [])),
        { passages: Number(row.passages), terms: Number(row.term_count) },
        limit,
        excluded,
      );
      if (scored.length === 0) return [];
      const where = new Map(
        (
          await storage.db
            .selectFrom('kb_passages as p')
            .innerJoin('kb_links as l', 'l.id', 'p.link_id')
            .select(['p.id', 'l.url', 'p.seq'])
            .where(
              'p.id',
              'in',
              scored.map((s) => s.id),
            )
            .execute()
        ).map((r) => [Number(r.id), { url: r.url, seq: Number(r.seq) }]),
      );
      const codePoints = (x: string, y: string) => (x < y ? -1 : x > y ? 1 : 0);
      return scored
        .map((s) => ({ ...where.get(s.id)!, rounded: s.rounded, score: Math.round(s.score * 1e6) / 1e6 }))
        .sort((x, y) => y.rounded - x.rounded || codePoints(x.url, y.url) || x.seq - y.seq)
        .slice(0, limit)
        .map(({ url, seq, score }) => ({ url, seq, score }));
    }

    it('for rare and common words alone and together, at several limits, before and after links are deleted', async () => {
      const bot = randomUUID();
      const links = searchCorpus(40, 10);
      const linkIds = await seedIndexedLinks(storage.db, bot, links);
      const rows = await storage.db.selectFrom('kb_passages').select(['id', 'content']).where('bot_id', '=', bot).execute();
      // Segments of four links' passages each, written out of id order; terms as the writer makes them.
      const passages = rows.map((r) => ({ id: Number(r.id), ...passageTerms(r.content) })).sort((x, y) => y.id - x.id);
      const segments = Array.from({ length: 10 }, (_, i) => segmentOf(passages.slice(i * 40, i * 40 + 40)));
      const queries = ['common', 'often', 'rare3', 'rare3 common', 'common rare7 often', 'rare1 rare2 common', 'fillera0', 'nothing here'];
      const compare = async (excluded: number[]) => {
        for (const q of queries)
          for (const limit of [1, 5, 10, 50]) {
            const theirs = (await kb.searchPassages(storage.scanDb, dialect, bot, queryTerms(q), limit)).map(({ url, seq, score }) => ({ url, seq, score }));
            expect(await indexSearch(bot, q, limit, segments, excluded), `${q} (limit ${limit})`).toEqual(theirs);
          }
      };
      await compare([]);
      // Every fourth link deleted: its passages are gone from the database and excluded from the index.
      const gone = linkIds.filter((_, i) => i % 4 === 1);
      const deleted = (await storage.db.selectFrom('kb_passages').select('id').where('link_id', 'in', gone).execute()).map((r) => Number(r.id));
      await kb.deleteLinksAndPassages(storage.db, dialect, gone);
      await compare(deleted.sort((x, y) => x - y));
    });
  });
}
