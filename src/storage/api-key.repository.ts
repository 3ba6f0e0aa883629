import type { ExpressionBuilder } from 'kysely';
import type { ApiKeyRow, Database, Db } from './schema.js';

export async function insertApiKey(db: Db, row: ApiKeyRow): Promise<void> {
  await db.insertInto('api_keys').values(row).execute();
}

/** Whether any key exists (revoked ones too). */
export async function anyApiKey(db: Db): Promise<boolean> {
  return (await db.selectFrom('api_keys').select('id').limit(1).executeTakeFirst()) !== undefined;
}

/** Removes a key row for good (the first admin key whose file could not be written). */
export async function deleteApiKey(db: Db, id: string): Promise<void> {
  await db.deleteFrom('api_keys').where('id', '=', id).execute();
}

export async function findApiKey(db: Db, id: string): Promise<ApiKeyRow | undefined> {
  return db.selectFrom('api_keys').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function listApiKeys(db: Db): Promise<ApiKeyRow[]> {
  return db.selectFrom('api_keys').selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').execute();
}

/** Active keys; `unlimitedAdmin`: only admin keys for every bot (the keys that can always manage keys). */
export async function countActiveApiKeys(db: Db, options: { unlimitedAdmin?: boolean } = {}): Promise<number> {
  let q = db
    .selectFrom('api_keys')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('revoked_at', 'is', null);
  if (options.unlimitedAdmin) q = q.where('bots', 'is', null).where('scopes', 'like', '%"admin"%');
  const row = await q.executeTakeFirstOrThrow();
  return Number(row.n);
}

/**
 * Keys whose stored bot list (a JSON array of lower-case copilot ids, which hold no `%`, `_`
 * or quote) names any of `bots`. The ORs are nested as a balanced tree: a flat chain of 1,000
 * (a key's most bots) is deeper than SQLite's expression depth limit (1,000).
 */
const namingAny = (bots: readonly string[]) => (eb: ExpressionBuilder<Database, 'api_keys'>) => {
  type Condition = ReturnType<typeof eb.or>;
  const any = (from: number, to: number): Condition => {
    if (to - from <= 8) return eb.or(bots.slice(from, to).map((bot) => eb('bots', 'like', `%${JSON.stringify(bot)}%`)));
    const middle = (from + to) >>> 1;
    return eb.or([any(from, middle), any(middle, to)]);
  };
  return any(0, bots.length);
};

/** Keys naming any of `bots`, revoked ones too: a superset of the keys within them. */
export async function listApiKeysNaming(db: Db, bots: readonly string[]): Promise<ApiKeyRow[]> {
  return db.selectFrom('api_keys').selectAll().where(namingAny(bots)).orderBy('created_at', 'desc').orderBy('id', 'desc').execute();
}

/** Those of `bots` that `max` active keys name already (in the order given). */
export async function botsAtKeyLimit(db: Db, bots: readonly string[], max: number): Promise<string[]> {
  const active = await db.selectFrom('api_keys').select('bots').where('revoked_at', 'is', null).where(namingAny(bots)).execute();
  const count = new Map<string, number>();
  for (const { bots: named } of active) {
    for (const bot of JSON.parse(named ?? '[]') as string[]) count.set(bot, (count.get(bot) ?? 0) + 1);
  }
  return bots.filter((bot) => (count.get(bot) ?? 0) >= max);
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
