import type { AuditLogRow, Db } from './schema.js';

/** At most 1,000 entries (a key's bots) in one statement. */
export async function insertAuditEntries(db: Db, entries: ReadonlyArray<Omit<AuditLogRow, 'id'>>): Promise<void> {
  for (let i = 0; i < entries.length; i += 1000)
    await db
      .insertInto('audit_log')
      .values(entries.slice(i, i + 1000))
      .execute();
}

/** Deletes up to `limit` entries written before `cutoff`, oldest first; how many. */
export async function deleteAuditEntriesBefore(db: Db, cutoff: string, limit: number): Promise<number> {
  const result = await db
    .deleteFrom('audit_log')
    .where('id', 'in', (eb) => eb.selectFrom('audit_log').select('id').where('at', '<', cutoff).orderBy('at').limit(limit))
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

/**
 * Newest first, paged by id; every filter optional (`botIds`: any of them): each entry's id and
 * the characters of its details, so that a page reads only the details it answers.
 */
export async function listAuditSizes(
  db: Db,
  page: { limit: number; beforeId?: number; botIds?: readonly string[]; action?: string; since?: string; until?: string },
) {
  let q = db.selectFrom('audit_log').select((eb) => ['id', eb.fn<number>('length', ['details']).as('chars')]);
  if (page.beforeId !== undefined) q = q.where('id', '<', page.beforeId);
  if (page.botIds !== undefined) q = q.where('bot_id', 'in', page.botIds.length > 0 ? [...page.botIds] : ['']);
  if (page.action !== undefined) q = q.where('action', '=', page.action);
  if (page.since !== undefined) q = q.where('at', '>=', page.since);
  if (page.until !== undefined) q = q.where('at', '<', page.until);
  return q.orderBy('id', 'desc').limit(page.limit).execute();
}

/** The entries of these ids, newest first. */
export async function listAuditEntriesById(db: Db, ids: readonly number[]) {
  return db
    .selectFrom('audit_log')
    .selectAll()
    .where('id', 'in', [...ids])
    .orderBy('id', 'desc')
    .execute();
}

/**
 * Rewrites the details of a bot's entries that may hold a URL's query string, fragment or an
 * address (`?`, `#`, `@`) with `rewrite`, a batch at a time; an entry `rewrite` leaves as it
 * was is not written.
 */
export async function rewriteAuditDetails(db: Db, botId: string, rewrite: (details: string) => string): Promise<void> {
  let after = 0;
  for (;;) {
    const rows = await db
      .selectFrom('audit_log')
      .select(['id', 'details'])
      .where('bot_id', '=', botId)
      .where('id', '>', after)
      .where((eb) => eb.or([eb('details', 'like', '%?%'), eb('details', 'like', '%#%'), eb('details', 'like', '%@%')]))
      .orderBy('id')
      .limit(1000)
      .execute();
    for (const row of rows) {
      const details = rewrite(row.details);
      if (details !== row.details) await db.updateTable('audit_log').set({ details }).where('id', '=', row.id).execute();
    }
    if (rows.length < 1000) return;
    after = Number(rows[rows.length - 1]!.id);
  }
}
