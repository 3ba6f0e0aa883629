import { sql } from 'kysely';
import type { CopilotRow, Db } from './schema.js';

export interface CopilotListQuery {
  limit: number;
  after?: { createdAt: string; id: string };
  status?: string;
  nameContains?: string;
  includeDeleted: boolean;
  /** Restrict to these ids (a key limited to some bots); undefined = all. */
  ids?: readonly string[];
}

export async function insertCopilot(db: Db, row: CopilotRow): Promise<void> {
  await db.insertInto('copilots').values(row).execute();
}

export async function findCopilot(db: Db, id: string): Promise<CopilotRow | undefined> {
  return db.selectFrom('copilots').selectAll().where('id', '=', id).executeTakeFirst();
}

/** Newest first (created_at, then id, both descending); fetches `limit` rows. */
export async function listCopilots(db: Db, query: CopilotListQuery): Promise<CopilotRow[]> {
  let q = db.selectFrom('copilots').selectAll();
  if (!query.includeDeleted) q = q.where('deleted_at', 'is', null);
  if (query.status) q = q.where('status', '=', query.status);
  if (query.nameContains) {
    const pattern = `%${query.nameContains.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    q = q.where(sql<boolean>`lower(name) like ${pattern} escape '\\'`);
  }
  if (query.ids) q = q.where('id', 'in', query.ids.length > 0 ? [...query.ids] : ['']);
  if (query.after) {
    const { createdAt, id } = query.after;
    q = q.where((eb) => eb.or([eb('created_at', '<', createdAt), eb.and([eb('created_at', '=', createdAt), eb('id', '<', id)])]));
  }
  return q.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(query.limit).execute();
}

export async function updateCopilot(db: Db, id: string, changes: Partial<CopilotRow>): Promise<CopilotRow | undefined> {
  await db.updateTable('copilots').set(changes).where('id', '=', id).execute();
  return findCopilot(db, id);
}

