import { sql } from 'kysely';
import { foldText } from '../text/folding.js';
import type { CopilotRow, Db } from './schema.js';
import { pastKey } from './keyset.js';

export interface CopilotListQuery {
  limit: number;
  after?: { createdAt: string; id: string };
  status?: string;
  nameContains?: string;
  includeDeleted: boolean;
  /** Restrict to these ids (a key limited to some bots); undefined = all. */
  ids?: readonly string[];
}

// Every write of a name writes its folded form too (`name_folded`, what `nameContains` matches),
// here, so that no caller can forget it.

export async function insertCopilot(db: Db, row: CopilotRow): Promise<void> {
  await db
    .insertInto('copilots')
    .values({ ...row, name_folded: foldText(row.name) })
    .execute();
}

export async function findCopilot(db: Db, id: string): Promise<CopilotRow | undefined> {
  return db.selectFrom('copilots').selectAll().where('id', '=', id).executeTakeFirst();
}

// The copilot's own columns: what a list reads (not name_folded, which only its filter uses).
const COPILOT_COLUMNS = [
  'id',
  'name',
  'token',
  'website',
  'status',
  'prompt_message',
  'enhanced_privacy',
  'smart_sync',
  'swagger_url',
  'is_premade_demo_template',
  'created_at',
  'updated_at',
  'deleted_at',
] as const satisfies readonly (keyof CopilotRow)[];

/** Newest first (created_at, then id, both descending); fetches `limit` rows. */
export async function listCopilots(db: Db, query: CopilotListQuery): Promise<CopilotRow[]> {
  let q = db.selectFrom('copilots').select(COPILOT_COLUMNS);
  if (!query.includeDeleted) q = q.where('deleted_at', 'is', null);
  if (query.status) q = q.where('status', '=', query.status);
  if (query.nameContains) {
    // Folded on both sides, identically on both databases (LIKE then compares code points:
    // PostgreSQL's is case-sensitive, SQLite's folds ASCII only, and the text is folded already).
    const pattern = `%${foldText(query.nameContains).replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    q = q.where(sql<boolean>`name_folded like ${pattern} escape '\\'`);
  }
  if (query.ids) q = q.where('id', 'in', query.ids.length > 0 ? [...query.ids] : ['']);
  if (query.after) q = q.where(pastKey(query.after, 'desc'));
  return q.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(query.limit).execute();
}

export async function updateCopilot(db: Db, id: string, changes: Partial<CopilotRow>): Promise<CopilotRow | undefined> {
  const folded = changes.name === undefined ? {} : { name_folded: foldText(changes.name) };
  await db
    .updateTable('copilots')
    .set({ ...changes, ...folded })
    .where('id', '=', id)
    .execute();
  return findCopilot(db, id);
}

/**
 * Locks the copilot's row until the transaction ends, then reads it (undefined: no such row).
 * What a write that depends on the copilot's state reads it with: on PostgreSQL a racing write
 * of the row (a deletion, a purge) waits for this transaction, or this one for it, and the read
 * after the lock sees what that one committed; SQLite's one writer runs transactions one at a
 * time. The lock is a write of a column to itself, the same statement on both databases.
 */
export async function lockCopilot(db: Db, id: string): Promise<CopilotRow | undefined> {
  const locked = await db
    .updateTable('copilots')
    .set((eb) => ({ deleted_at: eb.ref('deleted_at') }))
    .where('id', '=', id)
    .executeTakeFirst();
  return locked.numUpdatedRows > 0n ? findCopilot(db, id) : undefined;
}

/** Removes the row for good (purge). */
export async function deleteCopilotRow(db: Db, id: string): Promise<void> {
  await db.deleteFrom('copilots').where('id', '=', id).execute();
}

/** Ids of copilots soft-deleted before `before` (null: whenever), oldest first. */
export async function findDeletedBefore(db: Db, before: string | null, limit: number): Promise<string[]> {
  let q = db.selectFrom('copilots').select('id').where('deleted_at', 'is not', null);
  if (before !== null) q = q.where('deleted_at', '<', before);
  const rows = await q.orderBy('deleted_at').limit(limit).execute();
  return rows.map((r) => r.id);
}
