import { AppError } from '../../errors.js';
import { SizedLru } from '../sized-lru.js';
import type { DocumentFormat } from './types.js';

/**
 * Rendered validations by content (DESIGN §5: an unchanged document is not parsed again).
 * Keyed by the SHA-256 of the bytes; a least-recently-used list bounded by the total
 * length of the cached texts (default 64 Mi characters). Documents that cannot be read
 * are cached too, as their error, so a hostile document is not parsed twice either.
 * Per process and content-keyed: safe with several instances sharing a database.
 */

interface Entry {
  format: DocumentFormat;
  text: string | null;
  error: AppError | null;
}

const DEFAULT_MAX_CHARS = 64 * 1024 * 1024;

const cache = new SizedLru<Entry>(DEFAULT_MAX_CHARS);

export function configureValidationCache(options: { maxChars: number }): void {
  cache.resize(options.maxChars);
}

export function clearValidationCache(): void {
  cache.clear();
}

export function validationCacheStats(): { entries: number; chars: number; maxChars: number; hits: number; misses: number } {
  const { entries, size, maxSize, hits, misses } = cache.stats();
  return { entries, chars: size, maxChars: maxSize, hits, misses };
}

/** The cached rendering of the document with this SHA-256 (hex), if any. Counts as a use. */
export function cachedValidation(sha256: string): string | undefined {
  return cache.get(sha256, (entry) => entry.text !== null)?.text ?? undefined;
}

/** @internal The entry for these bytes read as `format`: its text, or throws its error. */
export function lookup(sha256: string, format: DocumentFormat): string | undefined {
  const entry = cache.get(sha256, (candidate) => candidate.format === format);
  if (!entry) return undefined;
  if (entry.error) throw new AppError(entry.error.code, entry.error.message, entry.error.details);
  return entry.text!;
}

/** @internal */
export function store(sha256: string, format: DocumentFormat, outcome: { text: string } | { error: AppError }): void {
  const text = 'text' in outcome ? outcome.text : null;
  const error = 'error' in outcome ? outcome.error : null;
  cache.set(sha256, { format, text, error }, text !== null ? text.length : 256 + error!.message.length);
}

/**
 * Hex SHA-256 of the bytes, hashed on libuv's thread pool (WebCrypto) rather than on the
 * event loop (tens of milliseconds for the largest documents).
 */
export async function sha256Hex(bytes: Uint8Array): Promise<string> {
  return Buffer.from(await crypto.subtle.digest('SHA-256', bytes as Uint8Array<ArrayBuffer>)).toString('hex');
}
