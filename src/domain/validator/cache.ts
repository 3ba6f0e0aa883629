import { createRequire } from 'node:module';
import { AppError } from '../../errors.js';
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
  size: number;
}

const DEFAULT_MAX_CHARS = 64 * 1024 * 1024;

let maxChars = DEFAULT_MAX_CHARS;
let usedChars = 0;
let hits = 0;
let misses = 0;
const entries = new Map<string, Entry>();

export function configureValidationCache(options: { maxChars: number }): void {
  maxChars = Math.max(0, Math.floor(options.maxChars));
  evict();
}

export function clearValidationCache(): void {
  entries.clear();
  usedChars = 0;
  hits = 0;
  misses = 0;
}

export function validationCacheStats(): { entries: number; chars: number; maxChars: number; hits: number; misses: number } {
  return { entries: entries.size, chars: usedChars, maxChars, hits, misses };
}

/** The cached rendering of the document with this SHA-256 (hex), if any. Counts as a use. */
export function cachedValidation(sha256: string): string | undefined {
  const entry = entries.get(sha256);
  if (!entry || entry.text === null) return undefined;
  touch(sha256, entry);
  hits++;
  return entry.text;
}

/** @internal The entry for these bytes read as `format`: its text, or throws its error. */
export function lookup(sha256: string, format: DocumentFormat): string | undefined {
  const entry = entries.get(sha256);
  if (!entry || entry.format !== format) {
    misses++;
    return undefined;
  }
  touch(sha256, entry);
  hits++;
  if (entry.error) throw new AppError(entry.error.code, entry.error.message, entry.error.details);
  return entry.text!;
}

/** @internal */
export function store(sha256: string, format: DocumentFormat, outcome: { text: string } | { error: AppError }): void {
  const text = 'text' in outcome ? outcome.text : null;
  const error = 'error' in outcome ? outcome.error : null;
  const size = text !== null ? text.length : 256 + error!.message.length;
  const previous = entries.get(sha256);
  if (previous) {
    entries.delete(sha256);
    usedChars -= previous.size;
  }
  if (size > maxChars) return;
  entries.set(sha256, { format, text, error, size });
  usedChars += size;
  evict();
}

function touch(key: string, entry: Entry): void {
  entries.delete(key);
  entries.set(key, entry);
}

function evict(): void {
  for (const [key, entry] of entries) {
    if (usedChars <= maxChars) break;
    entries.delete(key);
    usedChars -= entry.size;
  }
}

const require = createRequire(import.meta.url);
let createHash: typeof import('node:crypto').createHash | undefined;

export function sha256Hex(bytes: Uint8Array): string {
  createHash ??= (require('node:crypto') as typeof import('node:crypto')).createHash;
  return createHash('sha256').update(bytes).digest('hex');
}
