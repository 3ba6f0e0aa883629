/**
 * The validator (DESIGN §5): reads an OpenAPI 3.x or Swagger 2.0 document, lists its
 * endpoints and what an LLM will struggle with. Pure code: no HTTP, no database.
 * How to add a finding: README.md in this folder.
 */
import { isAppError } from '../../errors.js';
import { checkAnswerSize } from './answer-size.js';
import { lookup, sha256Hex, store } from './cache.js';
import { extractEndpoints } from './endpoints.js';
import { runFindings } from './findings/index.js';
import { detectFormat, parseDocumentWithFormat } from './parse.js';
import { tooLargeToValidate } from './problems.js';
import { checkRoot } from './root-check.js';
import type { DocumentSource, ParseOptions, ValidationResult } from './types.js';

export type {
  ApiDocument,
  DocumentFormat,
  DocumentSource,
  Endpoint,
  FlagMap,
  ParseOptions,
  ValidationResult,
  Validations,
} from './types.js';
export type { DocumentFinding, DocumentFindingKey, EndpointFinding, EndpointFindingKey, Finding } from './findings/index.js';
export type { ValidationSummary } from './summary.js';
export { ENDPOINT_FINDINGS, FINDINGS, TOOL_NAME } from './findings/index.js';
export { ANSWER_LIMIT_CHARS_PER_DOCUMENT_BYTE, ANSWER_LIMIT_FLOOR_CHARS, jsonLength, maxAnswerChars } from './answer-size.js';
export { cachedValidation, clearValidationCache, configureValidationCache, sha256Hex, validationCacheStats } from './cache.js';
export { DEFAULT_MAX_DEPTH, detectFormat, parseDocument } from './parse.js';
export { hasFindings, validationSummary } from './summary.js';

/**
 * `{all_endpoints, validations}` for a parsed document (interface §4.3, DESIGN §5). The
 * flag maps hold the very objects of `all_endpoints`. The root check is repeated (it is
 * cheap) so that any value passed here fails cleanly rather than halfway. With
 * `documentBytes` (the size of the document read), a document whose answer would be
 * longer than `maxAnswerChars(documentBytes)` is refused (invalid_swagger_file), counted
 * before anything renders it.
 */
export function validateDocument(doc: unknown, opts: { documentBytes?: number } = {}): ValidationResult {
  checkRoot(doc);
  const all_endpoints = extractEndpoints(doc);
  const result: ValidationResult = { all_endpoints, validations: runFindings(doc, all_endpoints) };
  if (opts.documentBytes !== undefined) checkAnswerSize(result, opts.documentBytes);
  return result;
}

/** Parse and validate in one call (no cache), the answer bounded by the document's size. */
export function validateSource(src: DocumentSource, opts?: ParseOptions): ValidationResult {
  return validateDocument(parseDocumentWithFormat(src, opts).doc, { documentBytes: src.bytes.length });
}

/**
 * The JSON text of a result: one `JSON.stringify`, which walks the document's own
 * subtrees that the endpoints reference. (Serialising each endpoint once and splicing
 * the texts into the flag maps was measured slower: each `JSON.stringify` call has a
 * fixed cost that thousands of endpoints multiply, more than the maps' repetition costs.)
 */
export function renderResult(result: ValidationResult): string {
  return JSON.stringify(result);
}

/**
 * The JSON text `{"all_endpoints":[…],"validations":{…}}` for a document, parsed and
 * validated now (no cache). Throws invalid_swagger_file, also when the answer would pass
 * its bound (`maxAnswerChars`).
 */
export function renderFresh(src: DocumentSource, opts?: ParseOptions): string {
  try {
    return renderResult(validateSource(src, opts));
  } catch (err) {
    // A RangeError here is a result too large for one string (a bound above V8's longest string).
    throw err instanceof RangeError ? tooLargeToValidate() : err;
  }
}

/**
 * What renders a document not in the cache: `renderFresh` here, or the same on another
 * thread, as text or as its UTF-8 bytes.
 */
export type Renderer = (src: DocumentSource, opts: ParseOptions) => string | Uint8Array | Promise<string | Uint8Array>;

// Renders under way, by SHA-256 and format: a document sent again while it is being
// validated waits for that validation instead of starting a second one.
const inFlight = new Map<string, Promise<Buffer>>();

/**
 * The UTF-8 bytes of `{"all_endpoints":[…],"validations":{…}}` for a document, from the
 * cache when these bytes were validated before (no parsing then), else from `render`,
 * then kept in the cache. The very Buffer the cache holds, shared by every caller: never
 * write to it. `opts.sha256` is the hex SHA-256 of `src.bytes` when the caller already
 * knows it. The HTTP route sends `{"chatbot_id":"<id>",` then these bytes after their `{`.
 */
export async function validationAnswer(
  src: DocumentSource,
  opts: { sha256?: string } & ParseOptions = {},
  render: Renderer = renderFresh,
): Promise<Buffer> {
  const { sha256: known, ...parseOptions } = opts;
  const sha256 = known ?? (await sha256Hex(src.bytes));
  const format = detectFormat(src);
  const cached = lookup(sha256, format);
  if (cached !== undefined) return cached;
  const key = `${sha256}:${format}`;
  let rendering = inFlight.get(key);
  if (!rendering) {
    // Started after it is registered (a renderer may throw at once).
    rendering = Promise.resolve()
      .then(() => render(src, parseOptions))
      .then(
        (rendered) => {
          const answer = asBuffer(rendered);
          store(sha256, format, { answer });
          return answer;
        },
        (err: unknown) => {
          if (isAppError(err) && err.code === 'invalid_swagger_file') store(sha256, format, { error: err });
          throw err;
        },
      )
      .finally(() => inFlight.delete(key));
    inFlight.set(key, rendering);
  }
  return rendering;
}

/** `validationAnswer` as text (a copy): for callers that want a string. */
export async function renderValidation(
  src: DocumentSource,
  opts: { sha256?: string } & ParseOptions = {},
  render: Renderer = renderFresh,
): Promise<string> {
  return (await validationAnswer(src, opts, render)).toString('utf8');
}

function asBuffer(rendered: string | Uint8Array): Buffer {
  if (typeof rendered === 'string') return Buffer.from(rendered, 'utf8');
  return Buffer.isBuffer(rendered) ? rendered : Buffer.from(rendered.buffer, rendered.byteOffset, rendered.byteLength);
}
