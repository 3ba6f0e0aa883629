import { CompiledQuery, type Compilable } from 'kysely';
import type { Db } from './schema.js';

/**
 * Building a query with Kysely costs several times what running a small one costs on
 * SQLite. For the few queries on every request's path (the API key, the list version),
 * the SQL is built once per database handle and reused with new parameters.
 */
const compiled = new WeakMap<object, Map<string, string>>();

/**
 * SQL text → statement name of every reusable query: on PostgreSQL these run as named
 * prepared statements (parsed and planned once per connection; see database.ts), as
 * SQLite's statement cache does for every query. A reusable query names its columns
 * (no `select *`): PostgreSQL re-plans a prepared statement after a schema change, but
 * refuses one whose result columns changed.
 */
export const preparedStatementNames = new Map<string, string>();

export function reusableQuery<Row>(name: string, build: (db: Db) => Compilable<Row>) {
  return async (db: Db, parameters: readonly unknown[]): Promise<Row[]> => {
    let byName = compiled.get(db);
    if (!byName) compiled.set(db, (byName = new Map()));
    let text = byName.get(name);
    if (text === undefined) {
      byName.set(name, (text = build(db).compile().sql));
      preparedStatementNames.set(text, `cms_${name}`);
    }
    return (await db.executeQuery<Row>(CompiledQuery.raw(text, [...parameters]))).rows;
  };
}
