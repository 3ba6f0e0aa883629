import type { AuditLogRow, Db } from './schema.js';

export async function insertAuditEntry(db: Db, entry: Omit<AuditLogRow, 'id'>): Promise<void> {
  await db.insertInto('audit_log').values(entry).execute();
}

/** Newest first, paged by id. */
export async function listAuditEntries(db: Db, page: { limit: number; beforeId?: number; botId?: string }) {
  let q = db.selectFrom('audit_log').selectAll();
  if (page.beforeId !== undefined) q = q.where('id', '<', page.beforeId);
  if (page.botId !== undefined) q = q.where('bot_id', '=', page.botId);
  return q.orderBy('id', 'desc').limit(page.limit).execute();
}
