import { AppError } from '../../errors.js';
import { SizedLru } from '../sized-lru.js';
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
}

const DEFAULT_MAX_BYTES = 64 * 1024 * 1024;

const cache = new SizedLru<Entry>(DEFAULT_MAX_BYTES, { keepNewest: true });

/** The cache's bound in bytes (VALIDATION_CACHE_BYTES). */
export function configureValidationCache(options: { maxBytes: number }): void {
  cache.resize(options.maxBytes);
}

export function clearValidationCache(): void {
  cache.clear();
}

export function validationCacheStats(): { entries: number; bytes: number; maxBytes: number; hits: number; misses: number } {
  const { entries, size, maxSize, hits, misses } = cache.stats();
  return { entries, bytes: size, maxBytes: maxSize, hits, misses };
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
    cache.set(sha256, { format, answer: outcome.answer, error: null }, outcome.answer.length);
  } else {
    cache.set(sha256, { format, answer: null, error: outcome.error }, 256 + outcome.error.message.length);
  }
}

/**
 * Hex SHA-256 of the bytes, hashed on libuv's thread pool (WebCrypto) rather than on the
 * event loop (tens of milliseconds for the largest documents).
 */
export async function sha256Hex(bytes: Uint8Array): Promise<string> {
  return Buffer.from(await crypto.subtle.digest('SHA-256', bytes as Uint8Array<ArrayBuffer>)).toString('hex');
}
