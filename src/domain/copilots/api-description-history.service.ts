import { createHash } from 'node:crypto';
import { AppError } from '../../errors.js';
import { FetchError, fetchGuarded, type FetchPolicy, type FetchedResource } from '../../net/guarded-fetch.js';
import * as history from '../../storage/api-description-history.repository.js';
import type { ApiDescriptionChangeRow, Db } from '../../storage/schema.js';
import { inTransaction } from '../../storage/transaction.js';
import type { ApiChange, KeptChanges } from '../api-changes/diff.js';
import { recordAudit } from '../audit.js';
import type { Principal } from '../auth/api-keys.js';
import { decodePosition, encodePosition, pageOf } from '../cursor.js';
import { nowTimestamp, timestampIn } from '../ids.js';
import { asLogged } from '../knowledgebase/links.js';
import { detectFormat, type DocumentSource, type ValidationCache } from '../validator/index.js';
import type { ApiDescriptionChange, ApiDescriptionSync, ApiDescriptionVersion } from '../wire.js';
import { API_DESCRIPTION_ACCEPT, DOCUMENT_MEDIA_TYPES, fetchedSource, getCopilot } from './copilot.service.js';

/**
 * A copilot's API description over time (issue 16 §1): every accepted document whose content
 * differs from the one before becomes a version, with the changes from that one; with
 * `smart_sync = 1` and an http(s) `swagger_url`, the sync job fetches the URL on a schedule
 * (a conditional GET) and records a new version when the content changed.
 */

/** What computes the changes between two accepted documents, away from the event loop (the task threads). */
export interface ChangeDiffer {
  changesOnThread(tenant: string, before: DocumentSource, after: DocumentSource): Promise<KeptChanges>;
}

export interface HistoryDeps {
  differ: ChangeDiffer;
  /** Versions kept per copilot (API_DESCRIPTION_VERSIONS_KEPT); older ones are deleted with their changes. */
  versionsKept: number;
  /** Told of each version recorded (after its commit): the service logs breaking changes and counts them. */
  onVersion?(copilotId: string, recorded: RecordedVersion, source: NewVersion['source'], changes: readonly ApiChange[]): void;
  /**
   * Writes what a version sets off (the breaking-change webhook's delivery) in the version's own
   * transaction: kept together, or neither (a failure or a crash after the commit loses nothing).
   */
  inVersion?(trx: Db, copilotId: string, recorded: RecordedVersion, source: NewVersion['source'], changes: readonly ApiChange[]): Promise<void>;
}

export interface NewVersion {
  bytes: Buffer;
  mediaType: string;
  sha256: string;
  source: 'upload' | 'sync';
  url: string | null;
}

export interface RecordedVersion {
  version: number;
  breaking: number;
  other: number;
}

/** The version written was not the next one (another was recorded meanwhile): the diff is redone. */
class StaleBase extends Error {}

/**
 * Records `doc` as the copilot's next version, with the changes from the latest one, inside
 * `within` (the caller's writes for the same document, in the same transaction). Null when the
 * latest version has the same content. The diff runs outside the transaction, on a task
 * thread; if another version was recorded meanwhile it is done again against that one.
 * `whenRecorded` runs in the same transaction once a version was written (not when the content
 * was the same): what only a new version calls for, such as its audit entry.
 */
export async function recordVersion<T>(
  db: Db,
  deps: HistoryDeps,
  copilotId: string,
  doc: NewVersion,
  within: (trx: Db) => Promise<T> = async () => undefined as T,
  whenRecorded?: (trx: Db, recorded: RecordedVersion) => Promise<void>,
): Promise<{ recorded: RecordedVersion | null; result: T }> {
  const { recorded, result, changes } = await recordInTransaction(db, deps, copilotId, doc, within, whenRecorded);
  // Inside a caller's transaction the version is not committed yet: the caller reports it.
  if (recorded && !db.isTransaction) deps.onVersion?.(copilotId, recorded, doc.source, changes);
  return { recorded, result };
}

async function recordInTransaction<T>(
  db: Db,
  deps: HistoryDeps,
  copilotId: string,
  doc: NewVersion,
  within: (trx: Db) => Promise<T>,
  whenRecorded?: (trx: Db, recorded: RecordedVersion) => Promise<void>,
): Promise<{ recorded: RecordedVersion | null; result: T; changes: ApiChange[] }> {
  for (let attempt = 1; ; attempt++) {
    const base = await history.latestVersion(db, copilotId);
    const same = base?.sha256 === doc.sha256;
    const { changes, ...counts }: KeptChanges =
      base && !same
        ? await deps.differ.changesOnThread(
            copilotId,
            { bytes: Buffer.from(base.content), mediaType: base.media_type },
            { bytes: doc.bytes, mediaType: doc.mediaType },
          )
        : { changes: [], breaking: 0, other: 0 };
    try {
      return await inTransaction(db, async (trx) => {
        const result = await within(trx);
        const latest = await history.latestVersionNumber(trx, copilotId);
        if (latest !== (base?.version ?? 0)) throw new StaleBase();
        if (same) return { recorded: null, result, changes };
        const version = latest + 1;
        const inserted = await history.insertVersion(
          trx,
          {
            copilot_id: copilotId,
            version,
            sha256: doc.sha256,
            size: doc.bytes.length,
            media_type: doc.mediaType,
            content: doc.bytes,
            source: doc.source,
            url: doc.url,
            breaking_changes: counts.breaking,
            other_changes: counts.other,
            created_at: nowTimestamp(),
          },
          changes.map((change, seq) => changeRow(copilotId, version, seq, change)),
        );
        if (!inserted) throw new StaleBase();
        await history.pruneVersions(trx, copilotId, deps.versionsKept);
        const recorded = { version, ...counts };
        await deps.inVersion?.(trx, copilotId, recorded, doc.source, changes);
        await whenRecorded?.(trx, recorded);
        return { recorded, result, changes };
      });
    } catch (err) {
      // Each round one of the racing writers wins, so a writer waits at most as many rounds as writers race.
      if (err instanceof StaleBase && attempt < 50) continue;
      throw err;
    }
  }
}

function changeRow(copilotId: string, version: number, seq: number, change: ApiChange): ApiDescriptionChangeRow {
  return {
    copilot_id: copilotId,
    version,
    seq,
    kind: change.kind,
    breaking: change.breaking ? 1 : 0,
    method: change.method,
    path: change.path,
    message: change.message,
    before_value: change.before === null || change.before === undefined ? null : JSON.stringify(change.before),
    after_value: change.after === null || change.after === undefined ? null : JSON.stringify(change.after),
  };
}

function versionOf(row: history.VersionMeta): ApiDescriptionVersion {
  return {
    version: Number(row.version),
    sha256: row.sha256,
    size: Number(row.size),
    media_type: row.media_type,
    source: row.source as ApiDescriptionVersion['source'],
    url: row.url,
    created_at: row.created_at,
    changes: { breaking: Number(row.breaking_changes), other: Number(row.other_changes) },
  };
}

/**
 * The copilot's id as stored, from the id a caller gave: getCopilot folds it (an upper-case UUID
 * names the same copilot, as on every route) and answers 404 for no copilot. Every function here
 * that takes a caller's id reads and writes under this one, never under the spelling given.
 */
async function storedId(db: Db, copilotId: string): Promise<string> {
  return (await getCopilot(db, copilotId)).id;
}

/** GET …/swagger/versions: newest first, a page at a time. */
export async function listVersions(db: Db, givenId: string, page: { limit: number; cursor?: string }) {
  const copilotId = await storedId(db, givenId);
  const before = page.cursor === undefined ? undefined : decodePosition(page.cursor, 1)[0];
  const { rows, nextCursor } = pageOf(await history.listVersions(db, copilotId, { limit: page.limit + 1, before }), page.limit, (last) =>
    encodePosition([Number(last.version)]),
  );
  return { items: rows.map(versionOf), nextCursor };
}

/** GET …/swagger/versions/:version: the document as it was accepted (through the validation cache: read once for many). */
export async function getVersionDocument(db: Db, cache: ValidationCache, givenId: string, version: number): Promise<{ bytes: Buffer; mediaType: string }> {
  const copilotId = await storedId(db, givenId);
  const notFound = () =>
    new AppError('version_not_found', `This copilot has no version ${version} of its API description (older versions may have been pruned).`, { version });
  const meta = await history.findVersionMeta(db, copilotId, version);
  if (!meta) throw notFound();
  const bytes = await cache.document(meta.sha256, async () => {
    const row = await history.findVersion(db, copilotId, version);
    // Pruned since its SHA-256 was read.
    if (!row || row.sha256 !== meta.sha256) throw notFound();
    return row.content;
  });
  return { bytes, mediaType: meta.media_type };
}

/** GET …/swagger/changes: newest version first, each version's changes in order. */
export async function listChanges(db: Db, givenId: string, page: { limit: number; cursor?: string }) {
  const copilotId = await storedId(db, givenId);
  const after = page.cursor === undefined ? undefined : decodePosition(page.cursor, 2);
  const { rows, nextCursor } = pageOf(
    await history.listChanges(db, copilotId, { limit: page.limit + 1, after: after && { version: after[0]!, seq: after[1]! } }),
    page.limit,
    (last) => encodePosition([Number(last.version), Number(last.seq)]),
  );
  const items: ApiDescriptionChange[] = rows.map((row) => ({
    version: Number(row.version),
    kind: row.kind,
    breaking: Number(row.breaking) === 1,
    method: row.method,
    path: row.path,
    message: row.message,
    before: row.before_value === null ? null : JSON.parse(row.before_value),
    after: row.after_value === null ? null : JSON.parse(row.after_value),
  }));
  return { items, nextCursor };
}

// ---- sync ----

const isHttpUrl = (url: string) => /^https?:\/\//i.test(url);

export interface SyncDeps extends HistoryDeps {
  policy: FetchPolicy;
  /** Checks a copilot's fetched document (throws invalid_swagger_file), e.g. by validating it into the cache. */
  check(copilotId: string, src: DocumentSource, sha256: string): Promise<void>;
  /** SYNC_INTERVAL_MS: the time between two syncs of a copilot, ±10% so that copilots spread out. */
  intervalMs: number;
  /** Names this instance in the leases. */
  owner: string;
}

export type SyncOutcome =
  | { status: 'busy'; lease_expires_at: string | null }
  | { status: 'unchanged' | 'changed' | 'failed'; version: RecordedVersion | null; error: string | null; next_sync_at: string };

/** GET …/swagger/sync: the copilot's sync setting, state and latest version. */
export async function getSyncState(db: Db, givenId: string): Promise<ApiDescriptionSync> {
  const copilot = await getCopilot(db, givenId);
  const copilotId = copilot.id;
  const [state, latest] = await Promise.all([history.findSyncState(db, copilotId), history.listVersions(db, copilotId, { limit: 1 })]);
  return {
    smart_sync: copilot.smart_sync,
    url: isHttpUrl(copilot.swagger_url) ? copilot.swagger_url : null,
    last_synced_at: state?.last_synced_at ?? null,
    last_outcome: (state?.last_outcome ?? null) as ApiDescriptionSync['last_outcome'],
    last_error: state?.last_error ?? null,
    next_sync_at: copilot.smart_sync === 1 && isHttpUrl(copilot.swagger_url) ? (state?.next_sync_at ?? null) : null,
    latest_version: latest[0] ? versionOf(latest[0]) : null,
  };
}

/**
 * Fetches the copilot's swagger_url (conditionally, with the validators of the last fetch)
 * and records a new version when its content changed. `force`: asked for now (POST …/sync),
 * due or not and whatever smart_sync says; otherwise only a due copilot with smart_sync = 1.
 * 'busy' when another instance or request is syncing it. A new version is audited in its own
 * transaction (DESIGN §7: every stored document is explained, as an upload is): by `actor`, the
 * key that asked, or with no actor when the schedule synced it.
 */
export async function syncApiDescription(db: Db, deps: SyncDeps, givenId: string, options: { force: boolean; actor?: Principal }): Promise<SyncOutcome> {
  const copilot = await getCopilot(db, givenId);
  const copilotId = copilot.id;
  if (!isHttpUrl(copilot.swagger_url)) {
    throw new AppError('swagger_missing', 'This copilot’s swagger_url is not an http(s) URL: there is nothing to sync.', { swagger_url: copilot.swagger_url });
  }
  const leaseMs = 2 * deps.policy.timeoutMs + 60_000;
  // Claimed under the copilot's lock: a copilot deleted meanwhile gets no sync state (404).
  const claimed = await inTransaction(db, async (trx) => {
    await getCopilot(trx, copilot.id, { lock: true });
    return history.claimSync(trx, copilotId, deps.owner, nowTimestamp(), timestampIn(leaseMs), options.force);
  });
  // Held until its lease ends: by an instance that stopped too (it is then free at that time).
  if (!claimed) return { status: 'busy', lease_expires_at: (await history.findSyncState(db, copilotId))?.lease_expires_at ?? null };
  const url = copilot.swagger_url;
  const state = await history.findSyncState(db, copilotId);
  const latest = (await history.listVersions(db, copilotId, { limit: 1 }))[0];
  // The last fetch's validators count only while the latest version came from this URL.
  const conditional = latest?.source === 'sync' && latest.url === url ? { etag: state?.etag ?? null, lastModified: state?.last_modified ?? null } : undefined;
  const next = timestampIn(deps.intervalMs * (0.9 + Math.random() * 0.2));
  const finish = async (
    outcome: { status: 'unchanged' | 'changed' | 'failed'; version: RecordedVersion | null; error: string | null },
    fetched?: FetchedResource,
  ) => {
    await history.finishSync(db, copilotId, deps.owner, {
      next_sync_at: next,
      last_synced_at: nowTimestamp(),
      last_outcome: outcome.status,
      last_error: outcome.error,
      ...(fetched && { etag: fetched.etag, last_modified: fetched.lastModified }),
    });
    return { ...outcome, next_sync_at: next };
  };
  try {
    let fetched: FetchedResource;
    try {
      fetched = await fetchGuarded(url, deps.policy, { accept: API_DESCRIPTION_ACCEPT, conditional });
    } catch (err) {
      if (err instanceof FetchError) return await finish({ status: 'failed', version: null, error: err.message });
      throw err;
    }
    if (fetched.status === 304) return await finish({ status: 'unchanged', version: null, error: null }, fetched);
    const sha256 = createHash('sha256').update(fetched.body).digest('hex');
    if (latest?.sha256 === sha256) return await finish({ status: 'unchanged', version: null, error: null }, fetched);
    const source = fetchedSource(fetched);
    const mediaType = DOCUMENT_MEDIA_TYPES[detectFormat(source)];
    try {
      await deps.check(copilotId, source, sha256);
    } catch (err) {
      if (err instanceof AppError) return await finish({ status: 'failed', version: null, error: err.message }, fetched);
      throw err;
    }
    // Recorded only if the copilot still points at this URL (under its lock): an upload or a new
    // swagger_url while the document was fetched is newer than it; a deletion is 404.
    let recorded: RecordedVersion | null;
    try {
      const doc: NewVersion = { bytes: fetched.body, mediaType, sha256, source: 'sync', url };
      let privacy = copilot.enhanced_privacy === 1;
      ({ recorded } = await recordVersion(
        db,
        deps,
        copilotId,
        doc,
        async (trx) => {
          const locked = await getCopilot(trx, copilotId, { lock: true });
          if (locked.swagger_url !== url) throw new SyncOvertaken();
          privacy = locked.enhanced_privacy === 1;
        },
        (trx, version) => auditSync(trx, options.actor, copilotId, doc, version, privacy),
      ));
    } catch (err) {
      if (err instanceof SyncOvertaken) return await finish({ status: 'failed', version: null, error: OVERTAKEN }, fetched);
      throw err;
    }
    return await finish({ status: recorded ? 'changed' : 'unchanged', version: recorded, error: null }, fetched);
  } catch (err) {
    // The lease goes back at once rather than when it runs out.
    await finish({ status: 'failed', version: null, error: 'The sync failed inside the service.' }).catch(() => undefined);
    throw err;
  }
}

/**
 * The audit entry of a version a sync stored: what an upload's entry says of its file (SHA-256,
 * size), with the URL it came from (enhanced_privacy: without its query string, as the
 * knowledge base's links are audited) and the changes. `trigger` tells a key's request from the
 * schedule, since an entry with no actor is otherwise the operator's command line.
 */
function auditSync(trx: Db, actor: Principal | undefined, copilotId: string, doc: NewVersion, version: RecordedVersion, privacy: boolean): Promise<void> {
  return recordAudit(trx, actor, 'api_description.sync', copilotId, {
    trigger: actor ? 'request' : 'schedule',
    url: doc.url === null ? null : asLogged(privacy)(doc.url),
    version: version.version,
    sha256: doc.sha256,
    size: doc.bytes.length,
    breaking_changes: version.breaking,
    other_changes: version.other,
  });
}

/** The copilot's API description changed (an upload, a new swagger_url) while a sync fetched the old URL. */
class SyncOvertaken extends Error {}
const OVERTAKEN = "The copilot's API description changed while this sync fetched it; nothing was recorded.";

/** Copilots whose sync is due, oldest first (the sync job's batch). */
export async function dueSyncs(db: Db, limit: number): Promise<string[]> {
  return history.findDueSyncs(db, nowTimestamp(), limit);
}
