/**
 * Splits extracted page text into passages of a few hundred words for full-text indexing.
 *
 * Paragraphs (blank-line separated) are the unit: whole paragraphs are packed together up to
 * `targetWords`. Only a paragraph longer than `maxWords` is cut, at sentence ends (a line break
 * inside a paragraph counts as one: list items, table rows), a sentence longer than `maxWords`
 * at word boundaries, and a "word" longer than the character bound at that bound. Every word
 * of the input lands in exactly one passage, in order; no passage has more than `maxWords`
 * words or `maxWords * 20` characters.
 *
 * Two refinements keep a section's heading with its text: a short passage so far (a heading,
 * an intro line) may take the next piece up to `maxWords` instead of `targetWords`, and a
 * heading-like paragraph (one short line without a sentence end) starts a new passage once the
 * current one is half full rather than trailing at the end of the previous section.
 */
import { createHash } from 'node:crypto';
import { SEARCH_WORDS_VERSION } from '../../text/folding.js';

export interface PassageOptions {
  /** Packing stops before a passage would exceed this many words. Default 200. */
  targetWords?: number;
  /** Hard limit on a passage's words. Default 300 (or targetWords, when that is larger). */
  maxWords?: number;
}

const DEFAULT_TARGET_WORDS = 200;
const DEFAULT_MAX_WORDS = 300;
/** Character bound per passage is maxWords times this: generous for real words, firm for garbage. */
const CHARS_PER_WORD = 20;
const HEADING_MAX_WORDS = 12;

/** A run of one paragraph: [start, end) offsets into the normalised paragraph text. */
interface Piece {
  para: number;
  start: number;
  end: number;
  words: number;
  /** The piece is a whole, heading-like paragraph. */
  heading: boolean;
}

export function splitPassages(text: string, opts: PassageOptions = {}): string[] {
  const { targetWords, maxWords, maxChars } = resolveOptions(opts);
  const paragraphs = toParagraphs(text);

  const pieces: Piece[] = [];
  paragraphs.forEach((paragraph, para) => {
    const words = countWords(paragraph, 0, paragraph.length);
    if (words <= maxWords && paragraph.length <= maxChars) {
      pieces.push({ para, start: 0, end: paragraph.length, words, heading: isHeadingLike(paragraph, words) });
    } else {
      splitLongParagraph(paragraph, para, maxWords, maxChars, pieces);
    }
  });

  const passages: string[] = [];
  let first = 0; // index of the current passage's first piece
  let words = 0;
  let chars = 0;
  for (let i = 0; i < pieces.length; i++) {
    const piece = pieces[i];
    const length = piece.end - piece.start;
    if (i > first) {
      // Pieces of one paragraph are at most one character apart, paragraphs a blank line.
      const joined = chars + (piece.para === pieces[i - 1].para ? 1 : 2) + length;
      const fitsTarget = words + piece.words <= targetWords && joined <= maxChars;
      const fitsAfterShortStart = words * 4 <= targetWords && words + piece.words <= maxWords && joined <= maxChars;
      const headingStartsNew = piece.heading && words * 2 >= targetWords;
      if (!headingStartsNew && (fitsTarget || fitsAfterShortStart)) {
        words += piece.words;
        chars = joined;
        continue;
      }
      passages.push(render(paragraphs, pieces, first, i));
    }
    first = i;
    words = piece.words;
    chars = length;
  }
  if (first < pieces.length) passages.push(render(paragraphs, pieces, first, pieces.length));
  return passages;
}

function resolveOptions(opts: PassageOptions): { targetWords: number; maxWords: number; maxChars: number } {
  const targetWords = opts.targetWords ?? DEFAULT_TARGET_WORDS;
  const maxWords = opts.maxWords ?? Math.max(DEFAULT_MAX_WORDS, targetWords);
  if (!Number.isSafeInteger(targetWords) || targetWords < 1) {
    throw new RangeError('PassageOptions.targetWords must be a positive integer.');
  }
  if (!Number.isSafeInteger(maxWords) || maxWords < targetWords) {
    throw new RangeError('PassageOptions.maxWords must be an integer no smaller than targetWords.');
  }
  return { targetWords, maxWords, maxChars: maxWords * CHARS_PER_WORD };
}

/**
 * Paragraphs with whitespace normalised: inside a paragraph, words are separated by exactly
 * one space or one line break, so offsets and word counts can be worked out character by
 * character.
 */
function toParagraphs(text: string): string[] {
  // Each pattern leaves lone spaces alone: replacing every space with itself is slow on megabytes.
  const normalised = text
    .replace(/\r\n?/g, '\n')
    .replace(/\u0000/g, '')
    .replace(/[^\S\n]{2,}|[^\S\n ]/g, ' ')
    .replace(/ \n ?|\n /g, '\n');
  const paragraphs: string[] = [];
  for (const paragraph of normalised.split(/\n{2,}/)) {
    const trimmed = paragraph.trim();
    if (trimmed !== '') paragraphs.push(trimmed);
  }
  return paragraphs;
}

function isSeparator(code: number): boolean {
  return code === 0x20 || code === 0x0a;
}

function countWords(s: string, start: number, end: number): number {
  if (end <= start) return 0;
  let words = 1;
  for (let i = start; i < end; i++) if (isSeparator(s.charCodeAt(i))) words++;
  return words;
}

const codes = (chars: string): Set<number> => new Set([...chars].map((c) => c.charCodeAt(0)));
const SENTENCE_END = codes('.!?…。！？');
const CLOSING = codes('"\'”’)]»」』）】〉》');
// Scripts written without spaces end sentences with these and go straight on.
const FULL_WIDTH_END = codes('。！？');

function isHeadingLike(paragraph: string, words: number): boolean {
  return words <= HEADING_MAX_WORDS && !paragraph.includes('\n') && !endsSentence(paragraph, paragraph.length);
}

/** Whether the text just before `at` ends a sentence (terminal punctuation, maybe closed by a quote). */
function endsSentence(s: string, at: number): boolean {
  let k = at - 1;
  for (let closers = 0; k >= 0 && closers < 3 && CLOSING.has(s.charCodeAt(k)); closers++) k--;
  return k >= 0 && SENTENCE_END.has(s.charCodeAt(k));
}

/** Cut an over-long paragraph at sentence ends; over-long sentences go to `splitLongRun`. */
function splitLongParagraph(p: string, para: number, maxWords: number, maxChars: number, out: Piece[]): void {
  const emit = (start: number, end: number): void => {
    if (end <= start) return;
    const words = countWords(p, start, end);
    if (words <= maxWords && end - start <= maxChars) out.push({ para, start, end, words, heading: false });
    else splitLongRun(p, para, start, end, maxWords, maxChars, out);
  };

  let start = 0;
  for (let i = 0; i < p.length; i++) {
    const c = p.charCodeAt(i);
    if (c === 0x0a || (c === 0x20 && endsSentence(p, i))) {
      emit(start, i);
      start = i + 1;
    } else if (FULL_WIDTH_END.has(c) && i + 1 < p.length) {
      const next = p.charCodeAt(i + 1);
      if (!isSeparator(next) && !CLOSING.has(next) && !SENTENCE_END.has(next)) {
        emit(start, i + 1);
        start = i + 1;
      }
    }
  }
  emit(start, p.length);
}

/** Cut a run without usable sentence ends at word boundaries, and giant words at maxChars. */
function splitLongRun(p: string, para: number, start: number, end: number, maxWords: number, maxChars: number, out: Piece[]): void {
  let chunkStart = -1;
  let chunkEnd = -1;
  let chunkWords = 0;
  const flush = (): void => {
    if (chunkStart >= 0) out.push({ para, start: chunkStart, end: chunkEnd, words: chunkWords, heading: false });
    chunkStart = -1;
    chunkWords = 0;
  };

  let w = start;
  while (w < end) {
    let we = w;
    while (we < end && !isSeparator(p.charCodeAt(we))) we++;
    if (we - w > maxChars) {
      flush();
      for (let s = w; s < we; ) {
        let e = Math.min(s + maxChars, we);
        // Never split a surrogate pair.
        if (e < we && isHighSurrogate(p.charCodeAt(e - 1))) e--;
        out.push({ para, start: s, end: e, words: 1, heading: false });
        s = e;
      }
    } else {
      if (chunkStart >= 0 && (chunkWords + 1 > maxWords || we - chunkStart > maxChars)) flush();
      if (chunkStart < 0) chunkStart = w;
      chunkEnd = we;
      chunkWords++;
    }
    w = we + 1;
  }
  flush();
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

/** Text of pieces [from, to): consecutive pieces of one paragraph as one slice, paragraphs joined by a blank line. */
function render(paragraphs: string[], pieces: Piece[], from: number, to: number): string {
  const parts: string[] = [];
  let i = from;
  while (i < to) {
    let j = i;
    while (j + 1 < to && pieces[j + 1].para === pieces[i].para) j++;
    parts.push(paragraphs[pieces[i].para].slice(pieces[i].start, pieces[j].end));
    i = j + 1;
  }
  return parts.join('\n\n');
}

/**
 * A page's passages as they cross from a task thread: one UTF-8 buffer and the end offset of
 * each passage, two buffers that move between threads without a copy. A page of tens of
 * thousands of passages sent as an array of strings costs the receiving event loop a
 * structured clone of every string at once; packed, each batch is decoded when it is stored.
 */
export interface PackedPassages {
  text: Uint8Array;
  ends: Uint32Array;
  /** Each passage's search terms, packed the same way, and their counts (computed where the passages were). */
  terms?: { text: Uint8Array; ends: Uint32Array; counts: Uint32Array };
  /** `passagesDigest` of the passages (computed where they were). */
  sha256?: string;
  /** They are of the first part of the page only (extract.ts `ExtractedPage.truncated`). */
  truncated?: boolean;
}

/** A passage's search terms as they are stored (search-terms.ts `passageTerms`). */
export interface StoredTerms {
  terms: string;
  term_count: number;
}

/** What storing needs of a page's passages: an array of strings is one. */
export interface PassageList {
  readonly length: number;
  slice(start: number, end: number): string[];
  /** The passages' search terms when they were computed already (on the task thread). */
  sliceTerms?(start: number, end: number): StoredTerms[];
  /** Their `passagesDigest`, when computed already. */
  readonly sha256?: string;
  /** They are of the first part of the page only. */
  readonly truncated?: boolean;
}

/**
 * SHA-256 (hex) of a page's passages as they are indexed: the same text split the same way has
 * the same digest, whatever the page's markup around it (a new nonce or timestamp in a script
 * does not count as a change), cut into words the same way. A link keeps the digest of its stored
 * passages (kb_links.content_sha256).
 */
export function passagesDigest(passages: readonly string[]): string {
  const hash = createHash('sha256');
  // The words too: a page stored under another folding (SEARCH_WORDS_VERSION) differs, so its
  // next check indexes it again, although its text is the same.
  hash.update(`search words ${SEARCH_WORDS_VERSION}\u0000`);
  // Each passage followed by U+0000, which no passage holds (toParagraphs removes it).
  for (const p of passages) hash.update(p).update('\u0000');
  return hash.digest('hex');
}

function packTexts(texts: readonly string[]): { text: Uint8Array; ends: Uint32Array } {
  const encoder = new TextEncoder();
  let total = 0;
  for (const p of texts) total += p.length * 3;
  // Each buffer its own ArrayBuffer (never a shared pool), so it can be moved.
  const text = new Uint8Array(new ArrayBuffer(total));
  const ends = new Uint32Array(new ArrayBuffer(texts.length * 4));
  let offset = 0;
  for (let i = 0; i < texts.length; i++) {
    offset += encoder.encodeInto(texts[i]!, text.subarray(offset)).written;
    ends[i] = offset;
  }
  // Shrunk to what was written (a copy, on the thread that packs).
  return { text: offset === total ? text : text.slice(0, offset), ends };
}

/**
 * Packs the passages, and with `termsOf` their search terms too: computing them is the
 * larger part of storing a page's CPU work, done here on the task thread rather than on the
 * event loop a batch at a time.
 */
export function packPassages(passages: readonly string[], termsOf?: (passage: string) => StoredTerms): PackedPassages {
  const packed: PackedPassages = packTexts(passages);
  if (termsOf) {
    const all = passages.map(termsOf);
    const counts = new Uint32Array(new ArrayBuffer(all.length * 4));
    all.forEach((t, i) => {
      counts[i] = t.term_count;
    });
    packed.terms = { ...packTexts(all.map((t) => t.terms)), counts };
  }
  return packed;
}

/** The passages of a packed page, decoded a slice at a time. */
export function unpackPassages(packed: PackedPassages): PassageList {
  const decoder = new TextDecoder();
  const decode = (text: Uint8Array, ends: Uint32Array, start: number, end: number) => {
    const out: string[] = [];
    const last = Math.min(end, ends.length);
    for (let i = Math.max(0, start); i < last; i++) out.push(decoder.decode(text.subarray(i === 0 ? 0 : ends[i - 1]!, ends[i]!)));
    return out;
  };
  const { terms } = packed;
  return {
    length: packed.ends.length,
    ...(packed.sha256 !== undefined && { sha256: packed.sha256 }),
    ...(packed.truncated !== undefined && { truncated: packed.truncated }),
    slice: (start, end) => decode(packed.text, packed.ends, start, end),
    ...(terms && {
      sliceTerms: (start: number, end: number) =>
        decode(terms.text, terms.ends, start, end).map((text, k) => ({ terms: text, term_count: terms.counts[start + k]! })),
    }),
  };
}
