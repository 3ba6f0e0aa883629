import { CompiledQuery, type Compilable } from 'kysely';
import type { Db } from './schema.js';

/**
 * Building a query with Kysely costs several times what running a small one costs on
 * SQLite. For the few queries on every request's path (the API key, the list version),
 * the SQL is built once per database handle and reused with new parameters.
 */
const compiled = new WeakMap<object, Map<string, string>>();

export function reusableQuery<Row>(name: string, build: (db: Db) => Compilable<Row>) {
  return async (db: Db, parameters: readonly unknown[]): Promise<Row[]> => {
    let byName = compiled.get(db);
    if (!byName) compiled.set(db, (byName = new Map()));
    let text = byName.get(name);
    if (text === undefined) byName.set(name, (text = build(db).compile().sql));
    return (await db.executeQuery<Row>(CompiledQuery.raw(text, [...parameters]))).rows;
  };
}
