import { reusableQuery } from './compiled-query.js';
import type { Db } from './schema.js';

/**
 * The change tokens the database sets on every change to a table (triggers of migrations
 * 003 and 004): `copilots` and `api_keys`. Read on every request, so built once.
 */
const countersQuery = reusableQuery('change-counters', (db) => db.selectFrom('change_counters').select(['name', 'version']));

export async function readChangeCounters(db: Db): Promise<Map<string, number>> {
  const rows = await countersQuery(db, []);
  return new Map(rows.map((r) => [r.name, Number(r.version)]));
}
