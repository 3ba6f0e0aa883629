import { LRUCache } from 'lru-cache';
import { AppError, isAppError } from '../../errors.js';
import { detectFormat } from './parse.js';
import type { DocumentFormat, DocumentSource, ParseOptions } from './types.js';
import type { UploadReadiness } from './upload-readiness.js';

/**
 * Validation answers by content (DESIGN §5: an unchanged document is not parsed again).
 * Keyed by the SHA-256 of the bytes; least recently used out first, bounded by the bytes
 * of the answers it holds (VALIDATION_CACHE_BYTES). Answers are kept as their UTF-8
 * bytes: a response sends the cached bytes themselves, neither encoded again nor copied,
 * however many requests send them at once. Documents that cannot be read are cached too,
 * as their error, so a hostile document is not parsed twice either.
 *
 * The answer stored last is always kept, even when it alone is larger than the bound (the
 * cache then holds it alone): no answer is rendered again for each request because it
 * does not fit (issue 13 §1). lru-cache refuses an entry larger than its `maxSize` (and
 * a `maxEntrySize` above it breaks its accounting), so that one answer lives in a slot of
 * its own beside it, emptied by the next answer stored. The cache's memory is at most the
 * larger of the bound and that one answer, which the answer bound (answer-size.ts) keeps
 * within 10 characters (each at most 3 bytes of UTF-8) per byte of the largest document
 * accepted (MAX_DOCUMENT_BYTES).
 *
 * Beside each answer it keeps the answer's readiness summary, which the renderer reads from
 * the result it renders: an upload stores that summary (issue 17 §3) without parsing the
 * answer again.
 *
 * One per process, built by its composition root; content-keyed, so safe with several
 * instances sharing a database.
 */

/** A validation's answer as UTF-8 bytes, and the readiness summary of the result it renders. */
export interface RenderedAnswer<Bytes extends Uint8Array = Uint8Array> {
  answer: Bytes;
  readiness: UploadReadiness;
}

/** What renders a document not in the cache: `renderValidation` on this thread, or the same on a task thread. */
export type Renderer = (src: DocumentSource, opts: ParseOptions) => RenderedAnswer | Promise<RenderedAnswer>;

export interface ValidationCacheStats {
  entries: number;
  bytes: number;
  maxBytes: number;
  hits: number;
  misses: number;
}

export interface ValidationCache {
  /**
   * The UTF-8 bytes of `{"all_endpoints":[…],"validations":{…}}` for a document and their
   * readiness summary, from the cache when these bytes were validated before (no parsing
   * then), else from `render`, then kept. A document sent again while it is being rendered
   * waits for that render instead of starting a second one (and renders for itself when that
   * render is refused for its starter, not for the document). `answer` is the very Buffer the
   * cache holds, shared by every caller: never write to it. `opts.sha256` is the hex SHA-256
   * of `src.bytes` when the caller already knows it. Throws what `render` throws;
   * invalid_swagger_file is kept.
   */
  answer(src: DocumentSource, opts: { sha256?: string } & ParseOptions, render: Renderer): Promise<RenderedAnswer<Buffer>>;
  /** The cached answer of the document with this SHA-256 (hex), if any; the cache's own Buffer: never write to it. Counts as a use. */
  cached(sha256: string): Buffer | undefined;
  stats(): ValidationCacheStats;
  clear(): void;
}

type Entry = { format: DocumentFormat } & ({ answer: RenderedAnswer<Buffer>; error: null } | { answer: null; error: AppError });

/** What an error entry counts for: its message and a share for the rest. */
const errorSize = (error: AppError) => 256 + error.message.length;

export function createValidationCache(options: { maxBytes: number }): ValidationCache {
  const maxBytes = Math.max(0, Math.floor(options.maxBytes));
  // lru-cache wants a positive bound: a bound of 0 keeps nothing in it (everything goes to the slot).
  const lru = new LRUCache<string, Entry>({ maxSize: Math.max(1, maxBytes) });
  let oversized: { key: string; entry: Entry; size: number } | null = null;
  // Renders under way, by SHA-256 and format.
  const inFlight = new Map<string, Promise<RenderedAnswer<Buffer>>>();
  let hits = 0;
  let misses = 0;

  const find = (sha256: string, usable: (entry: Entry) => boolean): Entry | undefined => {
    const entry = oversized?.key === sha256 ? oversized.entry : lru.get(sha256);
    if (entry && usable(entry)) {
      hits++;
      return entry;
    }
    misses++;
    return undefined;
  };

  const store = (sha256: string, entry: Entry, size: number): void => {
    lru.delete(sha256);
    if (size <= maxBytes) {
      lru.set(sha256, entry, { size: Math.max(1, size) });
      oversized = null;
    } else {
      // Alone, as the bounded cache would hold it had it room for it.
      lru.clear();
      oversized = { key: sha256, entry, size };
    }
  };

  const answer = async (
    src: DocumentSource,
    opts: { sha256?: string } & ParseOptions,
    render: Renderer,
    mayRenderAfterJoining: boolean,
  ): Promise<RenderedAnswer<Buffer>> => {
    const { sha256: known, ...parseOptions } = opts;
    const sha256 = known ?? (await sha256Hex(src.bytes));
    const format = detectFormat(src);
    const entry = find(sha256, (candidate) => candidate.format === format);
    if (entry?.error) throw new AppError(entry.error.code, entry.error.message, entry.error.details);
    if (entry) return entry.answer;
    const key = `${sha256}:${format}`;
    let rendering = inFlight.get(key);
    if (rendering && mayRenderAfterJoining) {
      // Another caller's render (another copilot's, for the same bytes): the document's own fault
      // is this caller's too, but what refused that caller (its copilot's turn, a busy service) is
      // not: this caller then renders for itself, once.
      return rendering.catch((err: unknown) => {
        if (isAppError(err) && err.code === 'invalid_swagger_file') throw err;
        return answer(src, { sha256, ...parseOptions }, render, false);
      });
    }
    if (!rendering) {
      // Started after it is registered (a renderer may throw at once).
      rendering = Promise.resolve()
        .then(() => render(src, parseOptions))
        .then(
          (rendered) => {
            const kept = { answer: asBuffer(rendered.answer), readiness: rendered.readiness };
            store(sha256, { format, answer: kept, error: null }, kept.answer.length);
            return kept;
          },
          (err: unknown) => {
            // Only the document's own fault is kept: a busy or lost thread is tried again next time.
            if (isAppError(err) && err.code === 'invalid_swagger_file') store(sha256, { format, answer: null, error: err }, errorSize(err));
            throw err;
          },
        )
        .finally(() => inFlight.delete(key));
      inFlight.set(key, rendering);
    }
    return rendering;
  };

  return {
    answer: (src, opts, render) => answer(src, opts, render, true),
    cached(sha256) {
      return find(sha256, (entry) => entry.answer !== null)?.answer?.answer;
    },
    stats() {
      const extra = oversized ? { entries: 1, bytes: oversized.size } : { entries: 0, bytes: 0 };
      return { entries: lru.size + extra.entries, bytes: lru.calculatedSize + extra.bytes, maxBytes, hits, misses };
    },
    clear() {
      lru.clear();
      oversized = null;
      hits = 0;
      misses = 0;
    },
  };
}

function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** Hex SHA-256 of the bytes, hashed on libuv's thread pool (WebCrypto) rather than on the event loop. */
export async function sha256Hex(bytes: Uint8Array): Promise<string> {
  return Buffer.from(await crypto.subtle.digest('SHA-256', bytes as Uint8Array<ArrayBuffer>)).toString('hex');
}
