import type { ApiKeyRow, Db } from './schema.js';

export async function insertApiKey(db: Db, row: ApiKeyRow): Promise<void> {
  await db.insertInto('api_keys').values(row).execute();
}

export async function findApiKey(db: Db, id: string): Promise<ApiKeyRow | undefined> {
  return db.selectFrom('api_keys').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function listApiKeys(db: Db): Promise<ApiKeyRow[]> {
  return db.selectFrom('api_keys').selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').execute();
}

export async function countActiveApiKeys(db: Db): Promise<number> {
  const row = await db
    .selectFrom('api_keys')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('revoked_at', 'is', null)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/**
 * Locks the key's row until the transaction ends, then reads it (undefined: no such key), as
 * `lockCopilot` does for a copilot: a key's revocation and the keys it creates are then written
 * one after the other on both databases, each seeing the other.
 */
export async function lockApiKey(db: Db, id: string): Promise<ApiKeyRow | undefined> {
  const locked = await db
    .updateTable('api_keys')
    .set((eb) => ({ revoked_at: eb.ref('revoked_at') }))
    .where('id', '=', id)
    .executeTakeFirst();
  return locked.numUpdatedRows > 0n ? findApiKey(db, id) : undefined;
}

/** Marks the key revoked (the first time only: a revoked key keeps when it was revoked). */
export async function revokeApiKey(db: Db, id: string, at: string): Promise<void> {
  await db.updateTable('api_keys').set({ revoked_at: at }).where('id', '=', id).where('revoked_at', 'is', null).execute();
}
