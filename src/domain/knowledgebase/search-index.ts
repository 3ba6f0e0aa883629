/**
 * The knowledge base's own search index (issue 16 §2, "search at 1,000,000 passages"): the pure
 * part, with no database. A bot's postings are kept as blobs, one per (segment, term): for each
 * passage holding the term, in ascending passage id, varint((id − previous id) · 8 + min(tf, 7)),
 * then varint(tf) when tf ≥ 7, then varint(the passage's term count): two bytes for most
 * postings (a close id, a few occurrences, a passage of under 128 terms). A segment's blobs are
 * packed into blocks of about 4 KiB (`blocksOf`). A segment is what one write added (a page's
 * passages) or what a merge of segments left; a search reads each query term's blobs and scores them here,
 * with the same bm25 as `searchPassages` (src/storage/knowledge-base.repository.ts), so that the
 * answers stay the same when the index changes under them.
 *
 * The storage (tables, writes, merges, search) is src/storage/search-index.repository.ts;
 * docs/search-index.md tells the whole.
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
  const list = emptyList(postings.length);
  for (const p of postings) {
    list.ids[list.count] = p.id;
    list.tfs[list.count] = p.tf;
    list.lengths[list.count++] = p.length;
  }
  return encodeList(list);
}

/** Ids ascend strictly, 1 … 2³¹ − 1. */
function ascending(id: number, previous: number): void {
  if (!(Number.isInteger(id) && id > previous && id <= 0x7fffffff)) throw new RangeError(`ids must ascend: ${id} after ${previous}`);
}

/** Varints into a buffer of a known bound. */
class VarintWriter {
  private readonly out: Buffer;
  private at = 0;
  constructor(bound: number) {
    this.out = Buffer.allocUnsafe(bound);
  }
  /** A non-negative integer up to 2⁵³, seven bits a byte, the lowest first. */
  varint(value: number): void {
    let v = value;
    while (v >= 0x80) {
      this.out[this.at++] = (v % 0x80) | 0x80;
      v = Math.floor(v / 0x80);
    }
    this.out[this.at++] = v;
  }
  /** A posting after the one of id `previous`; returns its id. */
  posting(id: number, previous: number, tf: number, length: number): number {
    ascending(id, previous);
    const small = Math.min(tf, 7);
    this.varint((id - previous) * 8 + small);
    if (small === 7) this.varint(tf);
    this.varint(length);
    return id;
  }
  /**
   * A list's postings (ids ascending): behind a chunk header every CHUNK postings when there are
   * CHUNK or more (`SKIP`).
   */
  list(list: PostingList): void {
    const { ids, tfs, lengths, count } = list;
    let previous = 0;
    if (count < CHUNK) {
      for (let i = 0; i < count; i++) previous = this.posting(ids[i]!, previous, tfs[i]!, lengths[i]!);
      return;
    }
    for (let from = 0; from < count; from += CHUNK) {
      const to = Math.min(count, from + CHUNK);
      let bytes = 0;
      let last = previous;
      for (let i = from; i < to; i++) {
        const id = ids[i]!;
        const tf = tfs[i]!;
        ascending(id, last);
        bytes += varintBytes((id - last) * 8 + Math.min(tf, 7)) + (tf >= 7 ? varintBytes(tf) : 0) + varintBytes(lengths[i]!);
        last = id;
      }
      const pairs = frontierOf(tfs, lengths, from, to);
      this.varint(SKIP);
      this.varint(bytes);
      this.varint(to - from);
      this.varint(last - previous);
      this.varint(pairs.length / 2);
      for (const value of pairs) this.varint(value);
      for (let i = from; i < to; i++) previous = this.posting(ids[i]!, previous, tfs[i]!, lengths[i]!);
    }
  }
  /** A string's UTF-8 bytes (`length` of them). */
  text(text: string, length: number): void {
    if (length === text.length) for (let i = 0; i < length; i++) this.out[this.at++] = text.charCodeAt(i);
    else this.at += this.out.write(text, this.at, 'utf8');
  }
  /** Bytes as they are. */
  bytes(bytes: Uint8Array): void {
    this.out.set(bytes, this.at);
    this.at += bytes.length;
  }
  /** An id as its distance from the one before. */
  id(id: number, previous: number): void {
    ascending(id, previous);
    this.varint(id - previous);
  }
  done(): Buffer {
    return Buffer.from(this.out.subarray(0, this.at));
  }
}

/** Ascending passage ids as one blob (varint distances): a bot's excluded ids (kb_excluded). */
export function encodeIds(ids: ArrayLike<number>): Buffer {
  const out = new VarintWriter(ids.length * 5);
  let previous = 0;
  for (let i = 0; i < ids.length; i++) {
    out.id(ids[i]!, previous);
    previous = ids[i]!;
  }
  return out.done();
}

/** The ids of `encodeIds`' blob (none for null). */
export function decodeIds(blob: Uint8Array | null | undefined): Int32Array {
  if (!blob || blob.length === 0) return NO_IDS;
  const ids = new Int32Array(blob.length);
  const read = new VarintReader(blob);
  let count = 0;
  let id = 0;
  while (read.at < blob.length) {
    id += read.next();
    ids[count++] = id;
  }
  return ids.slice(0, count);
}

/** Varints from a blob, from `at` on. */
class VarintReader {
  at = 0;
  constructor(private readonly blob: Uint8Array) {}
  next(): number {
    const value = longVarint(this.blob, this.at);
    this.at = longEnd;
    return value;
  }
}

/** The ids in `a` or `b` (each ascending), ascending, each once. */
export function unionIds(a: ArrayLike<number>, b: ArrayLike<number>): Int32Array {
  const out = new Int32Array(a.length + b.length);
  let i = 0;
  let j = 0;
  let n = 0;
  while (i < a.length || j < b.length) {
    const x = i < a.length ? a[i]! : Number.POSITIVE_INFINITY;
    const y = j < b.length ? b[j]! : Number.POSITIVE_INFINITY;
    const next = Math.min(x, y);
    if (x === next) i++;
    if (y === next) j++;
    out[n++] = next;
  }
  return out.slice(0, n);
}

/** The ids of `a` not in `b` (each ascending). */
export function withoutIds(a: ArrayLike<number>, b: ArrayLike<number>): Int32Array {
  const out = new Int32Array(a.length);
  let n = 0;
  let j = 0;
  for (let i = 0; i < a.length; i++) {
    while (j < b.length && b[j]! < a[i]!) j++;
    if (j < b.length && b[j] === a[i]) continue;
    out[n++] = a[i]!;
  }
  return out.slice(0, n);
}

/**
 * The postings of one term from its blobs (one per segment, in any order: segments written by
 * writers at the same moment, or a merge's segment beside later ones, may interleave their ids),
 * ids ascending, those in `excluded` (ascending: passages deleted, or of a set being stored or
 * retired) left out; with `wanted` (ascending ids, not empty), only the postings of those
 * passages are kept. `walked`: the postings not left out, kept or not (the term's df). Blobs
 * whose ids follow one another are read straight into place; one that overlaps those before it
 * is merged into them.
 */
export function decodePostings(blobs: readonly Uint8Array[], excluded: Int32Array = NO_IDS, wanted: Int32Array = NO_IDS): PostingList & { walked: number } {
  let bytes = 0;
  for (const b of blobs) bytes += b.length;
  // Each posting takes at least two bytes.
  const capacity = wanted.length > 0 ? Math.min(wanted.length, Math.floor(bytes / 2)) : Math.floor(bytes / 2);
  const list = { ...emptyList(capacity), walked: 0 };
  let run: PostingList | null = null;
  for (const blob of blobs) {
    const start = list.count;
    // A blob that overlaps what was read is read on its own, then merged in.
    let into: PostingList = list;
    if (start > 0 && blob.length > 0 && firstId(blob) <= list.ids[start - 1]!) {
      run ??= emptyList(capacity);
      run.count = 0;
      into = run;
    }
    list.walked += readBlob(blob, into, excluded, wanted);
    if (into === run) mergeInto(list, run);
  }
  return list;
}

/**
 * Reads a blob's postings into `into` after its `count`, leaving out those of `excluded`, and
 * keeping only those of `wanted` when it is not empty; returns how many postings were not
 * excluded. The hot loop of every search: one-byte varints (most distances with their counts,
 * and lengths) are read inline, and every value is kept a 32-bit integer (ids, counts and
 * lengths are; a long varint's double is truncated where it is read), so that the loop's
 * arithmetic stays on integers.
 */
function readBlob(blob: Uint8Array, into: PostingList, excluded: Int32Array, wanted: Int32Array): number {
  const first = blob.length > 0 && (excluded.length > 0 || wanted.length > 0) ? firstId(blob) : 0;
  return readRange(blob, 0, blob.length, 0, first, into, excluded, wanted);
}

/**
 * `readBlob` of the bytes from `from` to `end`, the postings' ids counted from `start`; `first`:
 * no id of them is below it. With `stopAtChunk`, up to the next chunk's header.
 */
function readRange(
  blob: Uint8Array,
  from: number,
  end: number,
  start: number,
  first: number,
  into: PostingList,
  excluded: Int32Array,
  wanted: Int32Array,
  stopAtChunk = false,
): number {
  const { ids, tfs, lengths } = into;
  const excludedCount = excluded.length;
  const wantedCount = wanted.length;
  let n = into.count;
  let walked = 0;
  let x = excludedCount === 0 ? 0 : lowerBound(excluded, first);
  let w = wantedCount === 0 ? 0 : lowerBound(wanted, first);
  let at = from;
  let id = start;
  while (at < end) {
    let b = blob[at++]!;
    let tf: number;
    if (b < MARKERS) {
      // The postings after a reset follow those before it: `x` and `w` stay where they are.
      if (b === RESET) id = 0;
      else if (stopAtChunk) {
        at--;
        break;
      } else at = headerEnd(blob, at - 1);
      continue;
    }
    if (b < 0x80) {
      id += b >>> 3;
      tf = b & 7;
    } else {
      const head = longVarint(blob, at - 1);
      at = longEnd;
      tf = head & 7;
      id = (id + (head - tf) / 8) | 0;
    }
    if (tf === 7) {
      tf = blob[at++]!;
      if (tf >= 0x80) {
        tf = longVarint(blob, at - 1) >>> 0;
        at = longEnd;
      }
    }
    b = blob[at++]!;
    if (b >= 0x80) {
      b = longVarint(blob, at - 1) >>> 0;
      at = longEnd;
    }
    if (x < excludedCount) {
      while (x < excludedCount && excluded[x]! < id) x++;
      if (x < excludedCount && excluded[x] === id) continue;
    }
    walked++;
    if (wantedCount > 0) {
      while (w < wantedCount && wanted[w]! < id) w++;
      if (w === wantedCount || wanted[w] !== id) continue;
    }
    ids[n] = id;
    tfs[n] = tf;
    lengths[n++] = b;
  }
  into.count = n;
  rangeEnd = at;
  rangeId = id;
  return walked;
}

/** Where the last `readRange` stopped, and the id of the last posting it read (left out or not). */
let rangeEnd = 0;
let rangeId = 0;

/** Where the last `longVarint` ended: the read loop's second result, without an allocation. */
let longEnd = 0;

/** A varint from `at` (the read loop calls it for those of more than one byte); sets `longEnd`. */
function longVarint(blob: Uint8Array, at: number): number {
  const first = blob[at] ?? 0;
  if (first < 0x80) {
    longEnd = at + 1;
    return first;
  }
  let value = 0;
  // 128 to the byte's place (a product: a power of a variable is a call).
  let place = 1;
  let byte: number;
  let i = at;
  do {
    byte = blob[i++] ?? 0;
    value += (byte & 0x7f) * place;
    place *= 128;
  } while (byte & 0x80);
  longEnd = i;
  return value;
}

const NO_IDS = new Int32Array(0);

const emptyList = (capacity: number): PostingList => ({
  ids: new Int32Array(capacity),
  tfs: new Uint16Array(capacity),
  lengths: new Uint32Array(capacity),
  count: 0,
});

/** The first id of a postings blob (its first posting's varint holds it, times 8). */
function firstId(blob: Uint8Array): number {
  let at = 0;
  while (blob[at] === SKIP) at = headerEnd(blob, at);
  return Math.floor(longVarint(blob, at) / 8);
}

/** Merges `run` (ascending) into `list` (ascending, room for both): only the part of `list` from `run`'s first id on moves. */
function mergeInto(list: PostingList, run: PostingList): void {
  if (run.count === 0) return;
  const from = lowerBound(list.ids.subarray(0, list.count), run.ids[0]!);
  const tail = { ids: list.ids.slice(from, list.count), tfs: list.tfs.slice(from, list.count), lengths: list.lengths.slice(from, list.count) };
  const tailCount = list.count - from;
  let i = 0;
  let j = 0;
  let out = from;
  while (i < tailCount || j < run.count) {
    const takeTail = j >= run.count || (i < tailCount && tail.ids[i]! < run.ids[j]!);
    if (takeTail) {
      list.ids[out] = tail.ids[i]!;
      list.tfs[out] = tail.tfs[i]!;
      list.lengths[out++] = tail.lengths[i++]!;
    } else {
      list.ids[out] = run.ids[j]!;
      list.tfs[out] = run.tfs[j]!;
      list.lengths[out++] = run.lengths[j++]!;
    }
  }
  list.count = out;
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

/** A segment of passages: each term's blob. `terms` is a passage's `passageTerms(...).terms` (space-separated). */
export function segmentOf(passages: ReadonlyArray<{ id: number; terms: string; term_count: number }>): Map<string, Buffer> {
  // Each term's postings as (id, tf, length) triples, passages in id order.
  const byTerm = new Map<string, number[]>();
  for (const p of [...passages].sort((a, b) => a.id - b.id)) {
    const tf = new Map<string, number>();
    for (const term of p.terms.split(' ')) if (term !== '') tf.set(term, (tf.get(term) ?? 0) + 1);
    for (const [term, n] of tf) {
      const list = byTerm.get(term);
      if (list) list.push(p.id, n, p.term_count);
      else byTerm.set(term, [p.id, n, p.term_count]);
    }
  }
  const segment = new Map<string, Buffer>();
  for (const [term, triples] of byTerm) {
    if (triples.length >= CHUNK * 3) {
      const list = emptyList(triples.length / 3);
      for (let i = 0; i < triples.length; i += 3) {
        list.ids[list.count] = triples[i]!;
        list.tfs[list.count] = triples[i + 1]!;
        list.lengths[list.count++] = triples[i + 2]!;
      }
      segment.set(term, encodeList(list));
      continue;
    }
    const out = new VarintWriter(triples.length * 5);
    let previous = 0;
    for (let i = 0; i < triples.length; i += 3) previous = out.posting(triples[i]!, previous, triples[i + 1]!, triples[i + 2]!);
    segment.set(term, out.done());
  }
  return segment;
}

/**
 * A segment's blobs are stored in blocks (kb_blocks, migration 020): its terms in code point
 * order (as UTF-8 bytes compare), each with its blob, a block filled to about BLOCK_BYTES and
 * keyed by its first term. A page's few hundred terms are a few rows instead of one each; a
 * blob larger than a block (a common word in a large segment) is a block of its own, so a
 * search for a rare word never reads it. A term is looked up in a segment by the block with the
 * greatest first term not after it.
 */
export const BLOCK_BYTES = 4096;

export interface TermBlock {
  firstTerm: string;
  /** For each term: varint(its UTF-8 length), its UTF-8 bytes, varint(its blob's length), its blob. */
  block: Uint8Array;
}

/** A segment's (term, blob) entries packed into blocks, in term order. */
export function blocksOf(entries: Iterable<readonly [string, Uint8Array]>): TermBlock[] {
  const sorted = Array.from(entries, ([term, blob]) => ({ term, length: Buffer.byteLength(term, 'utf8'), blob })).sort((a, b) =>
    compareCodePoints(a.term, b.term),
  );
  const blocks: TermBlock[] = [];
  let from = 0;
  let size = 0;
  const close = (to: number) => {
    const out = new VarintWriter(size);
    for (let i = from; i < to; i++) {
      const e = sorted[i]!;
      out.varint(e.length);
      out.text(e.term, e.length);
      out.varint(e.blob.length);
      out.bytes(e.blob);
    }
    blocks.push({ firstTerm: sorted[from]!.term, block: out.done() });
    from = to;
    size = 0;
  };
  for (let i = 0; i < sorted.length; i++) {
    const e = sorted[i]!;
    const entry = varintBytes(e.length) + e.length + varintBytes(e.blob.length) + e.blob.length;
    if (i > from && size + entry > BLOCK_BYTES) close(i);
    size += entry;
  }
  if (sorted.length > from) close(sorted.length);
  return blocks;
}

/**
 * Strings in code point order, which is the order of their UTF-8 bytes (the databases' order of
 * first terms). UTF-16 order is the same but for surrogates, which sort after U+E000–U+FFFF.
 */
export function compareCodePoints(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    let x = a.charCodeAt(i);
    let y = b.charCodeAt(i);
    if (x === y) continue;
    if (x >= 0xd800 && y >= 0xd800) {
      x = x >= 0xe000 ? x - 0x800 : x + 0x2000;
      y = y >= 0xe000 ? y - 0x800 : y + 0x2000;
    }
    return x - y;
  }
  return a.length - b.length;
}

const varintBytes = (value: number): number => (value < 0x80 ? 1 : value < 0x4000 ? 2 : value < 0x200000 ? 3 : value < 0x10000000 ? 4 : 5);

/** Each (term, blob) of a block (blobs are views into it). */
export function unpackBlock(block: Uint8Array): Array<{ term: string; postings: Uint8Array }> {
  const text = Buffer.from(block.buffer, block.byteOffset, block.byteLength);
  const entries: Array<{ term: string; postings: Uint8Array }> = [];
  const read = new VarintReader(block);
  while (read.at < block.length) {
    const termEnd = read.next() + read.at;
    const term = text.toString('utf8', read.at, termEnd);
    read.at = termEnd;
    const blobEnd = read.next() + read.at;
    entries.push({ term, postings: block.subarray(read.at, blobEnd) });
    read.at = blobEnd;
  }
  return entries;
}

/** The blob of `term` (its UTF-8 bytes) in a block, or null when the block does not hold it. */
export function postingsIn(block: Uint8Array, term: Uint8Array): Uint8Array | null {
  const read = new VarintReader(block);
  while (read.at < block.length) {
    const length = read.next();
    const at = read.at;
    read.at += length;
    const blobLength = read.next();
    if (length === term.length && sameBytes(block, at, term)) return block.subarray(read.at, read.at + blobLength);
    read.at += blobLength;
  }
  return null;
}

function sameBytes(block: Uint8Array, at: number, term: Uint8Array): boolean {
  for (let i = 0; i < term.length; i++) if (block[at + i] !== term[i]) return false;
  return true;
}

/** A segment's size and id range (its kb_segments row): what merges are chosen by. */
export interface SegmentInfo {
  id: number;
  /** Its passages that hold a term (a passage with none is in no segment). */
  passages: number;
  minId: number;
  maxId: number;
}

/** What `segmentOf` writes, with its kb_segments row's numbers. */
export function summaryOf(passages: ReadonlyArray<{ id: number; term_count: number }>): Omit<SegmentInfo, 'id'> {
  let n = 0;
  let minId = Number.POSITIVE_INFINITY;
  let maxId = 0;
  for (const p of passages) {
    if (p.term_count === 0) continue;
    n++;
    minId = Math.min(minId, p.id);
    maxId = Math.max(maxId, p.id);
  }
  return { passages: n, minId: n === 0 ? 0 : minId, maxId };
}

/** Segments of a tier are merged once there are this many. */
export const MERGE_FACTOR = 8;

/** A segment's tier: 8ⁿ ≤ passages < 8ⁿ⁺¹ (a merge of eight of a tier is of the next). */
export const tierOf = (passages: number): number => Math.floor(Math.log(Math.max(1, passages)) / Math.log(MERGE_FACTOR) + 1e-9);

/**
 * The segments of a bot to merge next, or null when none need it: the oldest eight of the
 * lowest tier that has eight; else, when its excluded ids (`excluded`, ascending) are at least
 * an eighth of its indexed passages and at least MIN_EXCLUDED_TO_REWRITE, the segment whose id
 * range holds the most of them, rewritten alone (which drops them). Searches read every excluded
 * id, so they must not pile up where no tier merge reaches. `eager` (an enhanced_privacy
 * copilot's, DESIGN §3: no data beyond what search needs): any excluded id is reason enough, and
 * every segment whose id range holds one is merged (ranges may overlap, so only all of them
 * surely hold it), so the words of its deleted or replaced passages leave the index at the next
 * step.
 */
export function segmentsToMerge(segments: readonly SegmentInfo[], excluded: ArrayLike<number>, options: { eager?: boolean } = {}): number[] | null {
  const byTier = new Map<number, SegmentInfo[]>();
  for (const s of segments) {
    const tier = tierOf(s.passages);
    const list = byTier.get(tier);
    if (list) list.push(s);
    else byTier.set(tier, [s]);
  }
  for (const tier of [...byTier.keys()].sort((a, b) => a - b)) {
    const list = byTier.get(tier)!;
    if (list.length >= MERGE_FACTOR)
      return list
        .sort((a, b) => a.id - b.id)
        .slice(0, MERGE_FACTOR)
        .map((s) => s.id);
  }
  if (options.eager && excluded.length > 0) {
    const holding = segments.filter((s) => countInRange(excluded, s.minId, s.maxId) > 0).map((s) => s.id);
    return holding.length > 0 ? holding : null;
  }
  const indexed = segments.reduce((n, s) => n + s.passages, 0);
  if (excluded.length < MIN_EXCLUDED_TO_REWRITE || excluded.length * MERGE_FACTOR < indexed) return null;
  let best: SegmentInfo | null = null;
  let bestCount = 0;
  for (const s of segments) {
    const count = countInRange(excluded, s.minId, s.maxId);
    if (count > bestCount) [best, bestCount] = [s, count];
  }
  return best ? [best.id] : null;
}

/**
 * The excluded ids (ascending) within any of `segments`' id ranges. Merged together, those
 * segments hold every one of them that any segment holds: an eager merge may forget them all.
 */
export function excludedWithin(excluded: Int32Array, segments: readonly SegmentInfo[]): Int32Array {
  return excluded.filter((id) => segments.some((s) => s.minId <= id && id <= s.maxId));
}

/** Excluded ids below this many are left for the tier merges to drop. */
export const MIN_EXCLUDED_TO_REWRITE = 1000;

function countInRange(ids: ArrayLike<number>, min: number, max: number): number {
  const first = lowerBound(ids, min);
  return lowerBound(ids, max + 1) - first;
}

function lowerBound(ids: ArrayLike<number>, value: number, from = 0, to = ids.length): number {
  let lo = from;
  let hi = to;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (ids[mid]! < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** A merge's result: the merged segment's blocks and numbers, and the excluded ids it dropped. */
export interface MergedSegment {
  blocks: TermBlock[];
  passages: number;
  minId: number;
  maxId: number;
  /** The excluded ids found in the inputs, which the merged segment no longer holds. */
  dropped: Int32Array;
}

/** A segment to merge: its blocks and its kb_segments numbers. */
export interface MergeInput {
  blocks: Uint8Array[];
  passages: number;
  minId: number;
  maxId: number;
}

/**
 * Merges segments, leaving out the ids of `excluded` (ascending); each excluded id found is one
 * passage of one input fewer. When the inputs' id ranges do not overlap (on SQLite they never
 * do: a segment is written with its passages, whose ids ascend), a term's blobs of the inputs
 * that hold no excluded id are joined as they are, in id order, each after a reset byte
 * (RESET): no posting is decoded. Other terms are decoded, merged and written again.
 */
export function mergeSegments(inputs: readonly MergeInput[], excluded: ArrayLike<number>): MergedSegment {
  const ordered = [...inputs].sort((a, b) => a.minId - b.minId);
  const apart = ordered.every((s, i) => i === 0 || ordered[i - 1]!.maxId < s.minId);
  const byTerm = new Map<string, { blobs: Uint8Array[]; decode: boolean }>();
  let minId = Number.POSITIVE_INFINITY;
  let maxId = 0;
  for (const input of ordered) {
    const holdsExcluded = lowerBound(excluded, input.maxId + 1) > lowerBound(excluded, input.minId);
    const decode = !apart || holdsExcluded;
    // An input whose blobs are joined keeps every passage: its range is the merged segment's.
    if (!decode && input.passages > 0) {
      minId = Math.min(minId, input.minId);
      maxId = Math.max(maxId, input.maxId);
    }
    for (const block of input.blocks)
      for (const { term, postings } of unpackBlock(block)) {
        const entry = byTerm.get(term);
        if (entry) {
          entry.blobs.push(postings);
          entry.decode ||= decode;
        } else byTerm.set(term, { blobs: [postings], decode });
      }
  }
  const found = new Uint8Array(excluded.length);
  const entries: Array<[string, Uint8Array]> = [];
  for (const [term, { blobs, decode }] of byTerm) {
    // A large term's postings outside chunks (pages' few each) are written again, in chunks.
    const rechunk = blobs.reduce((sum, b) => sum + b.length, 0) >= 4 * CHUNK && !blobs.every(chunked);
    if (!decode && !rechunk) {
      entries.push([term, joined(blobs)]);
      continue;
    }
    const all = decodePostings(blobs);
    // Mark the excluded ids this term's postings hold, then leave them out.
    let x = 0;
    for (let i = 0; i < all.count; i++) {
      const id = all.ids[i]!;
      while (x < excluded.length && excluded[x]! < id) x++;
      if (x < excluded.length && excluded[x] === id) found[x] = 1;
    }
    const kept = excluded.length === 0 ? all : without(all, excluded);
    if (kept.count === 0) continue;
    minId = Math.min(minId, kept.ids[0]!);
    maxId = Math.max(maxId, kept.ids[kept.count - 1]!);
    entries.push([term, encodeList(kept)]);
  }
  const dropped = new Int32Array(found.reduce((n, f) => n + f, 0));
  let d = 0;
  for (let i = 0; i < found.length; i++) if (found[i]) dropped[d++] = excluded[i]!;
  const inputPassages = inputs.reduce((n, s) => n + s.passages, 0);
  const passages = Math.max(0, inputPassages - dropped.length);
  return { blocks: blocksOf(entries), passages, minId: entries.length === 0 ? 0 : minId, maxId, dropped };
}

/**
 * In a blob, a byte 0 where a posting starts: the next posting's distance counts from 0 again
 * (its id is written whole). No posting starts so (distances are at least 1), so blobs whose ids
 * follow one another are joined by this byte between them, as they are.
 */
const RESET = 0;

/** Blobs whose ids follow one another (each after the one before), as one blob. */
function joined(blobs: readonly Uint8Array[]): Uint8Array {
  if (blobs.length === 1) return blobs[0]!;
  const out = new VarintWriter(blobs.reduce((n, b) => n + b.length + 1, 0));
  for (const [i, blob] of blobs.entries()) {
    if (i > 0) out.varint(RESET);
    out.bytes(blob);
  }
  return out.done();
}

/** The blob of a decoded list (as `encodePostings` writes it). */
function encodeList(list: PostingList): Buffer {
  // Each of a posting's three varints takes at most 5 bytes (a distance · 8 is under 2³⁵); a chunk's header, its bytes.
  const out = new VarintWriter(list.count * 15 + Math.ceil(list.count / CHUNK) * HEADER_BYTES);
  out.list(list);
  return out.done();
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
  excluded: Int32Array = NO_IDS,
  byChunksFrom = BY_CHUNKS_FROM,
): ScoredPassage[] {
  if (limit <= 0) return [];
  const n = Math.max(totals.passages, 1);
  const avgdl = Math.max(totals.terms, 1) / n;
  const byRank = (out: ScoredPassage[]) => out.sort((a, b) => b.rounded - a.rounded || a.id - b.id);
  // The term of the most postings is decoded last: when it is the commonest, only its postings
  // of the passages holding another term are kept (`scoreWithoutCommonest`).
  let largest = -1;
  let largestBytes = -1;
  for (const [i, blobs] of blobsByTerm.entries()) {
    const bytes = blobs.reduce((sum, b) => sum + b.length, 0);
    if (bytes > largestBytes) [largest, largestBytes] = [i, bytes];
  }
  // By chunks when every term is large and mostly in chunks (blobs written before chunks were,
  // until a merge writes them again, are read whole: by chunks they would be read twice). A rare
  // term beside a common one goes by `scoreWithoutCommonest`, which weighs only its passages.
  const byChunks = blobsByTerm.every((blobs) => {
    const bytes = blobs.reduce((sum, b) => sum + b.length, 0);
    return blobs.length === 0 || (bytes >= byChunksFrom && inChunks(blobs) * 2 >= bytes);
  });
  if (byChunks && largestBytes > 0) {
    const scored = scoreByChunks(blobsByTerm, n, avgdl, limit, excluded);
    if (scored) return byRank(scored);
  }
  const present = blobsByTerm.filter((blobs) => blobs.length > 0).length;
  const lists = blobsByTerm.map((blobs, i) => (i === largest && present > 1 ? null : decodePostings(blobs, excluded)));
  const others = lists.reduce((sum, list) => sum + (list?.count ?? 0), 0);
  const wanted = lists[largest] === null && others > 0 ? idsOf(lists) : NO_IDS;
  if (wanted.length >= limit && largestBytes >= byChunksFrom && inChunks(blobsByTerm[largest]!) * 2 >= largestBytes) {
    const beside = scoreBesideChunks(blobsByTerm, lists, largest, wanted, n, avgdl, limit, excluded);
    if (beside) return byRank(beside);
  }
  const partial = lists[largest] === null ? decodePostings(blobsByTerm[largest]!, excluded, wanted) : null;
  const terms: TermPostings[] = [];
  let best = 0;
  for (const [i, list] of lists.entries()) {
    const df = list ? list.count : partial!.walked;
    if (df === 0) continue;
    const idf = idfOf(n, df);
    best += idf * 2.2;
    terms.push({ list: list ?? partial!, whole: list !== null, df, idf, blobs: blobsByTerm[i]! });
  }
  if (terms.length === 0) return [];
  const withoutCommonest = terms.length > 1 ? scoreWithoutCommonest(terms, wanted, best, limit, avgdl) : null;
  if (withoutCommonest) return byRank(withoutCommonest);

  // Every passage holding a term, its weights summed in the terms' order (its score × best).
  const weighted: WeightedList[] = terms.map((t) => {
    const list = wholeList(t, excluded);
    return { ids: list.ids, weights: weightsOf(list, t.idf, avgdl), count: list.count, at: 0 };
  });
  const sums = weighted.length === 1 ? { ids: weighted[0]!.ids, sums: weighted[0]!.weights, count: weighted[0]!.count, lo: 0 } : summed(weighted);
  return byRank(bestOf(sums, best, limit));
}

interface TermPostings {
  blobs: readonly Uint8Array[];
  /** Its postings; only those of the passages holding another term unless `whole`. */
  list: PostingList;
  whole: boolean;
  df: number;
  idf: number;
}

/** A term's postings, all of them (read again when only some were). */
function wholeList(t: TermPostings, excluded: Int32Array): PostingList {
  if (!t.whole) [t.list, t.whole] = [decodePostings(t.blobs, excluded), true];
  return t.list;
}

/** The passages of the lists (ascending), once each. */
function idsOf(lists: ReadonlyArray<PostingList | null>): Int32Array {
  const present = lists.filter((list) => list !== null && list.count > 0);
  // One list's ids ascend, each once.
  if (present.length === 1) return present[0]!.ids.slice(0, present[0]!.count);
  const all = new Int32Array(lists.reduce((sum, list) => sum + (list?.count ?? 0), 0));
  let filled = 0;
  for (const list of lists) {
    if (!list) continue;
    all.set(list.ids.subarray(0, list.count), filled);
    filled += list.count;
  }
  all.sort();
  let count = 0;
  for (let i = 0; i < all.length; i++) if (i === 0 || all[i] !== all[i - 1]) all[count++] = all[i]!;
  return all.subarray(0, count);
}

/**
 * A query of a word most passages hold and rarer ones ("request timeout"), scored without
 * weighing every passage of the commonest word: only the passages holding another word
 * (`wanted`) are scored, each summed over all its words in the query's order (as `summed` sums
 * them); when the commonest word is the one read last, only its postings of those passages were
 * kept. A passage holding the commonest word alone scores less than that word's bound (idf ·
 * 2.2); when that bound rounds below the limit-th best of those scored, no such passage can
 * rank, and the answer is theirs. Null when it cannot be (fewer scored than `limit`, or the bound
 * reaches the cutoff), or when the other words' passages are not far fewer: then every passage
 * is weighed.
 */
function scoreWithoutCommonest(terms: TermPostings[], wanted: Int32Array, best: number, limit: number, avgdl: number): ScoredPassage[] | null {
  let commonest = terms[0]!;
  for (const t of terms) if (t.idf < commonest.idf) commonest = t;
  let others = 0;
  for (const t of terms) if (t !== commonest) others += t.df;
  // Every other word's postings are needed whole (the one read last, when it is not the commonest, is read again).
  if (others * PRUNE_RATIO > commonest.df || terms.some((t) => t !== commonest && !t.whole)) return null;
  // The passages holding another word: `wanted` when the commonest was read last.
  const all = commonest.whole ? idsOf(terms.filter((t) => t !== commonest).map((t) => t.list)) : wanted;
  const count = all.length;
  if (count < limit) return null;
  const sums = new Float64Array(count);
  for (const t of terms) {
    const { ids, tfs, lengths, count: postings } = t.list;
    let at = 0;
    for (let i = 0; i < count; i++) {
      at = lowerBound(ids, all[i]!, at, postings);
      if (at < postings && ids[at] === all[i]) sums[i] += weightOf(t.idf, tfs[at]!, lengths[at]!, avgdl);
    }
  }
  const scored = bestOf({ ids: all, sums, count, lo: 0 }, best, limit);
  let cutoff = Number.POSITIVE_INFINITY;
  for (const p of scored) cutoff = Math.min(cutoff, p.rounded);
  const bound = commonest.idf * 2.2;
  return Math.floor((bound / best) * 1_000_000_000 + 0.5) < cutoff ? scored : null;
}

/** bm25's idf of a term in `df` of `n` passages. */
const idfOf = (n: number, df: number): number => Math.log(1 + (Math.max(n, df) - df + 0.5) / (df + 0.5));

/** The bytes of blobs that start with a chunk. */
const inChunks = (blobs: readonly Uint8Array[]): number => blobs.reduce((sum, b) => sum + (b[0] === SKIP ? b.length : 0), 0);

/**
 * Rarer words beside a common one in chunks ("request timeout"). The rarer words' passages
 * (`wanted`) are summed over those words alone (`others`); the common word adds at most its
 * chunks' largest bound. The passages are taken by `others`, largest first, each weighed whole
 * (the common word's weight read from the one chunk that may hold it, decoded once), until one's
 * `others` plus that bound falls two rounding steps below the limit-th best sum so far: no
 * passage after it can reach the cutoff. A passage holding the common word alone scores at most
 * that bound, which must fall below the limit-th best of `others`. Each sum is taken over all
 * the passage's terms in the query's order, as `scoreWithoutCommonest` takes it. Null when it
 * cannot be.
 */
function scoreBesideChunks(
  blobsByTerm: ReadonlyArray<readonly Uint8Array[]>,
  lists: ReadonlyArray<PostingList | null>,
  largest: number,
  wanted: Int32Array,
  n: number,
  avgdl: number,
  limit: number,
  excluded: Int32Array,
): ScoredPassage[] | null {
  const pieces = new Pieces(blobsByTerm[largest]!.reduce((n, b) => n + b.length, 0) >> 7);
  // Where each blob's pieces start, to find the piece that may hold an id.
  const blobStarts: number[] = [];
  let df = 0;
  for (const blob of blobsByTerm[largest]!) {
    blobStarts.push(pieces.n);
    df += piecesOf(pieces, largest, [blob], excluded);
  }
  blobStarts.push(pieces.n);
  if (df === 0) return null;
  const idfs = lists.map((list, t) => (t === largest ? idfOf(n, df) : list && list.count > 0 ? idfOf(n, list.count) : 0));
  let best = 0;
  for (const [t, idf] of idfs.entries()) if (t === largest || lists[t]!.count > 0) best += idf * 2.2;
  pieces.weigh(idfs, avgdl);
  const bound = pieces.bound.subarray(0, pieces.n).reduce((max, b) => Math.max(max, b), 0);
  const below = (value: number, than: number) => belowCutoff(value, than, best);
  const others = new Float64Array(wanted.length);
  for (const [t, list] of lists.entries()) {
    if (t === largest || !list) continue;
    // Both ascend, and every id of the list is in `wanted`.
    let at = 0;
    for (let i = 0; i < list.count; i++) {
      while (wanted[at]! < list.ids[i]!) at++;
      others[at] += weightOf(idfs[t]!, list.tfs[i]!, list.lengths[i]!, avgdl);
    }
  }
  const floor = kthLargest(others, others.length, limit);
  if (floor === null || !below(bound, floor)) return null;
  // Largest `others` first, popped only as far as the loop goes (most are never reached).
  const order = new MaxHeap(others, others.length);
  const scored = new Scored(limit);
  for (let i = order.pop(); i >= 0; i = order.pop()) {
    if (below(others[i]! + bound, scored.full() ? scored.kth() : floor)) break;
    const id = wanted[i]!;
    let sum = 0;
    for (const [t, list] of lists.entries()) {
      if (t === largest) {
        const list = postingOf(pieces, blobStarts, id, excluded);
        if (list) sum += weightOf(idfs[t]!, list.tfs[postingAt]!, list.lengths[postingAt]!, avgdl);
      } else if (list && list.count > 0) {
        const at = lowerBound(list.ids, id, 0, list.count);
        if (at < list.count && list.ids[at] === id) sum += weightOf(idfs[t]!, list.tfs[at]!, list.lengths[at]!, avgdl);
      }
    }
    scored.add(id, sum);
  }
  return scored.best(best);
}

/**
 * The list that holds the posting of `id` among the pieces (each blob's from `blobStarts[k]`, in
 * id order), its chunk read first, with the posting at `postingAt`; null when none holds it.
 */
function postingOf(pieces: Pieces, blobStarts: readonly number[], id: number, excluded: Int32Array): PostingList | null {
  for (let k = 0; k + 1 < blobStarts.length; k++) {
    // The last piece of the blob whose first id is at most `id` (its `start` is below it).
    const p = lowerBound(pieces.start, id, blobStarts[k]!, blobStarts[k + 1]!) - 1;
    if (p < blobStarts[k]! || pieces.last[p]! < id) continue;
    pieces.read(p, excluded);
    const list = pieces.postings(p);
    const at = lowerBound(list.ids, id, pieces.first[p]!, pieces.after[p]!);
    if (at < pieces.after[p]! && list.ids[at] === id) {
      postingAt = at;
      return list;
    }
  }
  return null;
}

/**
 * Whether a bound on a sum (computed in another order: a relative slack) rounds two steps below
 * `than` (the score rounds to 10⁻⁹ of `best`), so that nothing it bounds reaches a cutoff `than`
 * rounds to.
 */
const belowCutoff = (bound: number, than: number, best: number): boolean => bound * (1 + 1e-12) + 2e-9 * best < than;

/** Where `postingOf`'s posting is in its list. */
let postingAt = 0;

/** The commonest word's passages are not weighed one by one when the others' are at most this many times fewer. */
const PRUNE_RATIO = 4;

/** bm25's weight of a posting (k1 = 1.2, b = 0.75). */
function weightOf(idf: number, tf: number, length: number, avgdl: number): number {
  return (idf * tf * 2.2) / (tf + 1.2 * (0.25 + (0.75 * length) / avgdl));
}

/** bm25's weight of each posting of a term (k1 = 1.2, b = 0.75). */
function weightsOf(list: PostingList, idf: number, avgdl: number): Float64Array {
  const { tfs, lengths, count } = list;
  const weights = new Float64Array(count);
  // Most postings share a few (tf, length) pairs: each small pair's weight is computed once.
  const known = new Float64Array(SMALL_TF * SMALL_LENGTH).fill(-1);
  for (let i = 0; i < count; i++) {
    const tf = tfs[i]!;
    const length = lengths[i]!;
    const k = tf < SMALL_TF && length < SMALL_LENGTH ? tf * SMALL_LENGTH + length : -1;
    let w = k < 0 ? -1 : known[k]!;
    if (w < 0) {
      w = weightOf(idf, tf, length, avgdl);
      if (k >= 0) known[k] = w;
    }
    weights[i] = w;
  }
  return weights;
}

/**
 * The passages whose rounded score reaches the limit-th best: ranked on their sums (the score
 * and its rounding grow with them), so that only the passages near the cutoff are divided and
 * rounded.
 */
function bestOf(sums: { ids: Int32Array | null; sums: Float64Array; count: number; lo: number }, best: number, limit: number): ScoredPassage[] {
  const values = sums.sums;
  const kth = kthLargest(values, sums.count, limit);
  const cutoff = kth === null ? Number.NEGATIVE_INFINITY : Math.floor((kth / best) * 1_000_000_000 + 0.5);
  // Passages whose rounded score ties the cutoff may sum a little less than the limit-th: a
  // bound below every such sum, then the exact rounding.
  const floor = kth === null ? Number.MIN_VALUE : Math.max(Number.MIN_VALUE, ((cutoff - 1) / 1_000_000_000) * best);
  const out: ScoredPassage[] = [];
  const { ids, lo, count } = sums;
  for (let i = 0; i < count; i++) {
    const sum = values[i]!;
    if (sum < floor) continue;
    const rounded = Math.floor((sum / best) * 1_000_000_000 + 0.5);
    if (rounded >= cutoff) out.push({ id: ids === null ? lo + i : ids[i]!, score: sum / best, rounded });
  }
  return out;
}

interface WeightedList {
  ids: Int32Array;
  weights: Float64Array;
  count: number;
  at: number;
}

/**
 * Several terms' passages, each passage's weights summed in the terms' order. Into an array
 * over the lists' id range (`ids` null: the passage of index j is lo + j, a sum of 0 none) when
 * that range is at most a few times their postings (a bot's passages are mostly near one
 * another); else by merging the lists by id.
 */
function summed(lists: WeightedList[]): { ids: Int32Array | null; sums: Float64Array; count: number; lo: number } {
  let lo = Number.POSITIVE_INFINITY;
  let hi = 0;
  let postings = 0;
  for (const l of lists) {
    lo = Math.min(lo, l.ids[0]!);
    hi = Math.max(hi, l.ids[l.count - 1]!);
    postings += l.count;
  }
  const span = hi - lo + 1;
  if (span <= DENSE_SPAN_PER_POSTING * postings + 4096) {
    // Every weight is positive: a passage holds a term exactly where its sum is above 0.
    const sums = new Float64Array(span);
    for (const { ids, weights, count } of lists) for (let i = 0; i < count; i++) sums[ids[i]! - lo] += weights[i]!;
    return { ids: null, sums, count: span, lo };
  }
  const ids = new Int32Array(postings);
  const sums = new Float64Array(postings);
  let found = 0;
  for (;;) {
    let next = 0x7fffffff + 1;
    for (const l of lists) if (l.at < l.count && l.ids[l.at]! < next) next = l.ids[l.at]!;
    if (next > 0x7fffffff) break;
    let sum = 0;
    for (const l of lists) if (l.at < l.count && l.ids[l.at] === next) sum += l.weights[l.at++]!;
    ids[found] = next;
    sums[found++] = sum;
  }
  return { ids, sums, count: found, lo: 0 };
}

/** Postings whose count and length are below these have their weights computed once per pair. */
const SMALL_TF = 8;
const SMALL_LENGTH = 1024;

/** The id range over postings below which several terms' sums go into one array (8 bytes an id). */
export const DENSE_SPAN_PER_POSTING = 4;

/** The `limit`-th largest of the values above 0 (a min-heap of the largest), or null when fewer are above 0. */
function kthLargest(values: Float64Array, count: number, limit: number): number | null {
  const heap: number[] = [];
  for (let i = 0; i < count; i++) {
    const v = values[i]!;
    if (v <= 0) continue;
    if (heap.length < limit) heapPush(heap, v);
    else if (v > heap[0]!) heapReplaceTop(heap, v);
  }
  return heap.length < limit ? null : heap[0]!;
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

// ---- chunks: the postings a search leaves unread ----

/**
 * In a blob, a byte 1 where a posting starts: a chunk's header. A term of CHUNK postings or more
 * is written in chunks of CHUNK (the last may be fewer), each behind a header: byte 1,
 * varint(its postings' bytes), varint(their count), varint(its last id − the id before it),
 * varint(k), then k pairs varint(count of the term), varint(passage length): those no other
 * posting of the chunk outweighs (`frontierOf`). A reader that wants every posting steps over
 * the header; a search reads from it what the chunk's postings can weigh at most and steps over
 * the chunk when that cannot rank (`scoreByChunks`).
 */
const SKIP = 1;

/** Below this, a byte where a posting starts is a marker (RESET, SKIP): a posting's first varint is at least 8. */
const MARKERS = 8;

/** Postings per chunk. */
export const CHUNK = 128;

/** A search by chunks when each of its terms' blobs are at least this many bytes (`scorePassages`). */
export const BY_CHUNKS_FROM = 64 * 1024;

/** A chunk's header holds at most this many pairs. */
const MAX_PAIRS = 8;

/** A chunk's header takes at most this many bytes: byte 1, four varints, and MAX_PAIRS pairs. */
const HEADER_BYTES = 1 + 4 * 5 + 2 * 5 * MAX_PAIRS;

/**
 * The (count, length) pairs of the postings from `from` to before `to` that no other posting
 * outweighs, whatever the idf and the average length: none has both a count as large and a
 * passage as short. bm25 grows with the count and falls with the length, so the largest weight
 * of the postings is the largest of these pairs' (`boundOf`). Flat, counts ascending (lengths
 * ascend with them); at most MAX_PAIRS, neighbours joined into (the larger count, the shorter
 * length) beyond that, which outweighs both.
 */
function frontierOf(tfs: ArrayLike<number>, lengths: ArrayLike<number>, from: number, to: number): number[] {
  let pairs: Array<[number, number]> = [];
  for (let i = from; i < to; i++) {
    const tf = tfs[i]!;
    const length = lengths[i]!;
    if (pairs.some(([t, l]) => t >= tf && l <= length)) continue;
    pairs = pairs.filter(([t, l]) => !(tf >= t && length <= l));
    pairs.push([tf, length]);
  }
  pairs.sort((a, b) => a[0] - b[0]);
  while (pairs.length > MAX_PAIRS)
    pairs = Array.from({ length: Math.ceil(pairs.length / 2) }, (_, k) => [pairs[2 * k + 1]?.[0] ?? pairs[2 * k]![0], pairs[2 * k]![1]]);
  return pairs.flat();
}

/** The largest bm25 weight of postings whose pairs (`frontierOf`) are those of `pairs` from `at` to before `end`. */
function boundOf(pairs: Float64Array, at: number, end: number, idf: number, avgdl: number): number {
  let bound = 0;
  for (let j = at; j < end; j += 2) bound = Math.max(bound, weightOf(idf, pairs[j]!, pairs[j + 1]!, avgdl));
  return bound;
}

/** Where the chunk whose header is at `at` starts its postings. */
function headerEnd(blob: Uint8Array, at: number): number {
  longVarint(blob, at + 1);
  longVarint(blob, longEnd);
  longVarint(blob, longEnd);
  const pairs = longVarint(blob, longEnd);
  for (let j = 0; j < 2 * pairs; j++) longVarint(blob, longEnd);
  return longEnd;
}

/** Whether every posting of a blob is in a chunk (a merge writes again a large term's blobs that are not). */
function chunked(blob: Uint8Array): boolean {
  let at = 0;
  while (at < blob.length) {
    if (blob[at] === RESET) at++;
    else if (blob[at] === SKIP) at = headerEnd(blob, at) + longVarint(blob, at + 1);
    else return false;
  }
  return true;
}

/**
 * The pieces of a query's postings: a chunk, read only when it may rank; or postings already
 * read (a run without headers), CHUNK each. Kept in typed
 * arrays, grown as needed: a common word is thousands of chunks.
 */
class Pieces {
  n = 0;
  /** Room for this many before the arrays grow. */
  private capacity: number;
  term: Int32Array;
  /** A chunk: its blob (an index into `blobs`), its postings' bytes from `from` to before `end`. */
  blob: Int32Array;
  from: Int32Array;
  end: Int32Array;
  /** A chunk's postings count their ids from `base` (the id before them). */
  base: Int32Array;
  /** Every id of the piece is after `start` and at most `last`. */
  start: Int32Array;
  last: Int32Array;
  count: Int32Array;
  /** Its (count, length) pairs (`frontierOf`): from `pairsAt` to before `pairsEnd` of `pairs`. */
  pairsAt: Int32Array;
  pairsEnd: Int32Array;
  pairs: Float64Array;
  pairsCount = 0;
  bound: Float64Array;
  /**
   * Its postings once read: those of `lists[list]` from `first` to before `after` (list −1: not
   * read). Chunks are read into one list, `lists[0]`, grown as needed.
   */
  list: Int32Array;
  lists: PostingList[] = [emptyList(4 * CHUNK)];
  first: Int32Array;
  after: Int32Array;
  blobs: Uint8Array[] = [];

  /** With room for `room` pieces (a chunk takes over 128 bytes: a query's bytes / 128 is enough). */
  constructor(room = 1024) {
    this.capacity = Math.max(16, room);
    const ints = () => new Int32Array(this.capacity);
    [this.term, this.blob, this.from, this.end, this.base, this.start, this.last, this.count] = [
      ints(),
      ints(),
      ints(),
      ints(),
      ints(),
      ints(),
      ints(),
      ints(),
    ];
    [this.pairsAt, this.pairsEnd, this.first, this.after] = [ints(), ints(), ints(), ints()];
    this.list = ints().fill(-1);
    this.pairs = new Float64Array(4 * this.capacity);
    this.bound = new Float64Array(this.capacity);
  }

  /** A new piece's index: its fields are set by the caller. */
  add(term: number, start: number, last: number, count: number): number {
    if (this.n === this.capacity) this.grow();
    const p = this.n++;
    this.term[p] = term;
    this.start[p] = start;
    this.last[p] = last;
    this.count[p] = count;
    this.pairsAt[p] = this.pairsCount;
    this.pairsEnd[p] = this.pairsCount;
    return p;
  }

  pair(p: number, tf: number, length: number): void {
    if (this.pairsCount + 2 > this.pairs.length) this.pairs = grown(this.pairs, this.pairs.length * 2);
    this.pairs[this.pairsCount++] = tf;
    this.pairs[this.pairsCount++] = length;
    this.pairsEnd[p] = this.pairsCount;
  }

  private grow(): void {
    this.capacity *= 2;
    for (const field of ['term', 'blob', 'from', 'end', 'base', 'start', 'last', 'count', 'pairsAt', 'pairsEnd', 'first', 'after'] as const)
      this[field] = grown(this[field], this.capacity);
    const list = grown(this.list, this.capacity);
    this.list = list.fill(-1, this.n);
    this.bound = grown(this.bound, this.capacity);
  }

  /** Postings already read, as pieces of `size`. */
  addRead(term: number, list: PostingList, size: number): void {
    for (let from = 0; from < list.count; from += size) {
      const to = Math.min(list.count, from + size);
      const p = this.add(term, list.ids[from]! - 1, list.ids[to - 1]!, to - from);
      const pairs = frontierOf(list.tfs, list.lengths, from, to);
      for (let j = 0; j < pairs.length; j += 2) this.pair(p, pairs[j]!, pairs[j + 1]!);
      this.list[p] = this.lists.length;
      this.first[p] = from;
      this.after[p] = to;
    }
    this.lists.push(list);
  }

  /** Reads a chunk's postings, leaving out `excluded`. */
  read(p: number, excluded: Int32Array): void {
    if (this.list[p]! >= 0) return;
    let into = this.lists[0]!;
    if (into.count + this.count[p]! > into.ids.length) {
      const room = emptyList(Math.max(2 * into.ids.length, into.count + this.count[p]!));
      room.ids.set(into.ids.subarray(0, into.count));
      room.tfs.set(into.tfs.subarray(0, into.count));
      room.lengths.set(into.lengths.subarray(0, into.count));
      room.count = into.count;
      this.lists[0] = into = room;
    }
    this.first[p] = into.count;
    readRange(this.blobs[this.blob[p]!]!, this.from[p]!, this.end[p]!, this.base[p]!, this.start[p]! + 1, into, excluded, NO_IDS);
    this.list[p] = 0;
    this.after[p] = into.count;
  }

  /** Each piece's bound: the largest weight of its pairs, with its term's idf. */
  weigh(idfs: readonly number[], avgdl: number): void {
    for (let p = 0; p < this.n; p++) this.bound[p] = boundOf(this.pairs, this.pairsAt[p]!, this.pairsEnd[p]!, idfs[this.term[p]!]!, avgdl);
  }

  /** The list a read piece's postings are in. */
  postings(p: number): PostingList {
    return this.lists[this.list[p]!]!;
  }
}

function grown<T extends Int32Array | Float64Array>(array: T, capacity: number): T {
  const out = new (array.constructor as new (n: number) => T)(capacity);
  out.set(array);
  return out;
}

/**
 * A term's pieces (`Pieces`); returns its postings not excluded (its df). Each chunk is a piece,
 * read at once only when it holds an excluded id (so that the df is exact); postings outside any
 * chunk (pages' blobs, or blobs written before chunks were) are read, a piece of CHUNK each.
 */
function piecesOf(pieces: Pieces, term: number, blobs: readonly Uint8Array[], excluded: Int32Array): number {
  let df = 0;
  for (const blob of blobs) {
    const blobIndex = pieces.blobs.push(blob) - 1;
    let at = 0;
    let id = 0;
    while (at < blob.length) {
      const b = blob[at]!;
      if (b === RESET) {
        id = 0;
        at++;
      } else if (b === SKIP) {
        // The header: bytes, count, span, pairs; then the first posting's distance (times 8).
        const bytes = longVarint(blob, at + 1);
        const count = longVarint(blob, longEnd);
        const span = longVarint(blob, longEnd);
        const pairs = longVarint(blob, longEnd);
        const p = pieces.add(term, 0, id + span, count);
        for (let j = 0; j < pairs; j++) pieces.pair(p, longVarint(blob, longEnd), longVarint(blob, longEnd));
        const postings = longEnd;
        pieces.start[p] = id + Math.floor(longVarint(blob, postings) / 8) - 1;
        pieces.blob[p] = blobIndex;
        pieces.from[p] = postings;
        pieces.end[p] = postings + bytes;
        pieces.base[p] = id;
        if (excluded.length > 0 && lowerBound(excluded, id + span + 1) > lowerBound(excluded, pieces.start[p]! + 1)) pieces.read(p, excluded);
        df += pieces.list[p]! >= 0 ? pieces.after[p]! - pieces.first[p]! : count;
        at = postings + bytes;
        id += span;
      } else {
        // Up to the next chunk (runs joined by a reset byte follow one another in id order).
        const list = emptyList(Math.ceil((blob.length - at) / 2));
        readRange(blob, at, blob.length, id, id + 1, list, excluded, NO_IDS, true);
        at = rangeEnd;
        id = rangeId;
        pieces.addRead(term, list, CHUNK);
        df += list.count;
      }
    }
  }
  return df;
}

/**
 * `scorePassages` by chunks (block-max): what each piece's postings can weigh at most (the
 * largest bm25 of its pairs, `frontierOf`) bounds the score of every passage in its id range. The
 * id line is cut where a piece starts or ends; each stretch's bound is the sum of the bounds of
 * the pieces over it. Stretches are scored best bound first, every passage in them summed over
 * all its terms in the query's order (as `summed` sums them); once a stretch's bound rounds two
 * below the limit-th best sum so far, no passage left can reach the cutoff, and the rest is never
 * read. Null when the pieces are too many to number.
 */
function scoreByChunks(
  blobsByTerm: ReadonlyArray<readonly Uint8Array[]>,
  n: number,
  avgdl: number,
  limit: number,
  excluded: Int32Array,
): ScoredPassage[] | null {
  const pieces = new Pieces(blobsByTerm.reduce((sum, blobs) => sum + blobs.reduce((n, b) => n + b.length, 0), 0) >> 7);
  const idfs: number[] = [];
  let best = 0;
  for (const [t, blobs] of blobsByTerm.entries()) {
    const df = piecesOf(pieces, t, blobs, excluded);
    const idf = df === 0 ? 0 : idfOf(n, df);
    idfs.push(idf);
    if (df > 0) best += idf * 2.2;
  }
  const count = pieces.n;
  if (count === 0) return [];
  if (count >= PIECES_LIMIT) return null;
  pieces.weigh(idfs, avgdl);

  const { lo, hi, ub, membersFrom, members, count: stretchCount } = stretchesOf(pieces);
  const stretches = new MaxHeap(ub, stretchCount);
  const scored = new Scored(limit);
  for (let s = stretches.pop(); s >= 0; s = stretches.pop()) {
    if (scored.full() && belowCutoff(ub[s]!, scored.kth(), best)) break;
    const from = membersFrom[s]!;
    const to = membersFrom[s + 1]!;
    for (let m = from; m < to; m++) pieces.read(members[m]!, excluded);
    // Read first: a read may move the chunks read before it.
    for (let m = from; m < to; m++) {
      const p = members[m]!;
      const list = pieces.postings(p);
      cursors[m - from] = {
        ids: list.ids,
        tfs: list.tfs,
        lengths: list.lengths,
        at: lowerBound(list.ids, lo[s]!, pieces.first[p]!, pieces.after[p]!),
        end: pieces.after[p]!,
        idf: idfs[pieces.term[p]!]!,
      };
    }
    scoreStretch(cursors, to - from, hi[s]!, avgdl, scored);
  }
  return scored.best(best);
}

/**
 * The stretches of the id line between where pieces start and end, each with its bound (the sum
 * of its pieces' bounds) and its pieces (`members` from `membersFrom[s]` to before
 * `membersFrom[s + 1]`, in their terms' order).
 */
function stretchesOf(pieces: Pieces) {
  const count = pieces.n;
  // Where a piece starts (key · 2 + 1) or ends (key · 2), in id order.
  const events = new Float64Array(2 * count);
  for (let p = 0; p < count; p++) {
    events[2 * p] = (pieces.start[p]! + 1) * EVENT_SCALE + 2 * p + 1;
    events[2 * p + 1] = (pieces.last[p]! + 1) * EVENT_SCALE + 2 * p;
  }
  events.sort();
  const active: number[] = [];
  const lo = new Int32Array(2 * count);
  const hi = new Int32Array(2 * count);
  const ub = new Float64Array(2 * count);
  const membersFrom = new Int32Array(2 * count + 1);
  const members: number[] = [];
  let stretchCount = 0;
  for (let i = 0; i < events.length; ) {
    const at = Math.floor(events[i]! / EVENT_SCALE);
    for (; i < events.length && Math.floor(events[i]! / EVENT_SCALE) === at; i++) {
      const low = events[i]! - at * EVENT_SCALE;
      const p = low >>> 1;
      if (low & 1) active.push(p);
      else {
        const k = active.indexOf(p);
        active[k] = active[active.length - 1]!;
        active.pop();
      }
    }
    if (active.length === 0) continue;
    // In the terms' order (an insertion sort: a few), so that a passage's weights are summed as `summed` sums them.
    let bound = 0;
    for (let k = 0; k < active.length; k++) {
      const p = active[k]!;
      let j = k;
      for (; j > 0 && pieces.term[active[j - 1]!]! > pieces.term[p]!; j--) active[j] = active[j - 1]!;
      active[j] = p;
      bound += pieces.bound[p]!;
    }
    for (const p of active) members.push(p);
    lo[stretchCount] = at;
    hi[stretchCount] = Math.floor(events[i]! / EVENT_SCALE) - 1;
    ub[stretchCount++] = bound;
    membersFrom[stretchCount] = members.length;
  }

  return { lo, hi, ub, membersFrom, members, count: stretchCount };
}

/** A read piece's postings from `at` to before `end`, and its term's idf. */
interface Cursor {
  ids: Int32Array;
  tfs: Uint16Array;
  lengths: Uint32Array;
  at: number;
  end: number;
  idf: number;
}

const cursors: Cursor[] = [];

/** The passages scored by chunks: each one's sum, and the `limit` largest (a min-heap). */
class Scored {
  ids: number[] = [];
  sums: number[] = [];
  private readonly top: number[] = [];
  constructor(private readonly limit: number) {}
  add(id: number, sum: number): void {
    this.ids.push(id);
    this.sums.push(sum);
    if (this.top.length < this.limit) heapPush(this.top, sum);
    else if (sum > this.top[0]!) heapReplaceTop(this.top, sum);
  }
  full(): boolean {
    return this.top.length === this.limit;
  }
  /** The limit-th largest sum so far. */
  kth(): number {
    return this.top[0]!;
  }
  /** The passages whose rounded score reaches the limit-th best (`bestOf`). */
  best(best: number): ScoredPassage[] {
    return bestOf({ ids: Int32Array.from(this.ids), sums: Float64Array.from(this.sums), count: this.ids.length, lo: 0 }, best, this.limit);
  }
}

/** Each passage of a stretch (up to `hi`) summed over the pieces' postings, in their order (the terms'). */
function scoreStretch(cursors: Cursor[], count: number, hi: number, avgdl: number, scored: Scored): void {
  for (;;) {
    let next = hi + 1;
    for (let m = 0; m < count; m++) {
      const c = cursors[m]!;
      if (c.at < c.end && c.ids[c.at]! < next) next = c.ids[c.at]!;
    }
    if (next > hi) return;
    let sum = 0;
    for (let m = 0; m < count; m++) {
      const c = cursors[m]!;
      if (c.at < c.end && c.ids[c.at] === next) {
        sum += weightOf(c.idf, c.tfs[c.at]!, c.lengths[c.at]!, avgdl);
        c.at++;
      }
    }
    scored.add(next, sum);
  }
}

/** An event's id (at most 2³¹) times this, plus its piece · 2 (+ 1 where the piece starts): under 2⁵³, exact. */
const EVENT_SCALE = 2 ** 21;
const PIECES_LIMIT = 2 ** 20;

/** Indices of `keys`, largest key first. */
class MaxHeap {
  private readonly heap: Int32Array;
  private size: number;
  /** The first `size` of `keys`. */
  constructor(
    private readonly keys: Float64Array,
    size: number,
  ) {
    this.size = size;
    this.heap = new Int32Array(this.size);
    for (let i = 0; i < this.size; i++) this.heap[i] = i;
    for (let i = (this.size >> 1) - 1; i >= 0; i--) this.down(i);
  }
  /** The index of the largest key left, or −1. */
  pop(): number {
    if (this.size === 0) return -1;
    const top = this.heap[0]!;
    this.heap[0] = this.heap[--this.size]!;
    this.down(0);
    return top;
  }
  private down(from: number): void {
    const { heap, keys } = this;
    let i = from;
    const item = heap[i]!;
    for (;;) {
      let child = 2 * i + 1;
      if (child >= this.size) break;
      if (child + 1 < this.size && keys[heap[child + 1]!]! > keys[heap[child]!]!) child++;
      if (keys[heap[child]!]! <= keys[item]!) break;
      heap[i] = heap[child]!;
      i = child;
    }
    heap[i] = item;
  }
}
