/**
 * The work that runs on the task threads (task-threads.ts): synchronous CPU work on
 * input a client chose, which on the event loop would hold every other request for as
 * long as it runs. Each task takes and returns only values that cross a thread
 * boundary (structured clone: a Buffer arrives as a Uint8Array).
 */
import { AppError, type ErrorCode } from '../errors.js';
import { ExtractError, extractText } from '../domain/knowledgebase/extract.js';
import { packPassages, passagesDigest, splitPassages, type PackedPassages } from '../domain/knowledgebase/passages.js';
import { redactText } from '../domain/knowledgebase/redact.js';
import { passageTerms } from '../text/search-terms.js';
import { readPageLinks, readSitemap, type CrawledPage, type SitemapRead } from '../domain/knowledgebase/crawl-page.js';
import type { CrawlScope } from '../domain/knowledgebase/crawl-scope.js';
import {
  type IndexTotals,
  type MergedSegment,
  type MergeInput,
  mergeSegments,
  type ScoredPassage,
  scorePassages,
} from '../domain/knowledgebase/search-index.js';
import { diffApiDescriptions, type KeptChanges, keptChanges } from '../domain/api-changes/diff.js';
import {
  parseDocument,
  renderFresh,
  renderValidation,
  writeYaml,
  type DocumentFormat,
  type DocumentSource,
  type ParseOptions,
  type RenderedAnswer,
} from '../domain/validator/index.js';
import { fixesOverlay } from '../domain/validator/overlay.js';
import { toolDefinitions } from '../domain/validator/tools.js';
import type { Overlay, ToolDefinition, ToolPlatform } from '../domain/validator/wire-types.js';

/** Bytes that crossed a thread boundary (structured clone makes a Buffer a Uint8Array), as a Buffer over the same memory. */
export const asBuffer = (bytes: Uint8Array): Buffer => (Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));

export const tasks = {
  /** Answers 'pong': the service checks at start that its threads run. */
  ping(): string {
    return 'pong';
  },
  /** An API description's validation as JSON text (throws invalid_swagger_file). */
  validate(src: DocumentSource, opts: ParseOptions): string {
    return renderFresh({ ...src, bytes: asBuffer(src.bytes) }, opts).toString('utf8');
  },
  /**
   * The same as UTF-8 bytes, encoded here rather than on the event loop, in a buffer of
   * their own: the thread moves it to the caller instead of copying it (worker.ts). With its
   * readiness summary, which the validation cache keeps beside it for uploads (issue 17 §3).
   */
  answer(src: DocumentSource, opts: ParseOptions): RenderedAnswer {
    const { answer, readiness } = renderValidation({ ...src, bytes: asBuffer(src.bytes) }, opts);
    return { answer: movableBytes(answer), readiness };
  },
  /**
   * The tool definitions an LLM would be given for an accepted API description, as the UTF-8
   * JSON of their array: written here and moved to the caller, which sends these bytes as they
   * are (a large description's tools are tens of megabytes, too much to clone back and serialise
   * on the event loop).
   */
  tools(src: DocumentSource, platform: ToolPlatform, maxChars: number): Uint8Array {
    const tools: ToolDefinition[] = toolDefinitions(parseDocument({ ...src, bytes: asBuffer(src.bytes) }), platform, { maxChars });
    return movableBytes(Buffer.from(JSON.stringify(tools)));
  },
  /** The computable fixes of an accepted API description, as an OpenAPI Overlay written here in JSON or YAML (UTF-8, moved to the caller). */
  fixes(src: DocumentSource, format: DocumentFormat): Uint8Array {
    const overlay: Overlay = fixesOverlay(parseDocument({ ...src, bytes: asBuffer(src.bytes) }));
    return movableBytes(Buffer.from(format === 'yaml' ? writeYaml(overlay) : JSON.stringify(overlay)));
  },
  /** The changes from one accepted version of an API description to the next, at most MAX_KEPT_CHANGES of them, and their counts. */
  changes(before: DocumentSource, after: DocumentSource): KeptChanges {
    const parse = (src: DocumentSource) => parseDocument({ ...src, bytes: asBuffer(src.bytes) });
    return keptChanges(diffApiDescriptions(parse(before), parse(after)));
  },
  /**
   * A fetched page's passages, packed to move back without a copy, with their digest and whether
   * they are of the page's first part only (throws ExtractError). `redact` (the copilot's enhanced_privacy): the text is redacted before it is
   * split, so neither the passages nor their search terms hold what redaction removes.
   */
  passages(body: Uint8Array, contentType: string | null, options: { redact?: boolean } = {}): PackedPassages {
    const { text, truncated } = extractText(asBuffer(body), contentType);
    const passages = splitPassages(options.redact ? redactText(text) : text);
    return { ...packPassages(passages, passageTerms), sha256: passagesDigest(passages), truncated };
  },
  /** A fetched page of a crawl: its passages (or why none), and its links and canonical URL within the crawl's scope. */
  crawlPage(body: Uint8Array, contentType: string | null, finalUrl: string, scope: CrawlScope, options: { redact?: boolean } = {}): CrawledPage {
    const links = readPageLinks(asBuffer(body), contentType, finalUrl, scope);
    try {
      return { ...links, passages: tasks.passages(body, contentType, options), extractError: null };
    } catch (err) {
      // A page without text to index may still lead to pages that have some.
      if (err instanceof ExtractError) return { ...links, passages: null, extractError: err.message };
      throw err;
    }
  },
  /** A knowledge-base search's best passages from its terms' postings (search-index.ts). */
  scorePassages(blobsByTerm: Uint8Array[][], totals: IndexTotals, limit: number, excluded: Int32Array): ScoredPassage[] {
    return scorePassages(blobsByTerm, totals, limit, excluded);
  },
  /** A merge of segments of a bot's search index (search-index.ts). */
  mergeSegments(inputs: MergeInput[], excluded: Int32Array): MergedSegment {
    return mergeSegments(inputs, excluded);
  },
  /** A fetched sitemap or sitemap index (gzipped or not): its URLs within the crawl's scope (throws ExtractError). */
  sitemap(body: Uint8Array, scope: CrawlScope, maxBytes: number): SitemapRead {
    return readSitemap(asBuffer(body), scope, maxBytes);
  },
};

export type Tasks = typeof tasks;
export type TaskName = keyof Tasks;

/** The buffers of an answer that can move to the caller: a typed array of its own, or such arrays as its properties (one level down too). */
export function movableBuffers(value: unknown): ArrayBuffer[] {
  if (ArrayBuffer.isView(value)) return value instanceof Uint8Array || value instanceof Uint32Array ? ownBuffer(value) : [];
  if (value === null || typeof value !== 'object') return [];
  // Typed arrays as its properties, or as properties of its plain-object properties (packed passages' terms).
  return Object.values(value).flatMap((v) =>
    v instanceof Uint8Array || v instanceof Uint32Array
      ? ownBuffer(v)
      : v !== null && typeof v === 'object' && !ArrayBuffer.isView(v) && !Array.isArray(v)
        ? Object.values(v).flatMap((w) => (w instanceof Uint8Array || w instanceof Uint32Array ? ownBuffer(w) : []))
        : [],
  );
}

function ownBuffer(view: Uint8Array | Uint32Array): ArrayBuffer[] {
  return view.buffer instanceof ArrayBuffer && view.byteOffset === 0 && view.byteLength === view.buffer.byteLength ? [view.buffer] : [];
}

/** Bytes that can move to another thread: these, or, when they share a buffer (Node's pool holds short ones), a copy. */
function movableBytes(bytes: Buffer): Uint8Array {
  return ownsItsBuffer(bytes) ? bytes : new Uint8Array(bytes);
}

/** A view over the whole of its own ArrayBuffer: one that can move to another thread. */
export function ownsItsBuffer(bytes: Uint8Array): boolean {
  return bytes.buffer instanceof ArrayBuffer && bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength;
}

/** An error as it crosses back from a thread: the two the callers handle keep their class. */
export type TaskFailure =
  | { kind: 'app'; code: ErrorCode; message: string; details?: unknown }
  | { kind: 'extract'; message: string }
  | { kind: 'other'; name: string; message: string; stack?: string };

export function encodeFailure(err: unknown): TaskFailure {
  if (err instanceof AppError) return { kind: 'app', code: err.code, message: err.message, details: err.details };
  if (err instanceof ExtractError) return { kind: 'extract', message: err.message };
  if (err instanceof Error) return { kind: 'other', name: err.name, message: err.message, stack: err.stack };
  return { kind: 'other', name: 'Error', message: String(err) };
}

export function decodeFailure(failure: TaskFailure): Error {
  if (failure.kind === 'app') return new AppError(failure.code, failure.message, failure.details);
  if (failure.kind === 'extract') return new ExtractError(failure.message);
  // A bug on the thread: its own name and stack, for the log.
  return Object.assign(new Error(failure.message), { name: failure.name, stack: failure.stack });
}
