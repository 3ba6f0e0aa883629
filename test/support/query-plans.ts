/**
 * How the database reads what a repository function asks: the plan of every statement it sends
 * (SQLite: EXPLAIN QUERY PLAN; PostgreSQL: EXPLAIN, told not to scan whole tables or gather
 * rows by bitmap then sort them, which it does with the few rows of a test and not with a large
 * table's).
 */
import { CompiledQuery, type Kysely, type KyselyPlugin, type RootOperationNode } from 'kysely';
import type { Storage } from '../../src/storage/database.js';
import type { Database } from '../../src/storage/schema.js';

/** Records every statement run through it. */
class Statements implements KyselyPlugin {
  readonly nodes: RootOperationNode[] = [];
  transformQuery(args: { node: RootOperationNode }): RootOperationNode {
    this.nodes.push(args.node);
    return args.node;
  }
  async transformResult<T>(args: { result: T }): Promise<T> {
    return args.result;
  }
}

export async function queryPlans(storage: Storage, run: (db: Kysely<Database>) => Promise<unknown>): Promise<Array<{ sql: string; plan: string }>> {
  const statements = new Statements();
  await run(storage.db.withPlugin(statements));
  const plans: Array<{ sql: string; plan: string }> = [];
  for (const node of statements.nodes) {
    const query = storage.db.getExecutor().compileQuery(node, { queryId: 'plan' } as never);
    const explained =
      storage.dialect === 'sqlite'
        ? (await storage.db.executeQuery<{ detail: string }>(CompiledQuery.raw(`explain query plan ${query.sql}`, [...query.parameters]))).rows.map(
            (r) => r.detail,
          )
        : await storage.db.transaction().execute(async (trx) => {
            await trx.executeQuery(CompiledQuery.raw('set local enable_seqscan = off'));
            await trx.executeQuery(CompiledQuery.raw('set local enable_bitmapscan = off'));
            const { rows } = await trx.executeQuery<{ 'QUERY PLAN': string }>(CompiledQuery.raw(`explain ${query.sql}`, [...query.parameters]));
            return rows.map((r) => r['QUERY PLAN']);
          });
    plans.push({ sql: query.sql, plan: explained.join('\n') });
  }
  return plans;
}
