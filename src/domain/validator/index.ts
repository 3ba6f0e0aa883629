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
import type { RenderedAnswer } from './cache.js';
import { checkRoot } from './root-check.js';
import type { DocumentSource, ParseOptions, ValidationResult } from './types.js';
import { uploadReadiness } from './upload-readiness.js';

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
export { PLATFORMS, RULE_FAMILIES, RULE_IDS, RULE_TEXTS, type Platform, type RuleFamily, type Severity } from './rules/index.js';
export { ANSWER_LIMIT_CHARS_PER_DOCUMENT_BYTE, ANSWER_LIMIT_FLOOR_CHARS, jsonLength, maxAnswerChars } from './answer-size.js';
export { createValidationCache, sha256Hex, type RenderedAnswer, type Renderer, type ValidationCache, type ValidationCacheStats } from './cache.js';
export { DEFAULT_MAX_DEPTH, detectFormat, parseDocument, writeYaml } from './parse.js';
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
 * The answer's JSON text as UTF-8 bytes, `Buffer.from(JSON.stringify(result))` byte for byte,
 * in pieces to be written one after another (or concatenated). Each endpoint is serialised and
 * encoded once: a flag map holds the very objects of `all_endpoints`, and its members are
 * copied as bytes from the endpoints' (a document whose endpoints all lack a field repeats
 * every one of them in that map: Kubernetes', 3.7 MB of its 9.2 MB answer). Anything else in
 * `validations` is serialised as it is.
 */
export function renderAnswer(result: ValidationResult): Buffer[] {
  const endpoints = result.all_endpoints;
  const texts = endpoints.map((e) => JSON.stringify(e));
  const joined = texts.join(',');
  const body = Buffer.from(joined);
  // Where each endpoint's bytes start in `body` (and, one further, where the last ends): its
  // characters' offsets when the text is ASCII, as it is in most documents.
  const ascii = body.length === joined.length;
  const starts = new Array<number>(texts.length + 1);
  let at = 0;
  for (let i = 0; i < texts.length; i++) {
    starts[i] = at;
    at += (ascii ? texts[i]!.length : Buffer.byteLength(texts[i]!)) + 1;
  }
  starts[texts.length] = at;
  const index = new Map<unknown, number>();
  for (let i = 0; i < endpoints.length; i++) if (!index.has(endpoints[i])) index.set(endpoints[i], i);
  const pieces: Buffer[] = [Buffer.from('{"all_endpoints":['), body];
  let text = '],"validations":{';
  let first = true;
  for (const [key, value] of Object.entries(result.validations)) {
    if (value === undefined) continue; // as JSON.stringify leaves it out
    text += `${first ? '' : ','}${JSON.stringify(key)}:`;
    first = false;
    const map = flagMapBytes(value, index, body, starts);
    if (map === null) {
      text += JSON.stringify(value);
      continue;
    }
    pieces.push(Buffer.from(text), map);
    text = '';
  }
  pieces.push(Buffer.from(`${text}}}`));
  return pieces;
}

/**
 * A flag map's bytes, its members copied from the endpoints' bytes (`body`, each ending one
 * byte before the next starts); null when `value` is no map of endpoints (serialised as it is).
 */
function flagMapBytes(value: unknown, index: ReadonlyMap<unknown, number>, body: Buffer, starts: readonly number[]): Buffer | null {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return null;
  const entries = Object.entries(value);
  if (entries.length === 0) return null;
  const keys = new Array<string>(entries.length);
  const members = new Array<number>(entries.length);
  let size = entries.length + 1; // the braces and the commas between members
  for (let m = 0; m < entries.length; m++) {
    const [key, endpoint] = entries[m]!;
    const i = index.get(endpoint);
    if (i === undefined) return null;
    keys[m] = `${JSON.stringify(key)}:`;
    members[m] = i;
    size += Buffer.byteLength(keys[m]!) + starts[i + 1]! - 1 - starts[i]!;
  }
  const out = Buffer.allocUnsafe(size);
  let at = 0;
  out[at++] = 0x7b; // {
  for (let m = 0; m < members.length; m++) {
    if (m > 0) out[at++] = 0x2c; // ,
    const i = members[m]!;
    at += out.write(keys[m]!, at);
    at += body.copy(out, at, starts[i], starts[i + 1]! - 1);
  }
  out[at] = 0x7d; // }
  return out;
}

/** A result's answer in one buffer: `renderAnswer`'s pieces concatenated. */
export function renderResult(result: ValidationResult): Buffer {
  return Buffer.concat(renderAnswer(result));
}

/**
 * The answer `{"all_endpoints":[…],"validations":{…}}` for a document, parsed and validated
 * now (no cache), as UTF-8 bytes, with its readiness summary (what the validation cache
 * keeps). Throws invalid_swagger_file, also when the answer would pass its bound (`maxAnswerChars`).
 */
export function renderValidation(src: DocumentSource, opts?: ParseOptions): RenderedAnswer<Buffer> {
  try {
    const result = validateSource(src, opts);
    return { answer: renderResult(result), readiness: uploadReadiness(result.validations.readiness) };
  } catch (err) {
    // A RangeError here is a text too large for one string or buffer (a bound above V8's limits).
    throw err instanceof RangeError ? tooLargeToValidate() : err;
  }
}

/** `renderValidation`'s answer alone. */
export function renderFresh(src: DocumentSource, opts?: ParseOptions): Buffer {
  return renderValidation(src, opts).answer;
}
