import { sql } from 'kysely';
import { foldText } from '../domain/text-folding.js';
import type { DialectName } from './database.js';
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

// Every write of a name writes its folded form too (`name_folded`, what `nameContains` matches),
// here, so that no caller can forget it.

export async function insertCopilot(db: Db, row: CopilotRow): Promise<void> {
  await db.insertInto('copilots').values({ ...row, name_folded: foldText(row.name) }).execute();
}

export async function findCopilot(db: Db, id: string): Promise<CopilotRow | undefined> {
  return db.selectFrom('copilots').selectAll().where('id', '=', id).executeTakeFirst();
}

/** The wire columns of a copilot, in wire order (the answer's keys, built by the database). */
const WIRE_COLUMNS = [
  'id',
  'name',
  'token',
  'website',
  'status',
  'prompt_message',
  'enhanced_privacy',
  'smart_sync',
  'swagger_url',
  'is_premade_demo_template',
  'created_at',
  'updated_at',
  'deleted_at',
] as const;

/** The copilots the query selects, newest first (created_at, then id, both descending), at most `limit`. */
function selectPage(db: Db, query: CopilotListQuery) {
  let q = db.selectFrom('copilots').select(WIRE_COLUMNS);
  if (!query.includeDeleted) q = q.where('deleted_at', 'is', null);
  if (query.status) q = q.where('status', '=', query.status);
  if (query.nameContains) {
    // Folded on both sides, identically on both databases (LIKE then compares code points:
    // PostgreSQL's is case-sensitive, SQLite's folds ASCII only, and the text is folded already).
    const pattern = `%${foldText(query.nameContains).replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    q = q.where(sql<boolean>`name_folded like ${pattern} escape '\\'`);
  }
  if (query.ids) q = q.where('id', 'in', query.ids.length > 0 ? [...query.ids] : ['']);
  if (query.after) {
    const { createdAt, id } = query.after;
    q = q.where((eb) => eb.or([eb('created_at', '<', createdAt), eb.and([eb('created_at', '=', createdAt), eb('id', '<', id)])]));
  }
  return q.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(query.limit);
}

export interface CopilotPage {
  /** The page's copilots as the JSON array the list answers, bytes as JSON.stringify writes them. */
  json: string;
  /** Copilots the query found, at most `limit` (the page holds the first `pageSize`). */
  found: number;
  /** The last copilot of the page, where the next page starts after. */
  last: { createdAt: string; id: string } | null;
}

/**
 * A page of the list, its JSON written by the database (row_to_json on PostgreSQL, json_object
 * on SQLite: the same bytes as JSON.stringify of the same objects, the wire keys in order).
 * One text value crosses to the service instead of a row object per copilot that it would
 * parse and serialise again, which is most of what a list request costs (bench section 3).
 * Fetches `query.limit` rows; the JSON holds the first `pageSize`.
 */
export async function listCopilotsPage(db: Db, dialect: DialectName, query: CopilotListQuery, pageSize: number): Promise<CopilotPage> {
  const page = selectPage(db, query);
  const object =
    dialect === 'postgres'
      ? sql`row_to_json(p)::text`
      : sql`json_object(${sql.raw(WIRE_COLUMNS.map((c) => `'${c}', p.${c}`).join(', '))})`;
  const aggregate = dialect === 'postgres' ? sql`string_agg(n.j, ',' order by n.n)` : sql`group_concat(n.j, ',' order by n.n)`;
  const { rows } = await sql<{ items: string | null; found: number | string; last_created_at: string | null; last_id: string | null }>`
    with p as ${page},
    n as (select ${object} as j, p.created_at, p.id, row_number() over (order by p.created_at desc, p.id desc) as n from p)
    select ${aggregate} filter (where n.n <= ${pageSize}) as items,
      count(*) as found,
      max(case when n.n = ${pageSize} then n.created_at end) as last_created_at,
      max(case when n.n = ${pageSize} then n.id end) as last_id
    from n`.execute(db);
  const row = rows[0]!;
  return {
    json: `[${row.items ?? ''}]`,
    found: Number(row.found),
    last: row.last_created_at !== null && row.last_id !== null ? { createdAt: row.last_created_at, id: row.last_id } : null,
  };
}

export async function updateCopilot(db: Db, id: string, changes: Partial<CopilotRow>): Promise<CopilotRow | undefined> {
  const folded = changes.name === undefined ? {} : { name_folded: foldText(changes.name) };
  await db.updateTable('copilots').set({ ...changes, ...folded }).where('id', '=', id).execute();
  return findCopilot(db, id);
}


/** Removes the row for good (purge). */
export async function deleteCopilotRow(db: Db, id: string): Promise<void> {
  await db.deleteFrom('copilots').where('id', '=', id).execute();
}

/** Ids of copilots soft-deleted before `before`, oldest first. */
export async function findDeletedBefore(db: Db, before: string, limit = 1000): Promise<string[]> {
  const rows = await db.selectFrom('copilots').select('id').where('deleted_at', 'is not', null).where('deleted_at', '<', before).orderBy('deleted_at').limit(limit).execute();
  return rows.map((r) => r.id);
}
