import { type Expression, type SqlBool, sql } from 'kysely';

/**
 * The rows past `key` in a list paged by (created_at, id), `order` being the list's order: every
 * paged list's condition, written out (not as a row comparison) so that each database uses
 * the list's (created_at, id) index as the list's query was measured with.
 */
export function pastKey(key: { createdAt: string; id: string }, order: 'asc' | 'desc'): Expression<SqlBool> {
  const op = sql.raw(order === 'asc' ? '>' : '<');
  const createdAt = sql.ref('created_at');
  return sql<SqlBool>`(${createdAt} ${op} ${key.createdAt} or (${createdAt} = ${key.createdAt} and ${sql.ref('id')} ${op} ${key.id}))`;
}
