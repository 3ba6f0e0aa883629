/** The validator's public types (interface §2.3, §2.4; DESIGN §5). */

/** The bytes of an API description and what is known about them. */
export interface DocumentSource {
  bytes: Buffer;
  /** Content-Type of the upload or the HTTP response, parameters allowed. */
  mediaType?: string | null;
  /** File name or URL path; only its extension is used. */
  fileName?: string | null;
}

export type DocumentFormat = 'json' | 'yaml';

/** Limits for parsing untrusted documents. */
export interface ParseOptions {
  /** Reject documents longer than this many bytes (413). Callers normally enforce it first. */
  maxBytes?: number;
  /** Deepest nesting of objects and arrays accepted (default 256). */
  maxDepth?: number;
  /**
   * YAML only: the most values the document may expand to once its aliases are followed
   * (default 1,000,000 plus twice the byte length). Stops alias bombs.
   */
  maxExpandedNodes?: number;
  /**
   * JSON only: refuse a document nested deeper than `maxDepth` in one pass over its bytes
   * before `JSON.parse` runs (default true), so a nesting bomb costs the parser nothing.
   * The walk after parsing enforces the limit either way; a caller parsing its own user's
   * file (the CLI) can skip the pass.
   */
  scanNestingFirst?: boolean;
}

export type { Endpoint, FlagMap, Readiness, RuleFinding, ValidationResult, Validations } from './wire-types.js';

/** A root-checked document: an OpenAPI 3.x or Swagger 2.0 object. */
export type ApiDocument = Record<string, unknown>;
