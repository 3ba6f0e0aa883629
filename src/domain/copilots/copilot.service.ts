import { randomUUID } from 'node:crypto';
import { AppError } from '../../errors.js';
import * as webhooks from '../../storage/webhook.repository.js';
import * as copilots from '../../storage/copilot.repository.js';
import type { DialectName, Storage } from '../../storage/database.js';
import type { FetchedResource } from '../../net/guarded-fetch.js';
import type { CopilotRow, Db } from '../../storage/schema.js';
import type { DocumentSource } from '../validator/index.js';
import { inTransaction } from '../../storage/transaction.js';
import { nowTimestamp, randomAlphanumeric } from '../ids.js';
import { decodeCursor, pageByCreation } from '../cursor.js';
import { refuseForbiddenCharacters } from '../knowledgebase/links.js';
import * as kb from '../../storage/knowledge-base.repository.js';
import * as crawls from '../../storage/crawl.repository.js';
import * as linkRefresh from '../../storage/link-refresh.repository.js';
import * as apiDescriptionHistory from '../../storage/api-description-history.repository.js';
import * as swaggerDocuments from '../../storage/swagger-document.repository.js';
import type { Principal } from '../auth/api-keys.js';
import { recordAudit, redactAuditUrls } from '../audit.js';
import { COPILOT_STATUSES, type Copilot, type CopilotCreate, type CopilotPatch, type CopilotStatus, type PurgeResult } from '../wire.js';

export { COPILOT_STATUSES, type Copilot, type CopilotCreate, type CopilotPatch, type CopilotStatus, type PurgeResult };

export const DEFAULT_PROMPT_MESSAGE =
  "You are a helpful assistant for this product. Answer the user's questions accurately and concisely.\n" +
  'When an answer needs live data or an action, call the available API operations instead of guessing, ' +
  'and say so plainly when you cannot help.';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** The file name a stored API description gets: 20 alphanumerics and its format. */
export const STORED_DOCUMENT_NAME = /^[A-Za-z0-9]{20}\.(json|yaml)$/;
/** The media type an API description is stored under, by the format it was read as. */
export const DOCUMENT_MEDIA_TYPES = { json: 'application/json', yaml: 'application/yaml' } as const;

/** What a fetch of an API description asks for. */
export const API_DESCRIPTION_ACCEPT = 'application/json, application/yaml;q=0.9, */*;q=0.5';

/** A fetched API description as the validator reads it (its media type, and its URL's path for the extension). */
export function fetchedSource(fetched: FetchedResource): DocumentSource {
  return { bytes: fetched.body, mediaType: fetched.contentType, fileName: new URL(fetched.url).pathname };
}

export function isCopilotId(id: string): boolean {
  return UUID.test(id);
}

// Stored as 0/1 and 'draft'/'live', the only values this service writes.
const storedFlag = (value: unknown): 0 | 1 => (Number(value) === 1 ? 1 : 0);
const storedStatus = (value: string): CopilotStatus => COPILOT_STATUSES.find((s) => s === value) ?? 'draft';

function toCopilot(row: CopilotRow): Copilot {
  return {
    id: row.id,
    name: row.name,
    token: row.token,
    website: row.website,
    status: storedStatus(row.status),
    prompt_message: row.prompt_message,
    enhanced_privacy: storedFlag(row.enhanced_privacy),
    smart_sync: storedFlag(row.smart_sync),
    swagger_url: row.swagger_url,
    is_premade_demo_template: storedFlag(row.is_premade_demo_template),
    created_at: row.created_at,
    updated_at: row.updated_at,
    deleted_at: row.deleted_at,
  };
}

const flag = (value: boolean | number | undefined): number | undefined => (value === undefined ? undefined : value === true || value === 1 ? 1 : 0);

function checkHttpUrl(field: string, value: string | undefined, allowStoredName: boolean): void {
  if (value === undefined || value === '') return;
  if (allowStoredName && STORED_DOCUMENT_NAME.test(value)) return;
  // The same characters as in knowledge-base links: one shared check.
  refuseForbiddenCharacters(field, value);
  let url: URL | null = null;
  try {
    url = new URL(value);
  } catch {
    url = null;
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || !url.hostname) {
    throw new AppError('invalid_request', `The field ${field} must be an absolute http(s) URL.`, { field });
  }
}

function checkInput(input: CopilotPatch): void {
  if (input.name !== undefined && input.name.trim() === '') {
    throw new AppError('invalid_request', 'The field name must not be empty.', { field: 'name' });
  }
  if (input.name !== undefined) refuseForbiddenCharacters('name', input.name);
  checkHttpUrl('website', input.website, false);
  checkHttpUrl('swagger_url', input.swagger_url, true);
}

/** Creates a copilot, audited as `actor`; in the caller's transaction when `db` is one. */
export async function createCopilot(db: Db, input: CopilotCreate, actor?: Principal): Promise<Copilot> {
  checkInput(input);
  const now = nowTimestamp();
  const row: CopilotRow = {
    id: randomUUID(),
    name: input.name.trim(),
    token: randomAlphanumeric(20),
    website: input.website ?? '',
    status: input.status ?? 'draft',
    prompt_message: input.prompt_message ?? DEFAULT_PROMPT_MESSAGE,
    enhanced_privacy: flag(input.enhanced_privacy) ?? 0,
    smart_sync: flag(input.smart_sync) ?? 0,
    swagger_url: input.swagger_url ?? '',
    is_premade_demo_template: flag(input.is_premade_demo_template) ?? 0,
    created_at: now,
    updated_at: now,
    deleted_at: null,
  };
  await inTransaction(db, async (trx) => {
    await copilots.insertCopilot(trx, row);
    await recordAudit(trx, actor, 'copilot.create', row.id, { name: row.name });
  });
  return toCopilot(row);
}

/** The copilot, or 404 for a malformed, unknown or (unless asked) soft-deleted id. */
export async function getCopilot(db: Db, id: string, options: { includeDeleted?: boolean; lock?: boolean } = {}): Promise<Copilot> {
  const read = options.lock ? copilots.lockCopilot : copilots.findCopilot;
  const row = isCopilotId(id) ? await read(db, id.toLowerCase()) : undefined;
  if (!row || (row.deleted_at !== null && !options.includeDeleted)) {
    throw new AppError('copilot_not_found', 'No copilot has this id.', { id });
  }
  return toCopilot(row);
}

export interface ListCopilotsInput {
  limit: number;
  cursor?: string;
  status?: CopilotStatus;
  q?: string;
  includeDeleted?: boolean;
  /** A key limited to some bots sees only those. */
  onlyIds?: readonly string[];
}

export async function listCopilots(db: Db, input: ListCopilotsInput): Promise<{ items: Copilot[]; nextCursor: string | null }> {
  const after = input.cursor === undefined ? undefined : decodeCursor('copilots', input.cursor);
  const rows = await copilots.listCopilots(db, {
    limit: input.limit + 1,
    after: after && { createdAt: after.createdAt, id: after.id },
    status: input.status,
    nameContains: input.q,
    includeDeleted: input.includeDeleted ?? false,
    ids: input.onlyIds,
  });
  const page = pageByCreation(rows, input.limit, 'copilots');
  return { items: page.rows.map(toCopilot), nextCursor: page.nextCursor };
}

export async function updateCopilot(db: Db, id: string, input: CopilotPatch, actor?: Principal): Promise<Copilot> {
  checkInput(input);
  const changes: Partial<CopilotRow> = {
    ...(input.name !== undefined && { name: input.name.trim() }),
    ...(input.website !== undefined && { website: input.website }),
    ...(input.status !== undefined && { status: input.status }),
    ...(input.prompt_message !== undefined && { prompt_message: input.prompt_message }),
    ...(input.enhanced_privacy !== undefined && { enhanced_privacy: flag(input.enhanced_privacy) }),
    ...(input.smart_sync !== undefined && { smart_sync: flag(input.smart_sync) }),
    ...(input.swagger_url !== undefined && { swagger_url: input.swagger_url }),
    ...(input.is_premade_demo_template !== undefined && { is_premade_demo_template: flag(input.is_premade_demo_template) }),
    updated_at: nowTimestamp(),
  };
  const row = await inTransaction(db, async (trx) => {
    // Locked first: a copilot deleted meanwhile is 404, never changed.
    const current = await getCopilot(trx, id, { lock: true });
    const updated = await copilots.updateCopilot(trx, current.id, changes);
    // enhanced_privacy turned on: every stored page is checked now and, not yet redacted, fetched
    // again in full and stored redacted (src/jobs/link-check.ts), rather than at its next check.
    // Its earlier audit entries name its URLs as its new ones will (redactAuditUrls).
    if (updated && current.enhanced_privacy === 0 && changes.enhanced_privacy === 1) {
      await linkRefresh.requestChecks(trx, current.id, changes.updated_at!);
      await redactAuditUrls(trx, current.id);
    }
    if (updated)
      await recordAudit(trx, actor, 'copilot.update', current.id, {
        fields: Object.entries(input)
          .filter(([, value]) => value !== undefined)
          .map(([key]) => key),
      });
    return updated;
  });
  if (!row) throw new AppError('copilot_not_found', 'No copilot has this id.', { id });
  return toCopilot(row);
}

/**
 * Soft deletion: the copilot keeps its row with deleted_at set, and its queued
 * knowledge-base jobs are cancelled in the same transaction (nothing is fetched for it any more).
 */
export async function deleteCopilot(db: Db, id: string, actor?: Principal): Promise<Copilot> {
  const now = nowTimestamp();
  const row = await inTransaction(db, async (trx) => {
    // Locked first: of racing deletions one deletes, and the others find it deleted (404).
    const current = await getCopilot(trx, id, { lock: true });
    const updated = await copilots.updateCopilot(trx, current.id, { deleted_at: now, updated_at: now });
    // Its crawls before its links, in the order a crawl's page takes them (crawl.ts, settle).
    await crawls.cancelCrawlsOfBot(trx, current.id, CANCELLED_BY_DELETION, now);
    const cancelled = await kb.cancelPendingLinks(trx, current.id, CANCELLED_BY_DELETION, now);
    await recordAudit(trx, actor, 'copilot.delete', current.id, { cancelled_links: cancelled });
    return updated;
  });
  if (!row) throw new AppError('copilot_not_found', 'No copilot has this id.', { id });
  return toCopilot(row);
}

export const CANCELLED_BY_DELETION = 'Cancelled: the copilot was deleted.';

/**
 * Removes a soft-deleted copilot for good, with its API description documents and their
 * versions, its knowledge base, links and passages, in one transaction (audited). 404 for an unknown id;
 * 409 while the copilot is not deleted (delete it first).
 */
export async function purgeCopilot(db: Db, dialect: DialectName, id: string, actor?: Principal): Promise<PurgeResult> {
  return inTransaction(db, async (trx) => {
    // Locked first: a racing purge waits here, then finds the row gone (404).
    const current = await getCopilot(trx, id, { includeDeleted: true, lock: true });
    if (current.deleted_at === null) {
      throw new AppError('conflict', 'Only a deleted copilot can be purged; delete it first.', { id: current.id });
    }
    const counts = await kb.purgeKnowledgeBase(trx, dialect, current.id);
    await crawls.deleteCrawlsOfBot(trx, current.id);
    const documents = await swaggerDocuments.deleteSwaggerDocuments(trx, current.id);
    await apiDescriptionHistory.deleteHistory(trx, current.id);
    await webhooks.deleteDeliveriesOf(trx, current.id);
    await copilots.deleteCopilotRow(trx, current.id);
    await recordAudit(trx, actor, 'copilot.purge', current.id, { name: current.name, documents, ...counts });
    return { id: current.id, documents, ...counts };
  });
}

/**
 * Purges every copilot deleted before `before` (a wire timestamp; null: every deleted one,
 * whatever the clock of the instance that deleted it said), one transaction each (so it takes
 * the database and its dialect, never a transaction), a batch of ids at a time until none is
 * left; returns their ids.
 */
export async function purgeDeletedBefore(storage: Pick<Storage, 'db' | 'dialect'>, before: string | null): Promise<string[]> {
  const purged: string[] = [];
  for (;;) {
    const ids = await copilots.findDeletedBefore(storage.db, before, PURGE_BATCH);
    for (const id of ids) {
      try {
        await purgeCopilot(storage.db, storage.dialect, id);
        purged.push(id);
      } catch (err) {
        // Purged meanwhile by another instance: nothing left to do.
        if (!(err instanceof AppError && err.code === 'copilot_not_found')) throw err;
      }
    }
    if (ids.length < PURGE_BATCH) return purged;
  }
}

const PURGE_BATCH = 1000;
