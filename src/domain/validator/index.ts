/**
 * The validator (DESIGN §5): reads an OpenAPI 3.x or Swagger 2.0 document, lists its
 * endpoints and what an LLM will struggle with. Pure code: no HTTP, no database.
 * How to add a finding: README.md in this folder.
 */
import { checkAnswerSize } from './answer-size.js';
import { extractEndpoints, type EndpointSource } from './endpoints.js';
import { runFindings } from './findings/index.js';
import { parseDocumentWithFormat } from './parse.js';
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
  Readiness,
  RuleFinding,
  ValidationResult,
  Validations,
} from './types.js';
export type { DocumentFinding, DocumentFindingKey, EndpointFinding, EndpointFindingKey, Finding } from './findings/index.js';
export type { ValidationSummary } from './summary.js';
export { ENDPOINT_FINDING_TEXTS, ENDPOINT_FINDINGS, FINDINGS, type EndpointFindingText } from './findings/index.js';
export { PLATFORMS, RULE_FAMILIES, RULE_IDS, type Platform, type RuleFamily, type Severity } from './rules/index.js';
export { ANSWER_LIMIT_CHARS_PER_DOCUMENT_BYTE, ANSWER_LIMIT_FLOOR_CHARS, jsonLength, maxAnswerChars } from './answer-size.js';
export { createValidationCache, sha256Hex, type Renderer, type ValidationCache, type ValidationCacheStats } from './cache.js';
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
  const sources: EndpointSource[] = [];
  const all_endpoints = extractEndpoints(doc, sources);
  const result: ValidationResult = { all_endpoints, validations: runFindings(doc, all_endpoints, sources) };
  if (opts.documentBytes !== undefined) checkAnswerSize(result, opts.documentBytes);
  return result;
}

/** Parse and validate in one call (no cache), the answer bounded by the document's size. */
export function validateSource(src: DocumentSource, opts?: ParseOptions): ValidationResult {
  return validateDocument(parseDocumentWithFormat(src, opts).doc, { documentBytes: src.bytes.length });
}

/**
 * The JSON text of a result, `JSON.stringify(result)` byte for byte, in pieces to be written
 * one after another (or joined). Each endpoint is serialised once: a flag map holds the very
 * objects of `all_endpoints`, and a document whose endpoints all lack a field repeats every
 * one of them in that map (Kubernetes': 3.7 MB of its 9.2 MB answer). Anything else in
 * `validations` is serialised as it is.
 */
export function renderParts(result: ValidationResult): string[] {
  const endpoints = result.all_endpoints;
  const texts = endpoints.map((e) => JSON.stringify(e));
  const index = new Map<unknown, number>();
  for (let i = 0; i < endpoints.length; i++) if (!index.has(endpoints[i])) index.set(endpoints[i], i);
  const parts = ['{"all_endpoints":[', texts.join(','), '],"validations":{'];
  let first = true;
  for (const [key, value] of Object.entries(result.validations)) {
    if (value === undefined) continue; // as JSON.stringify leaves it out
    parts.push(`${first ? '' : ','}${JSON.stringify(key)}:${flagMapText(value, index, texts) ?? JSON.stringify(value)}`);
    first = false;
  }
  parts.push('}}');
  return parts;
}

/** A flag map's text from its endpoints' texts; null when `value` is no map of endpoints (serialised as it is). */
function flagMapText(value: unknown, index: ReadonlyMap<unknown, number>, texts: readonly string[]): string | null {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return null;
  const entries = Object.entries(value);
  if (entries.length === 0) return null;
  const members: string[] = [];
  for (const [key, endpoint] of entries) {
    const at = index.get(endpoint);
    if (at === undefined) return null;
    members.push(`${JSON.stringify(key)}:${texts[at]}`);
  }
  return `{${members.join(',')}}`;
}

/** The JSON text of a result: `renderParts` joined. */
export function renderResult(result: ValidationResult): string {
  return renderParts(result).join('');
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
