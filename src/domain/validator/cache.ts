import { AppError } from '../../errors.js';
import type { DocumentFormat } from './types.js';

/**
 * Validation answers by content (DESIGN §5: an unchanged document is not parsed again).
 * Keyed by the SHA-256 of the bytes; least recently used out first, bounded by the bytes
 * of the answers it holds (VALIDATION_CACHE_BYTES, default 64 MiB). Answers are kept as
 * their UTF-8 bytes: a response sends the cached bytes themselves, neither encoded again
 * nor copied, however many requests send them at once. Documents that cannot be read are
 * cached too, as their error, so a hostile document is not parsed twice either.
 *
 * The answer stored last is always kept, even when it alone is larger than the bound (the
 * cache then holds it alone): no answer is rendered again for each request because it
 * does not fit. The cache's memory is at most the larger of the bound and that one
 * answer, which the answer bound (answer-size.ts) keeps within 10 characters (each at most
 * 3 bytes of UTF-8) per byte of the largest document accepted (MAX_DOCUMENT_BYTES).
 *
 * Per process and content-keyed: safe with several instances sharing a database.
 */

interface Entry {
  format: DocumentFormat;
  answer: Buffer | null;
  error: AppError | null;
  size: number;
}

const DEFAULT_MAX_BYTES = 64 * 1024 * 1024;

class AnswerCache {
  private readonly entries = new Map<string, Entry>();
  private used = 0;
  hits = 0;
  misses = 0;

  constructor(private maxBytes: number) {}

  /** The entry, if there is one that `usable` accepts (an entry it refuses counts as a miss). */
  get(key: string, usable: (entry: Entry) => boolean): Entry | undefined {
    const entry = this.entries.get(key);
    if (!entry || !usable(entry)) {
      this.misses++;
      return undefined;
    }
    this.entries.delete(key);
    this.entries.set(key, entry);
    this.hits++;
    return entry;
  }

  set(key: string, entry: Entry): void {
    const previous = this.entries.get(key);
    if (previous) {
      this.entries.delete(key);
      this.used -= previous.size;
    }
    this.entries.set(key, entry);
    this.used += entry.size;
    this.evict();
  }

  clear(): void {
    this.entries.clear();
    this.used = 0;
    this.hits = 0;
    this.misses = 0;
  }

  resize(maxBytes: number): void {
    this.maxBytes = Math.max(0, Math.floor(maxBytes));
    this.evict();
  }

  stats(): { entries: number; bytes: number; maxBytes: number; hits: number; misses: number } {
    return { entries: this.entries.size, bytes: this.used, maxBytes: this.maxBytes, hits: this.hits, misses: this.misses };
  }

  /** Oldest out first while over the bound; the newest entry stays whatever its size. */
  private evict(): void {
    for (const [key, entry] of this.entries) {
      if (this.used <= this.maxBytes || this.entries.size === 1) break;
      this.entries.delete(key);
      this.used -= entry.size;
    }
  }
}

const cache = new AnswerCache(DEFAULT_MAX_BYTES);

/** The cache's bound in bytes (VALIDATION_CACHE_BYTES). */
export function configureValidationCache(options: { maxBytes: number }): void {
  cache.resize(options.maxBytes);
}

export function clearValidationCache(): void {
  cache.clear();
}

export function validationCacheStats(): { entries: number; bytes: number; maxBytes: number; hits: number; misses: number } {
  return cache.stats();
}

/**
 * The cached answer (UTF-8 bytes) of the document with this SHA-256 (hex), if any; the
 * cache's own Buffer, not a copy: never write to it. Counts as a use.
 */
export function cachedValidation(sha256: string): Buffer | undefined {
  return cache.get(sha256, (entry) => entry.answer !== null)?.answer ?? undefined;
}

/** @internal The entry for these bytes read as `format`: its answer, or throws its error. */
export function lookup(sha256: string, format: DocumentFormat): Buffer | undefined {
  const entry = cache.get(sha256, (candidate) => candidate.format === format);
  if (!entry) return undefined;
  if (entry.error) throw new AppError(entry.error.code, entry.error.message, entry.error.details);
  return entry.answer!;
}

/** @internal */
export function store(sha256: string, format: DocumentFormat, outcome: { answer: Buffer } | { error: AppError }): void {
  if ('answer' in outcome) {
    cache.set(sha256, { format, answer: outcome.answer, error: null, size: outcome.answer.length });
  } else {
    cache.set(sha256, { format, answer: null, error: outcome.error, size: 256 + outcome.error.message.length });
  }
}

/**
 * Hex SHA-256 of the bytes, hashed on libuv's thread pool (WebCrypto) rather than on the
 * event loop (tens of milliseconds for the largest documents).
 */
export async function sha256Hex(bytes: Uint8Array): Promise<string> {
  return Buffer.from(await crypto.subtle.digest('SHA-256', bytes as Uint8Array<ArrayBuffer>)).toString('hex');
}
