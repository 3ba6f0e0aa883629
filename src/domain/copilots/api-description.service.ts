import { AppError } from '../../errors.js';
import type { Principal } from '../auth/api-keys.js';
import { recordAudit } from '../audit.js';
import { FetchError, fetchGuarded, type FetchPolicy } from '../../net/guarded-fetch.js';
import * as copilotRepo from '../../storage/copilot.repository.js';
import type { CopilotRow, Db } from '../../storage/schema.js';
import { inTransaction } from '../../storage/transaction.js';
import * as documents from '../../storage/swagger-document.repository.js';
import { nowTimestamp, randomAlphanumeric } from '../ids.js';
import {
  detectFormat,
  sha256Hex,
  type DocumentFormat,
  type DocumentSource,
  type ParseOptions,
  type RenderedAnswer,
  type ValidationCache,
} from '../validator/index.js';
import type { UploadReadiness } from '../validator/upload-readiness.js';
import type { ToolPlatform } from '../validator/wire-types.js';
import { recordVersion, type HistoryDeps, type NewVersion } from './api-description-history.service.js';
import {
  API_DESCRIPTION_ACCEPT,
  createCopilot,
  DOCUMENT_MEDIA_TYPES,
  fetchedSource,
  getCopilot,
  STORED_DOCUMENT_NAME,
  type Copilot,
  type CopilotCreate,
} from './copilot.service.js';
import { sanitizeOriginalFileName } from './original-file-name.js';
import { asLogged } from '../knowledgebase/links.js';

/**
 * A copilot's API description: checked and stored on upload (in the database, so
 * every instance sees it), fetched under the guarded-fetch rules when it is a URL,
 * and validated with a cache keyed by the document's content.
 */

/**
 * What renders a validation answer (its UTF-8 bytes) away from the event loop, where a
 * hostile document delays only its own answer: the task threads. `tenant`: the copilot the
 * work is for; copilots take fair turns (a flood of one copilot's documents delays each task
 * of another's by one task at most).
 */
export interface ValidationRenderer {
  /** The answer and its readiness summary (what an upload stores, issue 17 §3). The document's bytes are copied; the caller keeps them. */
  answerOnThread(tenant: string, src: DocumentSource, opts: ParseOptions): Promise<RenderedAnswer>;
  /** The same; the document's bytes move away when they are the whole of their buffer (read for this validation only). */
  answerOnThreadMovingBytes(tenant: string, src: DocumentSource, opts: ParseOptions): Promise<RenderedAnswer>;
  /** The tool definitions of an accepted document (GET …/tools): the UTF-8 JSON of their array. */
  toolsOnThread(tenant: string, src: DocumentSource, platform: ToolPlatform, maxChars: number): Promise<Buffer>;
  /** The fixes of an accepted document as an OpenAPI Overlay (GET …/fixes), written in JSON or YAML (UTF-8). */
  fixesOnThread(tenant: string, src: DocumentSource, format: DocumentFormat): Promise<Buffer>;
}

/** The process's validation cache, what renders the answers it lacks, and what keeps the versions. */
export interface ValidationDeps {
  cache: ValidationCache;
  renderer: ValidationRenderer;
  history: HistoryDeps;
}

export interface UploadedDocument {
  bytes: Buffer;
  mediaType?: string | null;
  fileName?: string | null;
}

interface CheckedDocument {
  fileName: string;
  mediaType: string;
  sha256: string;
  bytes: Buffer;
  /** The name it was uploaded under, sanitised; null when none was sent (a raw body). */
  originalName: string | null;
  /** Its readiness at upload: what the copilot list shows without validating (migration 013). */
  readiness: UploadReadiness | null;
}

async function checkDocument(validation: ValidationDeps, tenant: string, upload: UploadedDocument, maxBytes: number): Promise<CheckedDocument> {
  if (upload.bytes.length === 0) throw new AppError('invalid_swagger_file', 'The API description is empty.');
  if (upload.bytes.length > maxBytes) {
    throw new AppError('payload_too_large', `The API description is larger than ${maxBytes} bytes.`, { max_bytes: maxBytes });
  }
  const source: DocumentSource = { bytes: upload.bytes, mediaType: upload.mediaType, fileName: upload.fileName };
  const sha256 = await sha256Hex(upload.bytes);
  // Validating (not only parsing) here fills the content-keyed cache: the document is
  // parsed once, and its first validation is already an answer from the cache. Throws
  // invalid_swagger_file with the parser's position. On a task thread: a hostile document
  // delays only its own answer.
  const { readiness } = await validation.cache.answer(source, { sha256 }, (src, opts) => validation.renderer.answerOnThread(tenant, src, opts));
  const format = detectFormat(source);
  return {
    fileName: `${randomAlphanumeric(20)}.${format}`,
    mediaType: DOCUMENT_MEDIA_TYPES[format],
    sha256,
    bytes: upload.bytes,
    originalName: sanitizeOriginalFileName(upload.fileName),
    // Kept with the answer in the validation cache: read from the result the answer was rendered from.
    readiness,
  };
}

/** Stores the document as the copilot's API description, replacing the previous one. */
async function storeDocument(trx: Db, copilotId: string, doc: CheckedDocument): Promise<CopilotRow> {
  const now = nowTimestamp();
  // The copilot row first: its row lock queues concurrent uploads for the same copilot
  // (PostgreSQL), so the delete below sees every earlier upload's committed document and
  // no replaced document is left behind.
  const row = await copilotRepo.updateCopilot(trx, copilotId, { swagger_url: doc.fileName, updated_at: now });
  await documents.insertSwaggerDocument(trx, {
    file_name: doc.fileName,
    copilot_id: copilotId,
    media_type: doc.mediaType,
    sha256: doc.sha256,
    size: doc.bytes.length,
    content: doc.bytes,
    created_at: now,
    original_name: doc.originalName,
    readiness_score: doc.readiness?.score ?? null,
    ready_platforms: doc.readiness ? JSON.stringify(doc.readiness.readyPlatforms) : null,
  });
  await documents.deleteOtherSwaggerDocuments(trx, copilotId, doc.fileName);
  return row!;
}

/** PUT …/swagger: replaces the copilot's API description (audited as `actor`); returns the updated copilot. */
export async function uploadApiDescription(
  db: Db,
  validation: ValidationDeps,
  copilotId: string,
  upload: UploadedDocument,
  maxBytes: number,
  actor?: Principal,
): Promise<Copilot> {
  // 404 before the document is checked: an unknown copilot costs no parsing.
  const copilot = await getCopilot(db, copilotId);
  const doc = await checkDocument(validation, copilot.id, upload, maxBytes);
  const { result } = await recordVersion(db, validation.history, copilot.id, uploadedVersion(doc), async (trx) => {
    // Locked first: a copilot deleted while its document was checked is 404, and nothing is stored.
    await getCopilot(trx, copilot.id, { lock: true });
    await storeDocument(trx, copilot.id, doc);
    await auditUpload(trx, actor, copilot.id, doc);
    return getCopilot(trx, copilot.id);
  });
  return result;
}

const uploadedVersion = (doc: CheckedDocument): NewVersion => ({ bytes: doc.bytes, mediaType: doc.mediaType, sha256: doc.sha256, source: 'upload', url: null });

/** POST /backend/api/copilot/swagger: a new copilot with its API description, in one transaction. */
export async function createCopilotWithApiDescription(
  db: Db,
  validation: ValidationDeps,
  input: CopilotCreate,
  upload: UploadedDocument,
  maxBytes: number,
  actor?: Principal,
): Promise<Copilot> {
  // Not a copilot's yet: the key creating it takes the turn.
  const doc = await checkDocument(validation, actor?.kind === 'key' ? `key:${actor.keyId}` : 'anonymous', upload, maxBytes);
  return inTransaction(db, async (trx) => {
    const created = await createCopilot(trx, input, actor);
    await storeDocument(trx, created.id, doc);
    await auditUpload(trx, actor, created.id, doc);
    await recordVersion(trx, validation.history, created.id, uploadedVersion(doc));
    return getCopilot(trx, created.id);
  });
}

function auditUpload(trx: Db, actor: Principal | undefined, copilotId: string, doc: CheckedDocument): Promise<void> {
  return recordAudit(trx, actor, 'api_description.upload', copilotId, {
    file_name: doc.fileName,
    ...(doc.originalName !== null && { original_name: doc.originalName }),
    sha256: doc.sha256,
    size: doc.bytes.length,
  });
}

/** GET …/swagger: the stored bytes (through the validation cache: read once for many), their media type and name. */
export async function getStoredApiDescription(
  db: Db,
  cache: ValidationCache,
  copilotId: string,
): Promise<{ bytes: Buffer; mediaType: string; fileName: string }> {
  const copilot = await getCopilot(db, copilotId);
  const meta = await storedDocumentMeta(db, copilot);
  if (meta === null) throw swaggerMissing(copilot);
  const bytes = await cache.document(meta.sha256, async () => {
    const row = await documents.findSwaggerDocument(db, meta.file_name);
    // Deleted (or replaced) since its name was read: as if it had never been there.
    if (!row || row.sha256 !== meta.sha256) throw swaggerMissing(copilot);
    return row.content;
  });
  return { bytes, mediaType: meta.media_type, fileName: meta.file_name };
}

function swaggerMissing(copilot: Copilot): AppError {
  return copilot.swagger_url === ''
    ? new AppError('swagger_missing', 'This copilot has no API description yet; upload one or set swagger_url.')
    : new AppError('swagger_missing', 'This copilot has no stored API description; its swagger_url points elsewhere.', { swagger_url: copilot.swagger_url });
}

/**
 * The refusal or the 502 a failed fetch is answered with. `shownUrl` gives the URL as `details`
 * name it: the error handler logs the details of a 502, so an enhanced_privacy copilot's URL
 * goes without its query string (loggedUrl), in the log and in the answer alike.
 */
export function fetchErrorToAppError(err: FetchError, what: string, shownUrl: (url: string) => string = (url) => url): AppError {
  if (err.kind === 'refused' || err.kind === 'bad_url') return new AppError('address_not_allowed', err.message, { url: shownUrl(err.url) });
  return new AppError('swagger_fetch_failed', `The ${what} could not be fetched: ${err.message}`, {
    url: shownUrl(err.url),
    reason: err.kind,
    ...(err.status !== undefined && { status: err.status }),
  });
}

/**
 * The validator's answer for a copilot, in two parts sent one after the other and never
 * joined (joining would copy the whole answer for each request).
 */
export interface CopilotValidation {
  /** `{"chatbot_id":"<id>",` */
  head: Buffer;
  /** The validation cache's own bytes of `{"all_endpoints":…}` after their `{`: a view, not a copy. */
  body: Buffer;
}

/**
 * GET …/validator: the interface's answer `{chatbot_id, all_endpoints, validations}`. A
 * stored document whose content was validated before is answered from the cache without
 * reading or parsing it again.
 */
export async function validateCopilot(db: Db, validation: ValidationDeps, copilotId: string, policy: FetchPolicy): Promise<CopilotValidation> {
  const copilot = await getCopilot(db, copilotId);
  const answer = (cached: Buffer): CopilotValidation => ({
    head: Buffer.from(`{"chatbot_id":${JSON.stringify(copilot.id)},`, 'utf8'),
    body: cached.subarray(1),
  });
  if (copilot.swagger_url === '') throw swaggerMissing(copilot);
  const stored = await storedDocumentMeta(db, copilot);
  const cached = stored === null ? undefined : validation.cache.cached(stored.sha256);
  if (cached !== undefined) return answer(cached);
  const { source, options } = await readDocument(db, copilot, policy);
  return answer((await validation.cache.answer(source, options, movingBytes(validation, copilot.id))).answer);
}

/** What is known of the copilot's stored document without its bytes, or null when its swagger_url is one to fetch; 422 when the document is not its own (or gone). */
async function storedDocumentMeta(db: Db, copilot: Copilot): Promise<StoredDocumentMeta | null> {
  if (!STORED_DOCUMENT_NAME.test(copilot.swagger_url)) return null;
  const meta = await documents.findSwaggerDocumentMeta(db, copilot.swagger_url);
  // Only the copilot's own document: a file name copied from another copilot reads nothing.
  if (!meta || meta.copilot_id !== copilot.id) throw swaggerMissing(copilot);
  return meta;
}

type StoredDocumentMeta = NonNullable<Awaited<ReturnType<typeof documents.findSwaggerDocumentMeta>>>;

/**
 * The copilot's API description as bytes: its stored document (its own only), or its
 * swagger_url fetched under the guarded-fetch rules (a failure is 400 or 502), with the
 * options its validation takes. A stored one's SHA-256 is known, and its bytes passed the
 * nesting scan when they were uploaded (checkDocument): parsing them again skips that pass
 * (the walk after parsing still holds the depth limit). Fetched bytes are scanned.
 */
async function readDocument(db: Db, copilot: Copilot, policy: FetchPolicy): Promise<{ source: DocumentSource; options: { sha256?: string } & ParseOptions }> {
  if (STORED_DOCUMENT_NAME.test(copilot.swagger_url)) {
    const row = await documents.findSwaggerDocument(db, copilot.swagger_url);
    if (!row || row.copilot_id !== copilot.id) throw swaggerMissing(copilot);
    return {
      // The row's own bytes, read for this call: moved to the task thread for a validation, not copied here first.
      source: { bytes: row.content, mediaType: row.media_type, fileName: row.file_name },
      options: { sha256: row.sha256, scanNestingFirst: false },
    };
  }
  try {
    return { source: fetchedSource(await fetchGuarded(copilot.swagger_url, policy, { accept: API_DESCRIPTION_ACCEPT })), options: {} };
  } catch (err) {
    if (err instanceof FetchError) throw fetchErrorToAppError(err, 'API description', asLogged(copilot.enhanced_privacy === 1));
    throw err;
  }
}

/** Renders with the document's bytes moved to the renderer: for bytes read for this validation only. */
const movingBytes =
  ({ renderer }: ValidationDeps, tenant: string) =>
  (src: DocumentSource, opts: ParseOptions) =>
    renderer.answerOnThreadMovingBytes(tenant, src, opts);

/**
 * A view of the copilot's API description (its tool definitions for a platform, its fixes in
 * a format; `name` says which): from the validation cache when it was made from these bytes
 * before (a stored document is then not even read), else the document read (stored, or fetched
 * under the guarded-fetch rules), refused as GET …/validator refuses it (404, 422, 400 with the
 * parser's position, 502) through the cache, and `render`ed for the copilot, then kept.
 */
export async function copilotDocumentView(
  db: Db,
  validation: ValidationDeps,
  copilotId: string,
  policy: FetchPolicy,
  name: string,
  render: (tenant: string, src: DocumentSource) => Promise<Uint8Array>,
): Promise<{ copilotId: string; bytes: Buffer }> {
  const copilot = await getCopilot(db, copilotId);
  if (copilot.swagger_url === '') throw swaggerMissing(copilot);
  const stored = await storedDocumentMeta(db, copilot);
  const cached = stored === null ? undefined : validation.cache.cachedView(stored.sha256, name);
  if (cached !== undefined) return { copilotId: copilot.id, bytes: cached };
  const { source, options } = await readDocument(db, copilot, policy);
  const sha256 = options.sha256 ?? (await sha256Hex(source.bytes));
  // Copied to the thread, not moved: the view's render reads these bytes next.
  await validation.cache.answer(source, { ...options, sha256 }, (src, opts) => validation.renderer.answerOnThread(copilot.id, src, opts));
  return { copilotId: copilot.id, bytes: await validation.cache.view(source, { sha256 }, name, (src) => render(copilot.id, src)) };
}
