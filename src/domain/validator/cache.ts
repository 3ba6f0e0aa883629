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
 * It keeps a document's views too (`view`: its tool definitions for one platform, its fixes
 * in one format), under the SHA-256 and the view's name, in the same bound: repeating GET
 * …/tools or …/fixes for an unchanged document parses it no more than GET …/validator does
 * (DESIGN §5).
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
  /**
   * The bytes of a view of a document that reads (`name`: what it is, e.g. `tools:openai`),
   * from the cache, else from `render`, then kept; shared by callers at once as `answer` is.
   * Only a document `answer` accepted has views; `render`'s errors are kept as `answer` keeps them.
   */
  view(src: DocumentSource, opts: { sha256?: string }, name: string, render: (src: DocumentSource) => Uint8Array | Promise<Uint8Array>): Promise<Buffer>;
  /** The cached view `name` of the document with this SHA-256 (hex), if any (see `cached`). */
  cachedView(sha256: string, name: string): Buffer | undefined;
  /**
   * The bytes of the stored document (or version) with this SHA-256, from the cache, else from
   * `read`, then kept: a download asked for by many at once is read once and sent to each from
   * one Buffer (each request read and copied its own: 19 MB per slow reader of a 25 MB document).
   */
  document(sha256: string, read: () => Promise<Uint8Array>): Promise<Buffer>;
  stats(): ValidationCacheStats;
  clear(): void;
}

/**
 * Under the SHA-256: the validation's answer or the document's error. Under the SHA-256 and a
 * view's name: the view (a stored document's own bytes are the view `document`, of no format).
 */
type Entry = { format: DocumentFormat | null } & (
  | { answer: RenderedAnswer<Buffer>; error: null; view?: never }
  | { answer: null; error: AppError; view?: never }
  | { view: Buffer; answer?: never; error?: never }
);

const viewKey = (sha256: string, name: string) => `${sha256}:view:${name}`;

/** What an error entry counts for: its message and a share for the rest. */
const errorSize = (error: AppError) => 256 + error.message.length;

export function createValidationCache(options: { maxBytes: number }): ValidationCache {
  const maxBytes = Math.max(0, Math.floor(options.maxBytes));
  // lru-cache wants a positive bound: a bound of 0 keeps nothing in it (everything goes to the slot).
  const lru = new LRUCache<string, Entry>({ maxSize: Math.max(1, maxBytes) });
  let oversized: { key: string; entry: Entry; size: number } | null = null;
  // Renders under way, by key and format.
  const inFlight = new Map<string, Promise<unknown>>();
  let hits = 0;
  let misses = 0;

  const find = (key: string, usable: (entry: Entry) => boolean): Entry | undefined => {
    const entry = oversized?.key === key ? oversized.entry : lru.get(key);
    if (entry && usable(entry)) {
      hits++;
      return entry;
    }
    misses++;
    return undefined;
  };

  const store = (key: string, entry: Entry, size: number): void => {
    lru.delete(key);
    if (size <= maxBytes) {
      lru.set(key, entry, { size: Math.max(1, size) });
      oversized = null;
    } else {
      // Alone, as the bounded cache would hold it had it room for it.
      lru.clear();
      oversized = { key, entry, size };
    }
  };

  /**
   * What is kept under `key` for this document's format, else `render`'s result, kept by
   * `keep` (which may keep an error too). A caller that joins another's render renders for
   * itself once when that one fails for its caller, not for the document: what refused that
   * caller (its copilot's turn, a busy service) is not this caller's.
   */
  const kept = async <T>(
    key: string,
    format: DocumentFormat | null,
    read: (entry: Entry) => T | undefined,
    render: () => Promise<T>,
    keep: { value: (value: T) => Entry; size: (value: T) => number },
    mayRenderAfterJoining = true,
  ): Promise<T> => {
    const entry = find(key, (candidate) => candidate.format === format);
    if (entry?.error) throw new AppError(entry.error.code, entry.error.message, entry.error.details);
    const value = entry && read(entry);
    if (value !== undefined) return value;
    const flight = `${key}:${format}`;
    const joined = inFlight.get(flight) as Promise<T> | undefined;
    if (joined && mayRenderAfterJoining) {
      return joined.catch((err: unknown) => {
        if (isAppError(err) && err.code === 'invalid_swagger_file') throw err;
        return kept(key, format, read, render, keep, false);
      });
    }
    if (joined) return joined;
    // Started after it is registered (a renderer may throw at once).
    const rendering = Promise.resolve()
      .then(render)
      .then(
        (rendered) => {
          store(key, keep.value(rendered), keep.size(rendered));
          return rendered;
        },
        (err: unknown) => {
          // Only the document's own fault is kept: a busy or lost thread is tried again next time.
          if (isAppError(err) && err.code === 'invalid_swagger_file') store(key, { format, answer: null, error: err }, errorSize(err));
          throw err;
        },
      )
      .finally(() => inFlight.delete(flight));
    inFlight.set(flight, rendering);
    return rendering;
  };

  const answer = async (src: DocumentSource, opts: { sha256?: string } & ParseOptions, render: Renderer): Promise<RenderedAnswer<Buffer>> => {
    const { sha256: known, ...parseOptions } = opts;
    const format = detectFormat(src);
    return kept(
      known ?? (await sha256Hex(src.bytes)),
      format,
      (entry) => entry.answer ?? undefined,
      async () => {
        const rendered = await render(src, parseOptions);
        return { answer: asBuffer(rendered.answer), readiness: rendered.readiness };
      },
      { value: (answer) => ({ format, answer, error: null }), size: (answer) => answer.answer.length },
    );
  };

  /** The view `name` of the document with this SHA-256 read as `format` (null: its own bytes, of no format), else `make`'s bytes, kept. */
  const keptView = (sha256: string, name: string, format: DocumentFormat | null, make: () => Uint8Array | Promise<Uint8Array>): Promise<Buffer> =>
    kept(
      viewKey(sha256, name),
      format,
      (entry) => entry.view,
      async () => asBuffer(await make()),
      { value: (bytes) => ({ format, view: bytes }), size: (bytes) => bytes.length },
    );

  return {
    answer,
    cached(sha256) {
      return find(sha256, (entry) => entry.answer != null)?.answer?.answer;
    },
    view: async (src, opts, name, render) => keptView(opts.sha256 ?? (await sha256Hex(src.bytes)), name, detectFormat(src), () => render(src)),
    cachedView(sha256, name) {
      return find(viewKey(sha256, name), (entry) => entry.view !== undefined)?.view;
    },
    document: (sha256, read) => keptView(sha256, 'document', null, read),
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
