import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import type { DialectName } from './database.js';
import type { Db, KbLinkRow } from './schema.js';

// Rows per multi-row INSERT: well under SQLite's and PostgreSQL's bound-parameter limits.
const INSERT_BATCH = 500;
// Link ids per DELETE … IN (…) statement.
const DELETE_BATCH = 200;
// Passages per DELETE statement: each statement is a few milliseconds of SQLite work.
const PASSAGE_DELETE_BATCH = 2000;

export async function findKnowledgeBase(db: Db, botId: string) {
  return db.selectFrom('knowledge_bases').selectAll().where('bot_id', '=', botId).executeTakeFirst();
}

/**
 * The knowledge base row, locked until the transaction ends on PostgreSQL (SQLite's single
 * writer serialises transactions anyway). A delete takes this lock first so that it runs
 * one at a time per bot with other deletes and with adds (whose upsert locks the same row):
 * otherwise two deletes of a bot's last links each still count the other's link and keep
 * an empty knowledge base, or a delete removes the knowledge base under a link just added.
 */
export async function lockKnowledgeBase(db: Db, dialect: DialectName, botId: string) {
  return db
    .selectFrom('knowledge_bases')
    .selectAll()
    .where('bot_id', '=', botId)
    .$if(dialect === 'postgres', (qb) => qb.forUpdate())
    .executeTakeFirst();
}

export async function ensureKnowledgeBase(db: Db, botId: string, now: string): Promise<void> {
  await db
    .insertInto('knowledge_bases')
    .values({ bot_id: botId, created_at: now, updated_at: now })
    .onConflict((oc) => oc.column('bot_id').doUpdateSet({ updated_at: now }))
    .execute();
}

export async function deleteKnowledgeBase(db: Db, botId: string): Promise<void> {
  await db.deleteFrom('knowledge_bases').where('bot_id', '=', botId).execute();
}

/**
 * Inserts new links as pending; a link already there is queued again (refresh):
 * status back to pending, attempts reset, and its generation bumped so that a
 * worker still busy with the old generation cannot write stale results.
 */
export async function upsertPendingLinks(db: Db, botId: string, urls: readonly string[], now: string): Promise<void> {
  for (let i = 0; i < urls.length; i += INSERT_BATCH) {
    const rows = urls.slice(i, i + INSERT_BATCH).map((url) => ({
      id: randomUUID(),
      bot_id: botId,
      url,
      status: 'pending',
      error: null,
      passages: 0,
      attempts: 0,
      generation: 0,
      run_after: now,
      lease_owner: null,
      lease_expires_at: null,
      created_at: now,
      updated_at: now,
    }));
    await db
      .insertInto('kb_links')
      .values(rows)
      .onConflict((oc) =>
        oc.columns(['bot_id', 'url']).doUpdateSet({
          status: 'pending',
          error: null,
          attempts: 0,
          generation: sql<number>`kb_links.generation + 1`,
          run_after: now,
          lease_owner: null,
          lease_expires_at: null,
          updated_at: now,
        }),
      )
      .execute();
  }
}

export async function findLinksByUrls(db: Db, botId: string, urls: readonly string[]): Promise<KbLinkRow[]> {
  const out: KbLinkRow[] = [];
  for (let i = 0; i < urls.length; i += INSERT_BATCH) {
    out.push(...(await db.selectFrom('kb_links').selectAll().where('bot_id', '=', botId).where('url', 'in', urls.slice(i, i + INSERT_BATCH)).execute()));
  }
  return out;
}

/** Links of a bot, oldest first, paged by (created_at, id). */
export async function listLinks(db: Db, botId: string, page: { limit: number; after?: { createdAt: string; id: string } }): Promise<KbLinkRow[]> {
  let q = db.selectFrom('kb_links').selectAll().where('bot_id', '=', botId);
  if (page.after) {
    const { createdAt, id } = page.after;
    q = q.where((eb) => eb.or([eb('created_at', '>', createdAt), eb.and([eb('created_at', '=', createdAt), eb('id', '>', id)])]));
  }
  return q.orderBy('created_at', 'asc').orderBy('id', 'asc').limit(page.limit).execute();
}

export async function countLinks(db: Db, botId: string): Promise<number> {
  const row = await db.selectFrom('kb_links').select((eb) => eb.fn.countAll<number>().as('n')).where('bot_id', '=', botId).executeTakeFirstOrThrow();
  return Number(row.n);
}

/**
 * Deletes the links and then every passage indexed from them, in bounded batches,
 * calling `between` after each batch (on SQLite the caller yields to the event loop
 * there, so a large deletion never blocks other requests for long). Deleting the link
 * rows first matters on PostgreSQL: it waits for a worker's transaction that holds the
 * row, so the passages that worker committed are seen and deleted too.
 */
export async function deleteLinksAndPassages(db: Db, linkIds: readonly string[], between: () => Promise<void>): Promise<void> {
  for (let i = 0; i < linkIds.length; i += DELETE_BATCH) {
    const ids = linkIds.slice(i, i + DELETE_BATCH);
    await db.deleteFrom('kb_links').where('id', 'in', ids).execute();
    for (;;) {
      const batch = db.selectFrom('kb_passages').select('id').where('link_id', 'in', ids).limit(PASSAGE_DELETE_BATCH);
      const result = await db.deleteFrom('kb_passages').where('id', 'in', batch).executeTakeFirst();
      await between();
      if (Number(result.numDeletedRows) < PASSAGE_DELETE_BATCH) break;
    }
  }
}

// ---- the ingestion queue: jobs are the pending links themselves ----

/**
 * Claims the next due job: a pending link whose lease is free or expired. On PostgreSQL
 * `FOR UPDATE SKIP LOCKED` lets several instances claim concurrently without ever
 * taking the same row; on SQLite the single UPDATE is atomic.
 */
export async function claimNextJob(db: Db, dialect: DialectName, owner: string, now: string, leaseUntil: string): Promise<KbLinkRow | undefined> {
  const due = db
    .selectFrom('kb_links')
    .select('id')
    .where('status', '=', 'pending')
    .where('run_after', '<=', now)
    .where((eb) => eb.or([eb('lease_expires_at', 'is', null), eb('lease_expires_at', '<', now)]))
    .orderBy('run_after')
    .limit(1)
    .$if(dialect === 'postgres', (qb) => qb.forUpdate().skipLocked());
  return db
    .updateTable('kb_links')
    .set({ lease_owner: owner, lease_expires_at: leaseUntil, attempts: sql<number>`attempts + 1` })
    .where('id', '=', due)
    .where('status', '=', 'pending')
    .returningAll()
    .executeTakeFirst();
}

/** Ends a claimed job. Returns false when the link was deleted or re-queued meanwhile (nothing written). */
export async function finishJob(
  db: Db,
  job: { id: string; owner: string; generation: number },
  outcome: { status: 'indexed'; passages: readonly string[]; botId: string; now: string } | { status: 'pending' | 'failed'; error: string; runAfter?: string; now: string },
): Promise<boolean> {
  const base = db
    .updateTable('kb_links')
    .where('id', '=', job.id)
    .where('lease_owner', '=', job.owner)
    .where('generation', '=', job.generation);
  const common = { lease_owner: null, lease_expires_at: null, updated_at: outcome.now };
  if (outcome.status !== 'indexed') {
    const result = await base
      .set({ ...common, status: outcome.status, error: outcome.error, ...(outcome.runAfter && { run_after: outcome.runAfter }) })
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }
  const result = await base.set({ ...common, status: 'indexed', error: null, passages: outcome.passages.length }).executeTakeFirst();
  if (Number(result.numUpdatedRows) === 0) return false;
  await db.deleteFrom('kb_passages').where('link_id', '=', job.id).execute();
  for (let i = 0; i < outcome.passages.length; i += INSERT_BATCH) {
    const rows = outcome.passages.slice(i, i + INSERT_BATCH).map((content, k) => ({ link_id: job.id, bot_id: outcome.botId, seq: i + k, content }));
    await db.insertInto('kb_passages').values(rows).execute();
  }
  return true;
}

/** Gives a claimed job back to the queue untouched (shutdown): no attempt is counted. */
export async function releaseJob(db: Db, job: { id: string; owner: string; generation: number }): Promise<void> {
  await db
    .updateTable('kb_links')
    .set({ lease_owner: null, lease_expires_at: null, attempts: sql<number>`attempts - 1` })
    .where('id', '=', job.id)
    .where('lease_owner', '=', job.owner)
    .where('generation', '=', job.generation)
    .execute();
}

/**
 * Removes up to `limit` stale entries from the SQLite full-text index (entries of deleted
 * passages, noted in kb_fts_garbage by a trigger); returns how many it removed. Searches
 * never return stale entries, so this is housekeeping. PostgreSQL's index (a column of
 * kb_passages) needs none.
 */
export async function sweepSearchIndex(db: Db, dialect: DialectName, limit: number): Promise<number> {
  if (dialect !== 'sqlite') return 0;
  return db.transaction().execute(async (trx) => {
    const ids = (await sql<{ passage_id: number }>`select passage_id from kb_fts_garbage order by passage_id limit ${limit}`.execute(trx)).rows.map(
      (r) => r.passage_id,
    );
    if (ids.length === 0) return 0;
    const list = sql.join(ids);
    await sql`delete from kb_passages_fts where rowid in (${list})`.execute(trx);
    await sql`delete from kb_fts_garbage where passage_id in (${list})`.execute(trx);
    return ids.length;
  });
}

/** One bounded step (about 64 pages of work) of merging the SQLite full-text index's segments. */
export async function mergeSearchIndexStep(db: Db, dialect: DialectName): Promise<void> {
  if (dialect !== 'sqlite') return;
  await sql`insert into kb_passages_fts(kb_passages_fts, rank) values ('merge', 64)`.execute(db);
}

export interface PassageHit {
  link_id: string;
  url: string;
  seq: number;
  content: string;
  score: number;
}

/** Full-text search of one bot's passages, best first (FTS5 bm25 / PostgreSQL ts_rank). */
export async function searchPassages(db: Db, dialect: DialectName, botId: string, query: string, limit: number): Promise<PassageHit[]> {
  if (dialect === 'postgres') {
    const result = await sql<PassageHit>`
      select p.link_id, l.url, p.seq, p.content, ts_rank(p.tsv, query_terms.q) as score
      from kb_passages p
      join kb_links l on l.id = p.link_id
      -- OR of the words, as on SQLite: ts_rank puts passages with more (and rarer) words first.
      cross join (select replace(plainto_tsquery('english', ${query})::text, '&', '|')::tsquery as q) query_terms
      where p.bot_id = ${botId} and p.tsv @@ query_terms.q
      order by score desc, p.id
      limit ${limit}`.execute(db);
    return result.rows.map((r) => ({ ...r, score: Number(r.score) }));
  }
  const result = await sql<PassageHit>`
    select p.link_id, l.url, p.seq, p.content, -f.rank as score
    from kb_passages_fts f
    join kb_passages p on p.id = f.rowid
    join kb_links l on l.id = p.link_id
    where kb_passages_fts match ${query} and p.bot_id = ${botId}
    order by f.rank, p.id
    limit ${limit}`.execute(db);
  return result.rows.map((r) => ({ ...r, score: Number(r.score) }));
}
