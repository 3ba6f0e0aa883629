import { type ExpressionBuilder, sql } from 'kysely';
import type { DialectName } from './database.js';
import type { CrawlPageRow, CrawlRow, Database, Db, KbLinkRow } from './schema.js';
import { pastKey } from './keyset.js';
import { pendingLinkRow } from './knowledge-base.repository.js';

// URLs per IN (…) list and rows per multi-row INSERT: well under both databases' parameter limits.
const BATCH = 500;

export async function insertCrawl(db: Db, row: CrawlRow): Promise<void> {
  await db.insertInto('crawls').values(row).execute();
}

export async function findCrawl(db: Db, botId: string, id: string): Promise<CrawlRow | undefined> {
  return db.selectFrom('crawls').selectAll().where('id', '=', id).where('bot_id', '=', botId).executeTakeFirst();
}

/** The crawl's row, locked until the transaction ends on PostgreSQL (SQLite's single writer serialises anyway). */
export async function lockCrawl(db: Db, dialect: DialectName, id: string): Promise<CrawlRow | undefined> {
  return db
    .selectFrom('crawls')
    .selectAll()
    .where('id', '=', id)
    .$if(dialect === 'postgres', (qb) => qb.forUpdate())
    .executeTakeFirst();
}

/** A bot's crawls, newest first, paged by (created_at, id). */
export async function listCrawls(db: Db, botId: string, page: { limit: number; before?: { createdAt: string; id: string } }): Promise<CrawlRow[]> {
  let q = db.selectFrom('crawls').selectAll().where('bot_id', '=', botId);
  if (page.before) q = q.where(pastKey(page.before, 'desc'));
  return q.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(page.limit).execute();
}

/** The bot's crawls not finished yet (queued or running). */
export async function countActiveCrawls(db: Db, botId: string): Promise<number> {
  const row = await db
    .selectFrom('crawls')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('bot_id', '=', botId)
    .where('state', 'in', ['queued', 'running'])
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export async function updateCrawl(db: Db, id: string, patch: Partial<Omit<CrawlRow, 'id' | 'bot_id'>>, owner?: string): Promise<boolean> {
  const result = await db
    .updateTable('crawls')
    .set(patch)
    .where('id', '=', id)
    .$if(owner !== undefined, (qb) => qb.where('lease_owner', '=', owner!))
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/**
 * Claims a queued crawl whose start is due (its lease free or run out): the start (robots.txt,
 * sitemaps) runs in one instance at a time. On PostgreSQL the row is taken FOR UPDATE SKIP LOCKED.
 */
export async function claimCrawlStart(db: Db, dialect: DialectName, owner: string, now: string, leaseUntil: string): Promise<CrawlRow | undefined> {
  const pg = dialect === 'postgres';
  const { rows } = await sql<CrawlRow>`
    update crawls set lease_owner = ${owner}, lease_expires_at = ${leaseUntil}, attempts = attempts + 1, updated_at = ${now}
    where id = (
      select c.id from crawls c
      where c.state = 'queued' and c.run_after <= ${now} and (c.lease_expires_at is null or c.lease_expires_at < ${now})
      order by c.run_after, c.id
      limit 1
      ${pg ? sql`for update skip locked` : sql``}
    ) and state = 'queued'
    returning *`.execute(db);
  return rows[0];
}

/** Running crawls, a batch (the sweep looks at each). */
export async function runningCrawls(db: Db, limit: number): Promise<Array<Pick<CrawlRow, 'id' | 'bot_id'>>> {
  return db.selectFrom('crawls').select(['id', 'bot_id']).where('state', '=', 'running').orderBy('updated_at').limit(limit).execute();
}

/** Which of `urls` the crawl has already. */
export async function knownUrls(db: Db, crawlId: string, urls: readonly string[]): Promise<Set<string>> {
  const known = new Set<string>();
  for (let i = 0; i < urls.length; i += BATCH) {
    const rows = await db
      .selectFrom('crawl_pages')
      .select('url')
      .where('crawl_id', '=', crawlId)
      .where('url', 'in', urls.slice(i, i + BATCH))
      .execute();
    for (const r of rows) known.add(r.url);
  }
  return known;
}

/** Inserts the pages the crawl does not have yet; returns how many it inserted. */
export async function insertNewPages(db: Db, rows: readonly CrawlPageRow[]): Promise<number> {
  let added = 0;
  for (let i = 0; i < rows.length; i += BATCH) {
    const inserted = await db
      .insertInto('crawl_pages')
      .values(rows.slice(i, i + BATCH))
      .onConflict((oc) => oc.columns(['crawl_id', 'url']).doNothing())
      .returning('url')
      .execute();
    added += inserted.length;
  }
  return added;
}

/**
 * What queueing a crawl's next pages needs, read at once: its pages in the queue, whether the bot
 * has a knowledge base (its row locked until the transaction ends on PostgreSQL), the bot's
 * pending links, and the first `limit` waiting pages of the frontier (shallowest first, then in
 * the order found). One statement (two on PostgreSQL: the lock first).
 */
export async function frontierHead(
  db: Db,
  dialect: DialectName,
  crawl: { id: string; bot_id: string },
  limit: number,
): Promise<{ inQueue: number; knowledgeBase: boolean; pending: number; waiting: CrawlPageRow[] }> {
  if (dialect === 'postgres') await db.selectFrom('knowledge_bases').select('bot_id').where('bot_id', '=', crawl.bot_id).forUpdate().execute();
  // One row of counts, joined to the waiting pages (none: one row whose page columns are null).
  const { rows } = await sql<CrawlPageRow & { in_queue: number; kb: number; pending: number }>`
    select c.in_queue, c.kb, c.pending, p.*
    from (select
        (select count(*) from crawl_pages where crawl_id = ${crawl.id} and state = 'queued') as in_queue,
        (select count(*) from knowledge_bases where bot_id = ${crawl.bot_id}) as kb,
        (select count(*) from kb_links where bot_id = ${crawl.bot_id} and status = 'pending') as pending) c
    left join (select * from crawl_pages where crawl_id = ${crawl.id} and state = 'waiting' order by depth, seq limit ${limit}) p on 1 = 1
    order by p.depth, p.seq`.execute(db);
  const first = rows[0]!;
  return {
    inQueue: Number(first.in_queue),
    knowledgeBase: Number(first.kb) > 0,
    pending: Number(first.pending),
    waiting: rows.filter((r) => r.url !== null).map(({ in_queue: _q, kb: _k, pending: _p, ...page }) => page),
  };
}

export async function updatePage(db: Db, crawlId: string, url: string, patch: Partial<Pick<CrawlPageRow, 'state' | 'fetched' | 'updated_at'>>) {
  await db.updateTable('crawl_pages').set(patch).where('crawl_id', '=', crawlId).where('url', '=', url).execute();
}

/**
 * The queued page that a claimed link is, with its crawl in whatever state it is now (a crawl
 * cancelled since the claim: CrawlRunner.pageOf); undefined when the link is no crawl's.
 */
export async function queuedPageOfLink(db: Db, botId: string, url: string): Promise<{ page: CrawlPageRow; crawl: CrawlRow } | undefined> {
  const page = await db
    .selectFrom('crawl_pages')
    .selectAll()
    .where('bot_id', '=', botId)
    .where('url', '=', url)
    .where('state', '=', 'queued')
    .orderBy('updated_at', 'desc')
    .executeTakeFirst();
  if (!page) return undefined;
  const crawl = await db.selectFrom('crawls').selectAll().where('id', '=', page.crawl_id).executeTakeFirst();
  return crawl ? { page, crawl } : undefined;
}

export async function hasPagesIn(db: Db, crawlId: string, states: readonly string[]): Promise<boolean> {
  const row = await db
    .selectFrom('crawl_pages')
    .select('url')
    .where('crawl_id', '=', crawlId)
    .where('state', 'in', [...states])
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}

export async function queuedPages(db: Db, crawlId: string): Promise<CrawlPageRow[]> {
  return db.selectFrom('crawl_pages').selectAll().where('crawl_id', '=', crawlId).where('state', '=', 'queued').execute();
}

/**
 * A queued page whose link is no longer pending takes the link's outcome: `indexed`, or `failed`
 * (failed, or deleted meanwhile). One statement: nothing when the link is still pending, except
 * that `fetched` marks the page fetched either way (its job's end: CrawlRunner.endJob).
 */
export async function settlePage(db: Db, botId: string, crawlId: string, url: string, now: string, options: { fetched?: boolean } = {}): Promise<void> {
  const link = (eb: ExpressionBuilder<Database, 'crawl_pages'>, status: string) =>
    eb.exists(
      eb
        .selectFrom('kb_links')
        .select('kb_links.id')
        .where('kb_links.bot_id', '=', botId)
        .where('kb_links.url', '=', url)
        .where('kb_links.status', '=', status),
    );
  const settles = (eb: ExpressionBuilder<Database, 'crawl_pages'>) => eb.and([eb('state', '=', 'queued'), eb.not(link(eb, 'pending'))]);
  await db
    .updateTable('crawl_pages')
    .set((eb) => ({
      state: eb
        .case()
        .when(settles(eb))
        .then(eb.case().when(link(eb, 'indexed')).then('indexed').else('failed').end())
        .else(eb.ref('state'))
        .end(),
      ...(options.fetched && { fetched: 1 }),
      updated_at: now,
    }))
    .where('crawl_id', '=', crawlId)
    .where('url', '=', url)
    .$if(!options.fetched, (qb) => qb.where(settles))
    .execute();
}

/** The crawl's queued pages whose link is no longer pending (processed, or deleted): to be settled. */
export async function queuedPagesDone(db: Db, crawlId: string, limit: number): Promise<string[]> {
  const rows = await db
    .selectFrom('crawl_pages as p')
    .leftJoin('kb_links as l', (join) => join.onRef('l.bot_id', '=', 'p.bot_id').onRef('l.url', '=', 'p.url'))
    .select('p.url')
    .where('p.crawl_id', '=', crawlId)
    .where('p.state', '=', 'queued')
    .where((eb) => eb.or([eb('l.id', 'is', null), eb('l.status', '<>', 'pending')]))
    .limit(limit)
    .execute();
  return rows.map((r) => r.url);
}

export async function cancelWaitingPages(db: Db, crawlId: string, now: string): Promise<void> {
  await db.updateTable('crawl_pages').set({ state: 'cancelled', updated_at: now }).where('crawl_id', '=', crawlId).where('state', '=', 'waiting').execute();
}

export async function findLink(db: Db, botId: string, url: string): Promise<KbLinkRow | undefined> {
  return db.selectFrom('kb_links').selectAll().where('bot_id', '=', botId).where('url', '=', url).executeTakeFirst();
}

/** Queues a link the bot does not have yet, due at `runAfter`; false when the bot has it already (nothing written). */
export async function insertPendingLink(db: Db, botId: string, url: string, runAfter: string, now: string): Promise<boolean> {
  const inserted = await db
    .insertInto('kb_links')
    .values(pendingLinkRow(botId, url, runAfter, now))
    .onConflict((oc) => oc.columns(['bot_id', 'url']).doNothing())
    .returning('id')
    .execute();
  return inserted.length > 0;
}

/** Queues an indexed or failed link again (a refresh: its passages stay visible until the new ones replace them). */
export async function requeueLink(db: Db, id: string, runAfter: string, now: string): Promise<void> {
  await db
    .updateTable('kb_links')
    .set({
      status: 'pending',
      error: null,
      attempts: 0,
      generation: sql<number>`generation + 1`,
      run_after: runAfter,
      lease_owner: null,
      lease_expires_at: null,
      updated_at: now,
    })
    .where('id', '=', id)
    .where('status', '<>', 'pending')
    .execute();
}

/**
 * Puts a link the crawl queued again back as it was (indexed or failed, its passages untouched);
 * only while `which` holds: the claimed job's own (id, owner, generation), or a job not running.
 */
export async function restoreLink(
  db: Db,
  which: { id: string; owner?: string; generation?: number; notRunningAt?: string },
  prior: { status: string; error: string | null },
  now: string,
): Promise<boolean> {
  let q = db
    .updateTable('kb_links')
    .set({ status: prior.status, error: prior.error, lease_owner: null, lease_expires_at: null, generation: sql<number>`generation + 1`, updated_at: now })
    .where('id', '=', which.id)
    .where('status', '=', 'pending');
  if (which.owner !== undefined) q = q.where('lease_owner', '=', which.owner).where('generation', '=', which.generation!);
  if (which.notRunningAt !== undefined) {
    const at = which.notRunningAt;
    q = q.where((eb) => eb.or([eb('lease_owner', 'is', null), eb('lease_expires_at', '<', at)]));
  }
  return Number((await q.executeTakeFirst()).numUpdatedRows) > 0;
}

/** Whether the link is still the claimed job's (or, with `notRunningAt`, pending and not running). */
export async function linkIsOurs(db: Db, which: { id: string; owner?: string; generation?: number; notRunningAt?: string }): Promise<boolean> {
  let q = db.selectFrom('kb_links').select('id').where('id', '=', which.id).where('status', '=', 'pending');
  if (which.owner !== undefined) q = q.where('lease_owner', '=', which.owner).where('generation', '=', which.generation!);
  if (which.notRunningAt !== undefined) {
    const at = which.notRunningAt;
    q = q.where((eb) => eb.or([eb('lease_owner', 'is', null), eb('lease_expires_at', '<', at)]));
  }
  return (await q.executeTakeFirst()) !== undefined;
}

/**
 * A deleted bot's crawls not finished are cancelled (its pending links are cancelled with it).
 * The crawls before their pages, as every change of a crawl's pages (migration 015).
 */
export async function cancelCrawlsOfBot(db: Db, botId: string, reason: string, now: string): Promise<void> {
  await db
    .updateTable('crawls')
    .set({ state: 'cancelled', error: reason, finished_at: now, updated_at: now, lease_owner: null, lease_expires_at: null })
    .where('bot_id', '=', botId)
    .where('state', 'in', ['queued', 'running'])
    .execute();
  await db
    .updateTable('crawl_pages')
    .set({ state: 'cancelled', updated_at: now })
    .where('bot_id', '=', botId)
    .where('state', 'in', ['waiting', 'queued'])
    .execute();
}

/**
 * Deletes up to `limit` pages of one crawl that finished before `before`; returns how many. A
 * finished crawl's pages are read by nothing: its progress stays in its row (migration 015).
 */
export async function deleteFinishedPages(db: Db, before: string, limit: number): Promise<number> {
  const crawl = await db
    .selectFrom('crawls')
    .select('id')
    .where('state', 'in', ['done', 'cancelled', 'failed'])
    .where('finished_at', '<', before)
    .where((eb) => eb.exists(eb.selectFrom('crawl_pages').select('crawl_pages.url').whereRef('crawl_pages.crawl_id', '=', 'crawls.id')))
    .limit(1)
    .executeTakeFirst();
  if (!crawl) return 0;
  const result = await db
    .deleteFrom('crawl_pages')
    .where('crawl_id', '=', crawl.id)
    .where('url', 'in', (eb) => eb.selectFrom('crawl_pages').select('url').where('crawl_id', '=', crawl.id).limit(limit))
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** A purged bot's crawls and their pages. */
export async function deleteCrawlsOfBot(db: Db, botId: string): Promise<void> {
  await db.deleteFrom('crawls').where('bot_id', '=', botId).execute();
  await db.deleteFrom('crawl_pages').where('bot_id', '=', botId).execute();
}
