/**
 * Issue 16 §2: the search index's pure part (src/domain/knowledgebase/search-index.ts): its
 * postings and excluded ids survive encoding, segments decode in id order however they overlap,
 * merges drop the excluded ids they hold, and merges are chosen by tier. Its scoring is held to
 * a reference on both databases by search-reference.test.ts and search-index-merges.test.ts.
 */
import { describe, expect, it } from 'vitest';
import {
  BLOCK_BYTES,
  blocksOf,
  CHUNK,
  compareCodePoints,
  decodeIds,
  decodePostings,
  encodeIds,
  encodePostings,
  MERGE_FACTOR,
  MIN_EXCLUDED_TO_REWRITE,
  mergeSegments,
  type Posting,
  postingsIn,
  segmentOf,
  scorePassages,
  excludedWithin,
  segmentsToMerge,
  tierOf,
  unionIds,
  unpackBlock,
  withoutIds,
} from '../../src/domain/knowledgebase/search-index.js';

const listOf = (blobs: Uint8Array[], excluded?: number[]): Posting[] => {
  const l = decodePostings(blobs, excluded && Int32Array.from(excluded));
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

  it('take two bytes for a close id with a few occurrences in a passage of under 128 terms, and round-trip at every edge', () => {
    const close = Array.from({ length: CHUNK - 1 }, (_, i) => ({ id: 1 + i * 15, tf: 1 + (i % 6), length: 127 }));
    expect(encodePostings(close).length).toBe(2 * (CHUNK - 1));
    const edges: Posting[] = [
      { id: 16, tf: 6, length: 0 },
      { id: 17, tf: 7, length: 128 },
      { id: 40, tf: 8, length: 1 },
      { id: 2 ** 30, tf: 255, length: 2 ** 31 },
      { id: 2 ** 31 - 1, tf: 65_535, length: 3 },
    ];
    expect(listOf([encodePostings(edges)])).toEqual(edges);
  });

  it('of CHUNK or more are written in chunks of CHUNK, each behind a header, and round-trip', () => {
    expect(CHUNK).toBe(128);
    const close = Array.from({ length: 200 }, (_, i) => ({ id: 1 + i * 15, tf: 1 + (i % 6), length: 127 }));
    const blob = encodePostings(close);
    // Byte 1; then the chunk's bytes, postings and id span, and the (count, length) pairs no
    // other posting outweighs: 256, 128, 1906, one pair (6, 127) for the first chunk; 144, 72,
    // 1080, (6, 127) for the second.
    expect([...blob.subarray(0, 10)]).toEqual([1, 0x80, 2, 0x80, 1, 0xf2, 0x0e, 1, 6, 127]);
    expect(blob.length).toBe(10 + 2 * 128 + 9 + 2 * 72);
    expect([...blob.subarray(10 + 256, 10 + 256 + 9)]).toEqual([1, 0x90, 1, 72, 0xb8, 8, 1, 6, 127]);
    expect(listOf([blob])).toEqual(close);
    expect(listOf([blob], [1, 16, 961, 976, 1486])).toEqual(close.filter((p) => ![1, 16, 961, 976, 1486].includes(p.id)));
    const large = Array.from({ length: 1000 }, (_, i) => ({ id: 7 + i * 1000, tf: 1 + (i % 300), length: i * 97 }));
    expect(listOf([encodePostings(large)])).toEqual(large);
  });

  it('of a chunk are bounded by the (count, length) pairs no other posting outweighs, neighbours joined beyond eight', () => {
    const chunk = (pairs: Array<[number, number]>) =>
      chunkHeaderAt(
        encodePostings(Array.from({ length: CHUNK }, (_, i) => ({ id: i + 1, tf: pairs[i % pairs.length]![0], length: pairs[i % pairs.length]![1] }))),
        0,
      ).pairs;
    // (2, 60) is outweighed by (3, 50); (9, 500) and (1, 10) by none.
    expect(
      chunk([
        [9, 500],
        [2, 60],
        [3, 50],
        [1, 10],
        [3, 50],
      ]),
    ).toEqual([
      [1, 10],
      [3, 50],
      [9, 500],
    ]);
    // Ten pairs no other outweighs: joined two by two into (the larger count, the shorter length).
    expect(chunk(Array.from({ length: 10 }, (_, i) => [i + 1, 10 * (i + 1)]))).toEqual([
      [2, 10],
      [4, 30],
      [6, 50],
      [8, 70],
      [10, 90],
    ]);
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

describe('blocks', () => {
  // Words whose UTF-16 order, code point order and a locale's order differ: 'é' sorts after 'z'
  // as UTF-8 bytes (before 'f' in most locales), '\u{1f600}' after '\uffee' (before it in UTF-16).
  const words = ['a', 'ab', 'b', 'étude', 'f', 'zz', '\uffee', '\u{1f600}x', '日本', '0', '_x'];
  const many = Array.from({ length: 3000 }, (_, i) => `${words[i % words.length]}${i}`);
  const blob = (n: number) => encodePostings(Array.from({ length: n }, (_, i) => ({ id: i + 1, tf: 1, length: 5 })));
  const entries = many.map((term, i) => [term, blob(1 + (i % 5))] as const);
  const byBytes = (x: string, y: string) => Buffer.compare(Buffer.from(x), Buffer.from(y));

  it("hold a segment's terms in UTF-8 byte order, about BLOCK_BYTES each, every blob as written", () => {
    const blocks = blocksOf(entries);
    expect(blocks.length).toBeGreaterThan(10);
    const unpacked = blocks.flatMap((b) => unpackBlock(b.block));
    expect(unpacked.map((e) => e.term)).toEqual([...many].sort(byBytes));
    for (const b of blocks) {
      expect(b.block.length).toBeLessThanOrEqual(BLOCK_BYTES);
      expect(unpackBlock(b.block)[0]!.term).toBe(b.firstTerm);
    }
    const written = new Map(entries);
    for (const e of unpacked) expect(Buffer.from(e.postings).equals(written.get(e.term)!)).toBe(true);
  });

  it('find each term in the block whose first term is the greatest not after it, and no other', () => {
    const blocks = blocksOf(entries);
    const blockOf = (term: string) => blocks.filter((b) => byBytes(b.firstTerm, term) <= 0).at(-1);
    for (const [term, written] of entries) {
      const found = postingsIn(blockOf(term)!.block, Buffer.from(term));
      expect(found && Buffer.from(found).equals(written), term).toBe(true);
    }
    for (const absent of ['a', 'étude', '\u{1f600}', 'zzz', '日本'])
      expect(postingsIn(blockOf(absent)?.block ?? new Uint8Array(0), Buffer.from(absent))).toBeNull();
  });

  it('compare terms as their UTF-8 bytes do', () => {
    const chars = ['a', 'z', '\u00e9', '\u07ff', '\u0800', '\ud7ff', '\ue000', '\uffee', '\u{10000}', '\u{1f600}', '\u{10ffff}'];
    const strings = chars.flatMap((x) => chars.map((y) => x + y)).concat(chars);
    for (const a of strings)
      for (const b of strings) expect(Math.sign(compareCodePoints(a, b)), `${a} ${b}`).toBe(Buffer.compare(Buffer.from(a), Buffer.from(b)));
  });

  it('give a blob larger than a block a block of its own', () => {
    const blocks = blocksOf([
      ['a', blob(10)],
      ['common', blob(4000)],
      ['d', blob(10)],
    ]);
    expect(blocks.map((b) => b.firstTerm)).toEqual(['a', 'common', 'd']);
    expect(blocks[1]!.block.length).toBeGreaterThan(BLOCK_BYTES);
    expect(blocksOf([])).toEqual([]);
  });
});

describe('excluded ids', () => {
  it('come back as written, and combine as sets', () => {
    const a = Int32Array.from([3, 9, 200, 2 ** 31 - 1]);
    expect([...decodeIds(encodeIds(a))]).toEqual([...a]);
    expect([...decodeIds(null)]).toEqual([]);
    expect([...unionIds(a, [1, 9, 10])]).toEqual([1, 3, 9, 10, 200, 2 ** 31 - 1]);
    expect([...withoutIds(a, [9, 10, 2 ** 31 - 1])]).toEqual([3, 200]);
    expect(() => encodeIds([5, 5])).toThrow(RangeError);
  });
});

describe('segments', () => {
  const postings = (ids: number[]) => encodePostings(ids.map((id) => ({ id, tf: 1, length: id })));

  it('that overlap (a merge beside later writes) decode in id order, however many', () => {
    // A merged segment's range holds a later segment's, and a third overlaps both.
    const blobs = [postings([1, 2, 40, 41, 90]), postings([10, 11, 12]), postings([5, 42, 100]), postings([101, 102])];
    expect(listOf(blobs).map((p) => p.id)).toEqual([1, 2, 5, 10, 11, 12, 40, 41, 42, 90, 100, 101, 102]);
    expect(listOf(blobs, [2, 12, 101]).map((p) => p.id)).toEqual([1, 5, 10, 11, 40, 41, 42, 90, 100, 102]);
  });

  /** A segment of one link's postings per term, as merges read it. */
  const input = (terms: Record<string, Posting[]>) => {
    const ids = Object.values(terms).flatMap((list) => list.map((p) => p.id));
    return {
      blocks: blocksOf(Object.entries(terms).map(([term, list]) => [term, encodePostings(list)] as const)).map((b) => b.block),
      passages: new Set(ids).size,
      minId: Math.min(...ids),
      maxId: Math.max(...ids),
    };
  };
  const one = (ids: number[]) => ids.map((id) => ({ id, tf: 1, length: id }));

  it('merge into one, dropping the excluded ids they hold and telling which', () => {
    const merged = mergeSegments([input({ a: one([1, 4, 7]), b: one([4]) }), input({ a: one([9, 12]), c: one([12]) })], Int32Array.from([4, 12, 50]));
    const entries = merged.blocks.flatMap((b) => unpackBlock(b.block));
    expect(entries.map((e) => e.term)).toEqual(['a']);
    expect(listOf([entries[0]!.postings]).map((p) => p.id)).toEqual([1, 7, 9]);
    expect([...merged.dropped]).toEqual([4, 12]);
    expect(merged).toMatchObject({ passages: 3, minId: 1, maxId: 9 });
  });

  it("join apart segments' blobs as they are, a reset byte between them, unless they hold excluded ids or interleave", () => {
    // Three segments of a term, the second with tf ≥ 7 and long passages (multi-byte varints).
    const parts = [one([1, 2, 3]), [200, 300].map((id) => ({ id, tf: 9, length: 5000 })), [{ id: 100_000, tf: 2, length: 1 }]];
    const all = parts.flat();
    const merge = (excluded: number[], segments = parts) =>
      mergeSegments(
        [segments[2]!, segments[0]!, segments[1]!].map((p) => input({ t: p })),
        Int32Array.from(excluded),
      );
    const blobOf = (merged: ReturnType<typeof merge>) => merged.blocks.flatMap((b) => unpackBlock(b.block))[0]!.postings;
    for (const excluded of [[], [50], [2], [300, 100_000]]) {
      const merged = merge(excluded);
      const kept = all.filter((p) => !excluded.includes(p.id));
      expect(listOf([blobOf(merged)]), `excluded ${excluded}`).toEqual(kept);
      expect(listOf([blobOf(merged)], [2, 200])).toEqual(kept.filter((p) => p.id !== 2 && p.id !== 200));
      expect(merged).toMatchObject({ passages: kept.length, minId: kept[0]!.id, maxId: kept.at(-1)!.id });
      expect([...merged.dropped]).toEqual(excluded.filter((id) => all.some((p) => p.id === id)));
      // Joined when no excluded id is in a segment's range; written again otherwise.
      const joined = Buffer.concat(parts.flatMap((p, i) => (i === 0 ? [encodePostings(p)] : [Buffer.from([0]), encodePostings(p)])));
      const expected = excluded.some((id) => all.some((p) => p.id === id)) ? encodePostings(kept) : joined;
      expect(Buffer.from(blobOf(merged)).equals(expected), `excluded ${excluded}`).toBe(true);
    }
    // Segments whose ids interleave are decoded and written again.
    const interleaved = [one([1, 5]), one([3, 8]), one([10])];
    expect(Buffer.from(blobOf(merge([], interleaved))).equals(encodePostings(one([1, 3, 5, 8, 10])))).toBe(true);
  });

  it("write again in chunks a large term's postings outside chunks (pages' few each); join those in chunks as they are", () => {
    const blobsOf = (merged: ReturnType<typeof mergeSegments>) => new Map(merged.blocks.flatMap((b) => unpackBlock(b.block)).map((e) => [e.term, e.postings]));
    // Eight pages: "common" 40 postings each (under CHUNK: no header), "rare" one.
    const pages = Array.from({ length: 8 }, (_, p) => ({ common: one(Array.from({ length: 40 }, (_, i) => p * 100 + i + 1)), rare: one([p * 100 + 50]) }));
    const merged = blobsOf(
      mergeSegments(
        pages.map((terms) => input(terms)),
        new Int32Array(),
      ),
    );
    const common = pages.flatMap((p) => p.common);
    expect(listOf([merged.get('common')!])).toEqual(common);
    expect(Buffer.from(merged.get('common')!).equals(encodePostings(common))).toBe(true);
    expect(merged.get('common')![0]).toBe(1);
    const rare = Buffer.concat(pages.flatMap((p, i) => (i === 0 ? [encodePostings(p.rare)] : [Buffer.from([0]), encodePostings(p.rare)])));
    expect(Buffer.from(merged.get('rare')!).equals(rare)).toBe(true);
    // Two such merges' chunks, merged: joined as they are.
    const later = Array.from({ length: 320 }, (_, i) => ({ id: 10_000 + i, tf: 1, length: 5 }));
    const again = blobsOf(mergeSegments([input({ common }), input({ common: later })], new Int32Array()));
    expect(Buffer.from(again.get('common')!).equals(Buffer.concat([encodePostings(common), Buffer.from([0]), encodePostings(later)]))).toBe(true);
  });

  it('are merged eight of the lowest tier at a time, the oldest first; else one rewritten when many of its passages were deleted', () => {
    const seg = (id: number, passages: number, minId = id * 1000, maxId = id * 1000 + 999) => ({ id, passages, minId, maxId });
    expect(tierOf(7)).toBe(0);
    expect(tierOf(8)).toBe(1);
    expect(tierOf(64)).toBe(2);
    const small = Array.from({ length: MERGE_FACTOR }, (_, i) => seg(20 - i, 10));
    expect(segmentsToMerge([seg(1, 5000), ...small, seg(30, 3)], [])).toEqual(small.map((s) => s.id).sort((x, y) => x - y));
    expect(segmentsToMerge(small.slice(1), [])).toBeNull();
    // 1,000 excluded ids, all in segment 2's range: an eighth of the 7,010 passages or more.
    const many = Int32Array.from({ length: MIN_EXCLUDED_TO_REWRITE }, (_, i) => 2000 + i);
    expect(segmentsToMerge([seg(1, 3000), seg(2, 4000, 2000, 2999), seg(3, 10)], many)).toEqual([2]);
    expect(segmentsToMerge([seg(1, 40_000), seg(2, 40_000, 2000, 2999)], many)).toBeNull();
    expect(segmentsToMerge([seg(2, 1100, 2000, 2999)], many.subarray(1))).toBeNull();
    // Eager (an enhanced_privacy copilot's): one excluded id is enough, and every segment whose
    // range holds it is merged, overlapping ranges included; the ids within them may all go.
    const one = Int32Array.from([2500]);
    expect(segmentsToMerge([seg(1, 40_000), seg(2, 40_000, 2000, 2999)], one)).toBeNull();
    expect(segmentsToMerge([seg(1, 40_000), seg(2, 40_000, 2000, 2999), seg(3, 5, 2400, 3100)], one, { eager: true })).toEqual([2, 3]);
    expect(segmentsToMerge([seg(1, 40_000)], one, { eager: true })).toBeNull();
    expect([...excludedWithin(Int32Array.from([5, 2500, 3050, 9000]), [seg(2, 1, 2000, 2999), seg(3, 1, 2400, 3100)])]).toEqual([2500, 3050]);
  });
});

/** A chunk's header at `at` (byte 1, four varints, then pairs of varints), as search-index.ts documents it. */
function chunkHeaderAt(blob: Uint8Array, at: number) {
  expect(blob[at]).toBe(1);
  let i = at + 1;
  const next = () => {
    let value = 0;
    for (let shift = 0; ; shift += 7) {
      const byte = blob[i++]!;
      value += (byte & 0x7f) * 2 ** shift;
      if (byte < 0x80) return value;
    }
  };
  const [bytes, count, span] = [next(), next(), next()];
  const pairs = Array.from({ length: next() }, () => [next(), next()]);
  return { bytes, count, span, pairs, postings: i };
}

describe('scoring', () => {
  /**
   * `scorePassages`' last argument: by chunks when every term is 64 KiB or more (as the service
   * scores); by chunks whatever the sizes; by chunks when every term is 2,000 bytes or more.
   */
  const WAYS = [undefined, 0, 2000];

  /** bm25 as documented, passage by passage: every passage reaching the limit-th best rounded score. */
  function expected(terms: Posting[][], totals: { passages: number; terms: number }, limit: number) {
    const avgdl = totals.terms / totals.passages;
    const idfs = terms.map((list) => Math.log(1 + (totals.passages - list.length + 0.5) / (list.length + 0.5)));
    const best = idfs.filter((_, t) => terms[t]!.length > 0).reduce((n, idf) => n + idf * 2.2, 0);
    const sums = new Map<number, number>();
    terms.forEach((list, t) => {
      for (const p of list) sums.set(p.id, (sums.get(p.id) ?? 0) + (idfs[t]! * p.tf * 2.2) / (p.tf + 1.2 * (0.25 + (0.75 * p.length) / avgdl)));
    });
    const all = [...sums].map(([id, sum]) => ({ id, score: sum / best, rounded: Math.floor((sum / best) * 1e9 + 0.5) }));
    all.sort((a, b) => b.rounded - a.rounded || a.id - b.id);
    const cutoff = all.length < limit ? Number.NEGATIVE_INFINITY : all[limit - 1]!.rounded;
    return all.filter((p) => p.rounded >= cutoff);
  }

  it('answers bm25 passage by passage, ties at the cutoff included, whether ids are close together or far apart', () => {
    let seed = 11;
    const next = () => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return seed / 2 ** 32;
    };
    // A common term, a middling one and a rare one over 3,000 passages; few lengths and counts, so many ties.
    const passages = 3000;
    const terms = [0.9, 0.2, 0.01].map((share) =>
      Array.from({ length: passages }, (_, i) => i + 1)
        .filter(() => next() < share)
        .map((id) => ({ id, tf: 1 + Math.floor(next() * 3), length: 20 + 10 * Math.floor(next() * 3) })),
    );
    const totals = { passages, terms: passages * 30 };
    // Close together: summed in one array over their range; far apart (ids × 100,000): merged by id.
    for (const spread of [1, 100_000]) {
      const spreadTerms = terms.map((list) => list.map((p) => ({ ...p, id: p.id * spread })));
      const blobs = spreadTerms.map((list) => [encodePostings(list.slice(0, 1000)), encodePostings(list.slice(1000))]);
      for (const limit of [1, 10, 100, 5000])
        for (const used of [[0], [0, 1], [0, 1, 2], [2]])
          for (const byChunksFrom of WAYS) {
            const got = scorePassages(
              used.map((t) => blobs[t]!),
              totals,
              limit,
              undefined,
              byChunksFrom,
            );
            expect(got, `spread ${spread}, limit ${limit}, terms ${used}, by chunks from ${byChunksFrom}`).toEqual(
              expected(
                used.map((t) => spreadTerms[t]!),
                totals,
                limit,
              ),
            );
          }
    }
  });

  it('answers one word, and one word beside a rare one, as bm25 does passage by passage: excluded passages, long ones, joined and interleaving blobs', () => {
    let seed = 7;
    const next = () => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return seed / 2 ** 32;
    };
    // 4,000 passages, most holding the word: a few pairs shared by many (ties), some counts of 8
    // or more and lengths of 1,024 or more (not small pairs: read whole), ids in three runs.
    const all = Array.from({ length: 4000 }, (_, i) => i + 1)
      .filter(() => next() < 0.8)
      .map((id) => {
        const odd = next() < 0.02;
        return {
          id,
          tf: odd ? 8 + Math.floor(next() * 300) : 1 + Math.floor(next() * 4),
          length: odd && next() < 0.5 ? 1024 + Math.floor(next() * 5000) : 20 + 5 * Math.floor(next() * 8),
        };
      });
    const totals = { passages: 4000, terms: 4000 * 40 };
    const runs = [all.slice(0, 1000), all.slice(1000, 2000), all.slice(2000)];
    const layouts: Array<[string, Uint8Array[]]> = [
      ['one blob a run', runs.map((r) => encodePostings(r))],
      // A merge's join: runs after one another, a reset byte between them.
      ['joined', [Buffer.concat(runs.flatMap((r, i) => (i === 0 ? [encodePostings(r)] : [Buffer.from([0]), encodePostings(r)])))]],
      // Chunks, then pages' blobs of fewer than CHUNK postings, joined or not: each posting of those a piece.
      [
        'chunks and small blobs',
        [
          encodePostings(runs[0]!),
          Buffer.concat([encodePostings(runs[1]!.slice(0, 40)), Buffer.from([0]), encodePostings(runs[1]!.slice(40, 100))]),
          ...Array.from({ length: Math.ceil((runs[1]!.length - 100) / 50) }, (_, i) => encodePostings(runs[1]!.slice(100 + i * 50, 150 + i * 50))),
          encodePostings(runs[2]!),
        ],
      ],
      // Segments whose ids interleave (written at the same moment), in no order.
      ['interleaving', [encodePostings(all.filter((p) => p.id % 2 === 0)), encodePostings(all.filter((p) => p.id % 2 === 1))]],
    ];
    const excludedSets = [[], all.filter(() => next() < 0.1).map((p) => p.id), [all[0]!.id, all.at(-1)!.id, 999_999]];
    for (const [layout, blobs] of layouts)
      for (const excluded of excludedSets)
        for (const limit of [1, 10, 200, 5000])
          for (const byChunksFrom of WAYS) {
            const kept = all.filter((p) => !excluded.includes(p.id));
            const how = `${layout}, ${excluded.length} excluded, limit ${limit}, by chunks from ${byChunksFrom}`;
            expect(scorePassages([blobs], totals, limit, Int32Array.from(excluded), byChunksFrom), how).toEqual(expected([kept], totals, limit));
            // The same word beside a rare one (of its postings, only those of the rare word's passages decoded), and
            // beside words with no postings.
            const rare = kept.filter((_, i) => i % 97 === 0).map((p) => ({ ...p, tf: 1 }));
            expect(
              scorePassages([[], blobs, [encodePostings(rare)]], totals, limit, Int32Array.from(excluded), byChunksFrom),
              `${how}, with a rare word`,
            ).toEqual(expected([[], kept, rare], totals, limit));
          }
  });

  it('reads again, whole, the term of the most bytes when another term is the commonest', () => {
    // "bulky": 80 postings of 8 or 9 bytes, half in very long passages that hold "common", half in
    // one-word passages far apart that rank first; "common": 320 postings of 2 bytes. bulky is read
    // last, only its postings of common's passages kept; but common is the commonest, so bulky's
    // postings are needed whole.
    const totals = { passages: 2_000_000_000, terms: 2_000_000_000 * 40 };
    const common = Array.from({ length: 320 }, (_, i) => ({ id: 1_000_000 + i, tf: 1 + (i % 3), length: 20 + (i % 7) }));
    const near = Array.from({ length: 40 }, (_, i) => ({ id: 1_000_000 + i * 4, tf: 250, length: 300_000_000 + i }));
    const far = Array.from({ length: 40 }, (_, i) => ({ id: 2_000_000 + i * 2 ** 25, tf: 20_000, length: 1 }));
    const bulky = [...near, ...far];
    const blobs = [[encodePostings(common)], [encodePostings(bulky)]];
    expect(blobs[1]![0]!.length).toBeGreaterThan(blobs[0]![0]!.length);
    for (const limit of [1, 10, 60])
      for (const byChunksFrom of WAYS)
        expect(scorePassages(blobs, totals, limit, undefined, byChunksFrom), `limit ${limit}, by chunks from ${byChunksFrom}`).toEqual(
          expected([common, bulky], totals, limit),
        );
  });

  it('never reads a chunk whose postings cannot rank', () => {
    // Two words over 2,000 passages; the ten that hold both nine times are in the first chunks.
    // Every other chunk's postings are spoiled (each byte 0x0f: a distance of 1, 15 occurrences in a
    // passage of 15 terms, which would outrank all): read, they would change the answer.
    const totals = { passages: 2000, terms: 2000 * 50 };
    const words = [0, 1].map((w) => Array.from({ length: 2000 }, (_, i) => ({ id: i + 1, tf: i < 10 ? 9 : 1 + ((i + w) % 2), length: 50 + (i % 5) })));
    const spoiled = words.map((list) => {
      const blob = Buffer.from(encodePostings(list));
      let at = 0;
      for (let chunk = 0; at < blob.length; chunk++) {
        const header = chunkHeaderAt(blob, at);
        if (chunk > 0) blob.fill(0x0f, header.postings, header.postings + header.bytes);
        at = header.postings + header.bytes;
      }
      return [blob];
    });
    for (const used of [[0], [0, 1]])
      expect(
        scorePassages(
          used.map((w) => spoiled[w]!),
          totals,
          10,
          undefined,
          0,
        )
          .map((p) => p.id)
          .sort((a, b) => a - b),
        `words ${used}`,
      ).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    // A rare word beside the common one: its ten passages of five occurrences (ids 1–10) rank
    // first, its ten of one (ids 1,501–1,510) cannot; the common word's weight is looked up in
    // the first chunk alone, and the spoiled ones are never read.
    const rare = [
      ...Array.from({ length: 10 }, (_, i) => ({ id: i + 1, tf: 5, length: 50 })),
      ...Array.from({ length: 10 }, (_, i) => ({ id: 1501 + i, tf: 1, length: 50 })),
    ];
    const beside = scorePassages([spoiled[0]!, [encodePostings(rare)]], totals, 10, undefined, 0);
    expect(beside).toEqual(expected([words[0]!, rare], totals, 10));
    expect(beside.map((p) => p.id).sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    // Read whole (not by chunks: under 64 KiB), the spoiled postings outrank them.
    expect(scorePassages([spoiled[0]!], totals, 10).some((p) => p.id > 10)).toBe(true);
  });

  it('keeps a passage whose score rounds to the cutoff though it sums a little less than the limit-th', () => {
    // Lengths barely count against an enormous average: the two scores differ by far less than 10⁻⁹.
    const totals = { passages: 1000, terms: 1e15 };
    const blob = encodePostings([
      { id: 1, tf: 1, length: 21 },
      { id: 2, tf: 1, length: 20 },
    ]);
    const scored = scorePassages([[blob]], totals, 1);
    expect(scored.map((p) => p.id)).toEqual([1, 2]);
    const [longer, shorter] = scored;
    expect(longer!.score).toBeLessThan(shorter!.score);
    expect(longer!.rounded).toBe(shorter!.rounded);
  });

  it("weighs every passage of the commonest word when some of them outrank the other words' passages", () => {
    // "common" in 900 of 1,000 passages, ten of them short with it five times; "other" in 200
    // very long ones (its weight small): those ten outrank every passage holding "other".
    const totals = { passages: 1000, terms: 50_000 };
    const common = Array.from({ length: 900 }, (_, i) => ({ id: i + 1, tf: i < 10 ? 5 : 1, length: i < 10 ? 5 : 50 }));
    const other = Array.from({ length: 200 }, (_, i) => ({ id: 701 + i, tf: 1, length: 5000 }));
    const blobs = [[encodePostings(common)], [encodePostings(other)]];
    for (const limit of [1, 10, 50])
      for (const byChunksFrom of WAYS) {
        const got = scorePassages(blobs, totals, limit, undefined, byChunksFrom);
        expect(got, `limit ${limit}`).toEqual(expected([common, other], totals, limit));
        expect(got.some((p) => p.id <= 10)).toBe(true);
      }
    // And the other way round: a rare word's passages outrank all, the commonest word's alone never weighed.
    const rare = Array.from({ length: 100 }, (_, i) => ({ id: 2 + i * 9, tf: 1, length: 50 }));
    expect(scorePassages([[encodePostings(common)], [encodePostings(rare)]], totals, 10)).toEqual(expected([common, rare], totals, 10));
  });
});
