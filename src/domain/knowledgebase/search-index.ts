/**
 * The knowledge base's own search index (issue 16 §2, "search at 1,000,000 passages"): the pure
 * part, with no database. A bot's postings are kept as blobs, one per (segment, term): for each
 * passage holding the term, in ascending passage id, varint(id − previous id), varint(tf),
 * varint(the passage's term count). A segment is what one write added (a page's passages) or
 * what a merge of segments left; a search reads each query term's blobs and scores them here,
 * with the same bm25 as `searchPassages` (src/storage/knowledge-base.repository.ts), so that the
 * answers stay the same when the index changes under them.
 *
 * Not wired into the service yet: bench/search-segments.ts measures it (see bench/README.md,
 * "Session of 2026-11-28"), and the plan for the rest is in docs/search-index.md.
 */

/** A passage's entry in one term's postings. */
export interface Posting {
  id: number;
  /** Occurrences of the term in the passage (passageTerms keeps at most 256). */
  tf: number;
  /** The passage's term count (its `term_count`). */
  length: number;
}

/** A term's postings decoded: parallel arrays, ids ascending. */
export interface PostingList {
  ids: Int32Array;
  tfs: Uint16Array;
  lengths: Uint32Array;
  count: number;
}

/** The blob of `postings`, whose ids must ascend strictly. */
export function encodePostings(postings: readonly Posting[]): Buffer {
  // A varint of a 32-bit value takes at most 5 bytes: three per posting.
  const out = Buffer.allocUnsafe(postings.length * 15);
  let at = 0;
  const varint = (value: number) => {
    let v = value;
    while (v >= 0x80) {
      out[at++] = (v & 0x7f) | 0x80;
      v >>>= 7;
    }
    out[at++] = v;
  };
  let previous = 0;
  for (const p of postings) {
    if (!(Number.isInteger(p.id) && p.id > previous && p.id <= 0x7fffffff)) throw new RangeError(`posting ids must ascend: ${p.id} after ${previous}`);
    varint(p.id - previous);
    varint(p.tf);
    varint(p.length);
    previous = p.id;
  }
  return Buffer.from(out.subarray(0, at));
}

/**
 * The postings of one term from its blobs (one per segment, in any order: segments written by
 * writers at the same moment may interleave their ids), ids ascending, those in `excluded`
 * (ascending: passages deleted, or of a set being stored or retired) left out.
 */
export function decodePostings(blobs: readonly Uint8Array[], excluded: ArrayLike<number> = NO_IDS): PostingList {
  let bytes = 0;
  for (const b of blobs) bytes += b.length;
  // Each posting takes at least three bytes.
  const capacity = Math.floor(bytes / 3);
  let list: PostingList = { ids: new Int32Array(capacity), tfs: new Uint16Array(capacity), lengths: new Uint32Array(capacity), count: 0 };
  let ordered = true;
  for (const blob of blobs) {
    let at = 0;
    let id = 0;
    const read = () => {
      let value = 0;
      let shift = 0;
      let byte: number;
      do {
        byte = blob[at++]!;
        value += (byte & 0x7f) * 2 ** shift;
        shift += 7;
      } while (byte & 0x80);
      return value;
    };
    while (at < blob.length) {
      id += read();
      const n = list.count++;
      if (n > 0 && id <= list.ids[n - 1]!) ordered = false;
      list.ids[n] = id;
      list.tfs[n] = read();
      list.lengths[n] = read();
    }
  }
  if (!ordered) list = sortById(list);
  return excluded.length === 0 ? list : without(list, excluded);
}

const NO_IDS = new Int32Array(0);

function sortById(list: PostingList): PostingList {
  const order = Array.from({ length: list.count }, (_, i) => i).sort((a, b) => list.ids[a]! - list.ids[b]!);
  const sorted: PostingList = { ids: new Int32Array(list.count), tfs: new Uint16Array(list.count), lengths: new Uint32Array(list.count), count: list.count };
  order.forEach((from, to) => {
    sorted.ids[to] = list.ids[from]!;
    sorted.tfs[to] = list.tfs[from]!;
    sorted.lengths[to] = list.lengths[from]!;
  });
  return sorted;
}

/** `list` without the ids of `excluded` (both ascending), in place. */
function without(list: PostingList, excluded: ArrayLike<number>): PostingList {
  let kept = 0;
  let x = 0;
  for (let i = 0; i < list.count; i++) {
    const id = list.ids[i]!;
    while (x < excluded.length && excluded[x]! < id) x++;
    if (x < excluded.length && excluded[x] === id) continue;
    list.ids[kept] = id;
    list.tfs[kept] = list.tfs[i]!;
    list.lengths[kept++] = list.lengths[i]!;
  }
  list.count = kept;
  return list;
}

/** One blob of the postings of several blobs of a term (a merge of segments), the excluded left out; null when none is left. */
export function mergePostings(blobs: readonly Uint8Array[], excluded: ArrayLike<number> = NO_IDS): Buffer | null {
  const list = decodePostings(blobs, excluded);
  if (list.count === 0) return null;
  const postings: Posting[] = new Array(list.count);
  for (let i = 0; i < list.count; i++) postings[i] = { id: list.ids[i]!, tf: list.tfs[i]!, length: list.lengths[i]! };
  return encodePostings(postings);
}

/** A segment of passages: each term's blob. `terms` is a passage's `passageTerms(...).terms` (space-separated). */
export function segmentOf(passages: ReadonlyArray<{ id: number; terms: string; term_count: number }>): Map<string, Buffer> {
  const byTerm = new Map<string, Posting[]>();
  for (const p of [...passages].sort((a, b) => a.id - b.id)) {
    const tf = new Map<string, number>();
    for (const term of p.terms.split(' ')) if (term !== '') tf.set(term, (tf.get(term) ?? 0) + 1);
    for (const [term, n] of tf) {
      const list = byTerm.get(term);
      const posting = { id: p.id, tf: n, length: p.term_count };
      if (list) list.push(posting);
      else byTerm.set(term, [posting]);
    }
  }
  return new Map([...byTerm].map(([term, postings]) => [term, encodePostings(postings)]));
}

/** The bot's totals (its knowledge_bases row): passages, and their terms. */
export interface IndexTotals {
  passages: number;
  terms: number;
}

export interface ScoredPassage {
  id: number;
  /** bm25 over the best the query could reach: 0 < score ≤ 1. */
  score: number;
  /** The score to 9 decimals, as an integer: what ranks (ties then go by URL, then passage). */
  rounded: number;
}

/**
 * The passages that rank among the best `limit` for a query: `blobsByTerm` holds each query
 * term's blobs. bm25 (k1 = 1.2, b = 0.75) as `searchPassages` computes it, over the bot's totals
 * and each term's postings (df: the postings left once `excluded` are out). Every passage whose
 * rounded score reaches the limit-th best is returned (ties at the boundary, which the caller
 * orders by URL and passage), best first.
 */
export function scorePassages(
  blobsByTerm: ReadonlyArray<readonly Uint8Array[]>,
  totals: IndexTotals,
  limit: number,
  excluded: ArrayLike<number> = NO_IDS,
): ScoredPassage[] {
  if (limit <= 0) return [];
  const n = Math.max(totals.passages, 1);
  const avgdl = Math.max(totals.terms, 1) / n;
  const lists: Array<{ ids: Int32Array; weights: Float64Array; count: number; at: number }> = [];
  let best = 0;
  for (const blobs of blobsByTerm) {
    const list = decodePostings(blobs, excluded);
    if (list.count === 0) continue;
    const df = list.count;
    const idf = Math.log(1 + (Math.max(n, df) - df + 0.5) / (df + 0.5));
    best += idf * 2.2;
    const weights = new Float64Array(df);
    for (let i = 0; i < df; i++) {
      const tf = list.tfs[i]!;
      weights[i] = (idf * tf * 2.2) / (tf + 1.2 * (0.25 + (0.75 * list.lengths[i]!) / avgdl));
    }
    lists.push({ ids: list.ids, weights, count: df, at: 0 });
  }
  if (lists.length === 0) return [];

  // Every passage holding a term, its score summed over the terms (the lists merged by id).
  let candidates = 0;
  for (const l of lists) candidates += l.count;
  const ids = new Int32Array(candidates);
  const scores = new Float64Array(candidates);
  let found = 0;
  for (;;) {
    let next = 0x7fffffff + 1;
    for (const l of lists) if (l.at < l.count && l.ids[l.at]! < next) next = l.ids[l.at]!;
    if (next > 0x7fffffff) break;
    let sum = 0;
    for (const l of lists) if (l.at < l.count && l.ids[l.at] === next) sum += l.weights[l.at++]!;
    ids[found] = next;
    scores[found++] = sum / best;
  }

  // The limit-th best rounded score (a min-heap of the best `limit`), then every passage reaching it.
  const rounded = new Float64Array(found);
  const heap: number[] = [];
  for (let i = 0; i < found; i++) {
    const r = Math.floor(scores[i]! * 1_000_000_000 + 0.5);
    rounded[i] = r;
    if (heap.length < limit) heapPush(heap, r);
    else if (r > heap[0]!) heapReplaceTop(heap, r);
  }
  const cutoff = heap.length < limit ? Number.NEGATIVE_INFINITY : heap[0]!;
  const out: ScoredPassage[] = [];
  for (let i = 0; i < found; i++) if (rounded[i]! >= cutoff) out.push({ id: ids[i]!, score: scores[i]!, rounded: rounded[i]! });
  return out.sort((a, b) => b.rounded - a.rounded || a.id - b.id);
}

function heapPush(heap: number[], value: number): void {
  let i = heap.push(value) - 1;
  while (i > 0) {
    const parent = (i - 1) >> 1;
    if (heap[parent]! <= value) break;
    heap[i] = heap[parent]!;
    i = parent;
  }
  heap[i] = value;
}

function heapReplaceTop(heap: number[], value: number): void {
  let i = 0;
  for (;;) {
    const left = 2 * i + 1;
    if (left >= heap.length) break;
    const right = left + 1;
    const child = right < heap.length && heap[right]! < heap[left]! ? right : left;
    if (heap[child]! >= value) break;
    heap[i] = heap[child]!;
    i = child;
  }
  heap[i] = value;
}
