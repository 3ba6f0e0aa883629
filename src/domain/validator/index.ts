/**
 * The validator (DESIGN §5): reads an OpenAPI 3.x or Swagger 2.0 document, lists its
 * endpoints and what an LLM will struggle with. Pure code: no HTTP, no database.
 * How to add a finding: README.md in this folder.
 */
import { isAppError } from '../../errors.js';
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
export { cachedValidation, clearValidationCache, configureValidationCache, sha256Hex, validationCacheStats } from './cache.js';
export { DEFAULT_MAX_DEPTH, detectFormat, parseDocument } from './parse.js';
export { hasFindings, validationSummary } from './summary.js';

/**
 * `{all_endpoints, validations}` for a parsed document (interface §4.3, DESIGN §5). The
 * flag maps hold the very objects of `all_endpoints`. The root check is repeated (it is
 * cheap) so that any value passed here fails cleanly rather than halfway.
 */
export function validateDocument(doc: unknown): ValidationResult {
  checkRoot(doc);
  const all_endpoints = extractEndpoints(doc);
  return { all_endpoints, validations: runFindings(doc, all_endpoints) };
}

/** Parse and validate in one call (no cache). */
export function validateSource(src: DocumentSource, opts?: ParseOptions): ValidationResult {
  return validateDocument(parseDocumentWithFormat(src, opts).doc);
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
 * validated now (no cache). Throws invalid_swagger_file.
 */
export function renderFresh(src: DocumentSource, opts?: ParseOptions): string {
  try {
    return renderResult(validateDocument(parseDocumentWithFormat(src, opts).doc));
  } catch (err) {
    // A RangeError here is a result too large for one string (aliases expanding within the limits).
    throw err instanceof RangeError ? tooLargeToValidate() : err;
  }
}

/** What renders a document not in the cache: `renderFresh` here, or the same on another thread. */
export type Renderer = (src: DocumentSource, opts: ParseOptions) => string | Promise<string>;

// Renders under way, by SHA-256 and format: a document sent again while it is being
// validated waits for that validation instead of starting a second one.
const inFlight = new Map<string, Promise<string>>();

/**
 * The JSON text `{"all_endpoints":[…],"validations":{…}}` for a document, from the cache
 * when these bytes were validated before (no parsing then), else from `render`.
 * `opts.sha256` is the hex SHA-256 of `src.bytes` when the caller already knows it. The
 * HTTP route prepends the copilot id: `{"chatbot_id":"<id>",` + text.slice(1).
 */
export async function renderValidation(
  src: DocumentSource,
  opts: { sha256?: string } & ParseOptions = {},
  render: Renderer = renderFresh,
): Promise<string> {
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
        (text) => {
          store(sha256, format, { text });
          return text;
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
