import { sql } from 'kysely';
import type { DialectName } from './database.js';
import type { ApiDescriptionChangeRow, ApiDescriptionSyncRow, ApiDescriptionVersionRow, Db } from './schema.js';

/** A version without its document. */
export type VersionMeta = Omit<ApiDescriptionVersionRow, 'content'>;

const META_COLUMNS = [
  'copilot_id',
  'version',
  'sha256',
  'size',
  'media_type',
  'source',
  'url',
  'breaking_changes',
  'other_changes',
  'created_at',
] as const satisfies readonly (keyof VersionMeta)[];

/**
 * Takes the copilot's row lock until the transaction ends (PostgreSQL; SQLite's single writer
 * serialises transactions anyway), so that two new versions of one copilot are numbered one
 * after the other. Run it in a transaction.
 */
export async function lockCopilotVersions(db: Db, dialect: DialectName, copilotId: string): Promise<void> {
  await db
    .selectFrom('copilots')
    .select('id')
    .where('id', '=', copilotId)
    .$if(dialect === 'postgres', (q) => q.forUpdate())
    .execute();
}

export async function latestVersion(db: Db, copilotId: string): Promise<ApiDescriptionVersionRow | undefined> {
  return db.selectFrom('api_description_versions').selectAll().where('copilot_id', '=', copilotId).orderBy('version', 'desc').limit(1).executeTakeFirst();
}

export async function latestVersionNumber(db: Db, copilotId: string): Promise<number> {
  const row = await db
    .selectFrom('api_description_versions')
    .select((eb) => eb.fn.max('version').as('v'))
    .where('copilot_id', '=', copilotId)
    .executeTakeFirst();
  return Number(row?.v ?? 0);
}

/** Inserts the version and its changes; false (nothing written) when another transaction took that version number first. */
export async function insertVersion(db: Db, row: ApiDescriptionVersionRow, changes: readonly ApiDescriptionChangeRow[]): Promise<boolean> {
  const inserted = await db
    .insertInto('api_description_versions')
    .values(row)
    .onConflict((oc) => oc.columns(['copilot_id', 'version']).doNothing())
    .executeTakeFirst();
  if (Number(inserted.numInsertedOrUpdatedRows ?? 0) === 0) return false;
  // A few hundred rows per statement keeps every statement under SQLite's parameter limit.
  for (let i = 0; i < changes.length; i += 500)
    await db
      .insertInto('api_description_changes')
      .values(changes.slice(i, i + 500))
      .execute();
  return true;
}

/** Newest first; `before`: only versions older than that one. */
export async function listVersions(db: Db, copilotId: string, page: { limit: number; before?: number }): Promise<VersionMeta[]> {
  return db
    .selectFrom('api_description_versions')
    .select(META_COLUMNS)
    .where('copilot_id', '=', copilotId)
    .$if(page.before !== undefined, (q) => q.where('version', '<', page.before!))
    .orderBy('version', 'desc')
    .limit(page.limit)
    .execute();
}

export async function findVersion(db: Db, copilotId: string, version: number): Promise<ApiDescriptionVersionRow | undefined> {
  return db.selectFrom('api_description_versions').selectAll().where('copilot_id', '=', copilotId).where('version', '=', version).executeTakeFirst();
}

/** A version's SHA-256 and media type, without its bytes. */
export async function findVersionMeta(
  db: Db,
  copilotId: string,
  version: number,
): Promise<Pick<ApiDescriptionVersionRow, 'sha256' | 'media_type'> | undefined> {
  return db
    .selectFrom('api_description_versions')
    .select(['sha256', 'media_type'])
    .where('copilot_id', '=', copilotId)
    .where('version', '=', version)
    .executeTakeFirst();
}

/** Newest version first, each version's changes in their order; `after`: the position after which the page starts. */
export async function listChanges(
  db: Db,
  copilotId: string,
  page: { limit: number; after?: { version: number; seq: number } },
): Promise<ApiDescriptionChangeRow[]> {
  // A version at a time, each read along the primary key (copilot_id, version, seq): one query
  // ordered by version descending and seq ascending sorts every row of the versions it passes
  // (a version keeps up to MAX_KEPT_CHANGES), and its cursor's OR condition scans them all.
  const rows: ApiDescriptionChangeRow[] = [];
  let version: number | null = page.after?.version ?? (await newestChangedVersion(db, copilotId));
  let afterSeq = page.after?.seq ?? -1;
  while (version !== null && rows.length < page.limit) {
    rows.push(
      ...(await db
        .selectFrom('api_description_changes')
        .selectAll()
        .where('copilot_id', '=', copilotId)
        .where('version', '=', version)
        .where('seq', '>', afterSeq)
        .orderBy('seq')
        .limit(page.limit - rows.length)
        .execute()),
    );
    if (rows.length < page.limit) version = await newestChangedVersion(db, copilotId, version);
    afterSeq = -1;
  }
  return rows;
}

/** The newest version (below `below`, if given) that has changes; null when none. */
async function newestChangedVersion(db: Db, copilotId: string, below?: number): Promise<number | null> {
  const row = await db
    .selectFrom('api_description_changes')
    .select((eb) => eb.fn.max('version').as('v'))
    .where('copilot_id', '=', copilotId)
    .$if(below !== undefined, (q) => q.where('version', '<', below!))
    .executeTakeFirst();
  return row?.v === null || row?.v === undefined ? null : Number(row.v);
}

/** Keeps the newest `keep` versions of the copilot (and their changes); returns how many went. */
export async function pruneVersions(db: Db, copilotId: string, keep: number): Promise<number> {
  const newest = await latestVersionNumber(db, copilotId);
  const below = newest - keep + 1;
  if (below <= 1) return 0;
  await db.deleteFrom('api_description_changes').where('copilot_id', '=', copilotId).where('version', '<', below).execute();
  const result = await db.deleteFrom('api_description_versions').where('copilot_id', '=', copilotId).where('version', '<', below).executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** Everything of a copilot's history and sync state (its purge). */
export async function deleteHistory(db: Db, copilotId: string): Promise<void> {
  await db.deleteFrom('api_description_changes').where('copilot_id', '=', copilotId).execute();
  await db.deleteFrom('api_description_versions').where('copilot_id', '=', copilotId).execute();
  await db.deleteFrom('api_description_sync').where('copilot_id', '=', copilotId).execute();
}

// ---- sync: each copilot with smart_sync = 1 and an http(s) swagger_url, on a schedule ----

export async function findSyncState(db: Db, copilotId: string): Promise<ApiDescriptionSyncRow | undefined> {
  return db.selectFrom('api_description_sync').selectAll().where('copilot_id', '=', copilotId).executeTakeFirst();
}

/** Ids of copilots whose sync is due (never synced, or next_sync_at passed) and not leased, oldest due first. */
export async function findDueSyncs(db: Db, now: string, limit: number): Promise<string[]> {
  const rows = await db
    .selectFrom('copilots as c')
    .leftJoin('api_description_sync as s', 's.copilot_id', 'c.id')
    .select('c.id')
    .where('c.deleted_at', 'is', null)
    .where('c.smart_sync', '=', 1)
    .where((eb) => eb.or([eb('c.swagger_url', 'like', 'http://%'), eb('c.swagger_url', 'like', 'https://%')]))
    .where((eb) =>
      eb.or([
        eb('s.copilot_id', 'is', null),
        eb.and([eb('s.next_sync_at', '<=', now), eb.or([eb('s.lease_expires_at', 'is', null), eb('s.lease_expires_at', '<', now)])]),
      ]),
    )
    // A copilot never synced (no sync row) first, on both databases: PostgreSQL sorts nulls last,
    // so that behind a round full of due copilots it waited for ever.
    .orderBy(sql`coalesce(s.next_sync_at, '')`)
    .limit(limit)
    .execute();
  return rows.map((r) => r.id);
}

/**
 * Takes the copilot's sync lease when it is free (or `force`: due or not, unless another owner's
 * lease still runs); false when another instance has it. One statement: instances racing for
 * one copilot get it once.
 */
export async function claimSync(db: Db, copilotId: string, owner: string, now: string, leaseUntil: string, force = false): Promise<boolean> {
  const rows = await db
    .insertInto('api_description_sync')
    .values({ copilot_id: copilotId, next_sync_at: now, lease_owner: owner, lease_expires_at: leaseUntil })
    .onConflict((oc) =>
      oc
        .column('copilot_id')
        .doUpdateSet({ lease_owner: owner, lease_expires_at: leaseUntil })
        .where((eb) =>
          eb.and([
            ...(force ? [] : [eb('api_description_sync.next_sync_at', '<=', now)]),
            eb.or([eb('api_description_sync.lease_expires_at', 'is', null), eb('api_description_sync.lease_expires_at', '<', now)]),
          ]),
        ),
    )
    .returning('copilot_id')
    .execute();
  return rows.length > 0;
}

/** Ends the lease and records the outcome and the next due time. */
export async function finishSync(
  db: Db,
  copilotId: string,
  owner: string,
  outcome: Pick<ApiDescriptionSyncRow, 'next_sync_at' | 'last_synced_at' | 'last_outcome' | 'last_error'> &
    Partial<Pick<ApiDescriptionSyncRow, 'etag' | 'last_modified'>>,
): Promise<void> {
  await db
    .updateTable('api_description_sync')
    .set({ ...outcome, lease_owner: null, lease_expires_at: null })
    .where('copilot_id', '=', copilotId)
    .where('lease_owner', '=', owner)
    .execute();
}
