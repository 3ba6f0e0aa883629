import { randomUUID } from 'node:crypto';
import { sql, type ExpressionBuilder, type RawBuilder } from 'kysely';
import { nowTimestamp } from '../domain/ids.js';
import { passageTerms } from '../text/search-terms.js';
import type { DialectName } from './database.js';
import { inTransaction } from './transaction.js';
import type { Database, Db, KbLinkRow } from './schema.js';
import { pastKey } from './keyset.js';
import { deleteBotIndex, excludePassages, writeSegment } from './search-index.repository.js';

export { searchPassages, type PassageHit } from './search-index.repository.js';

// Rows per multi-row INSERT: well under SQLite's and PostgreSQL's bound-parameter limits.
const INSERT_BATCH = 500;
// Link ids per DELETE … IN (…) statement.
const DELETE_BATCH = 200;
// Passages per DELETE statement: each statement is a few milliseconds of SQLite work.
const PASSAGE_DELETE_BATCH = 2000;
// Passages per INSERT while storing a page (a segment of the search index each): the statement
// (with the terms, unless given) is built on the event loop, a batch at a time.
const PASSAGE_INSERT_BATCH = 200;
// Passages per INSERT when written at once (insertPassages).
const INSERT_ROWS = 2000;

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
  await deleteBotIndex(db, botId);
}

/** A new link's row: pending, due at `runAfter`, created (and so last updated) at `createdAt`. */
export function pendingLinkRow(botId: string, url: string, runAfter: string, createdAt: string) {
  return {
    id: randomUUID(),
    bot_id: botId,
    url,
    status: 'pending',
    error: null,
    passages: 0,
    attempts: 0,
    generation: 0,
    run_after: runAfter,
    lease_owner: null,
    lease_expires_at: null,
    created_at: createdAt,
    updated_at: createdAt,
  };
}

/**
 * Inserts new links as pending; a link already there is queued again (refresh):
 * status back to pending, attempts reset, and its generation bumped so that a
 * worker still busy with the old generation cannot write stale results. New links are
 * created in the order given (`now`, then a later time each: nowTimestamp() only grows in a
 * process), so the list, oldest first, shows them as they were sent.
 */
export async function upsertPendingLinks(db: Db, botId: string, urls: readonly string[], now: string): Promise<void> {
  for (let i = 0; i < urls.length; i += INSERT_BATCH) {
    const rows = urls.slice(i, i + INSERT_BATCH).map((url, k) => pendingLinkRow(botId, url, now, i + k === 0 ? now : nowTimestamp()));
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
    out.push(
      ...(await db
        .selectFrom('kb_links')
        .selectAll()
        .where('bot_id', '=', botId)
        .where('url', 'in', urls.slice(i, i + INSERT_BATCH))
        .execute()),
    );
  }
  return out;
}

/** Links of a bot, oldest first, paged by (created_at, id). */
export async function listLinks(db: Db, botId: string, page: { limit: number; after?: { createdAt: string; id: string } }): Promise<KbLinkRow[]> {
  let q = db.selectFrom('kb_links').selectAll().where('bot_id', '=', botId);
  if (page.after) q = q.where(pastKey(page.after, 'asc'));
  return q.orderBy('created_at', 'asc').orderBy('id', 'asc').limit(page.limit).execute();
}

/** Links of the bot waiting to be indexed (those being processed included). */
export async function countPendingLinks(db: Db, botId: string): Promise<number> {
  const row = await db
    .selectFrom('kb_links')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('bot_id', '=', botId)
    .where('status', '=', 'pending')
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Links of every bot by status (for /metrics). */
export async function countLinksByStatus(db: Db): Promise<Array<{ status: string; n: number }>> {
  const rows = await db
    .selectFrom('kb_links')
    .select(['status', (eb) => eb.fn.countAll<number>().as('n')])
    .groupBy('status')
    .execute();
  return rows.map((r) => ({ status: r.status, n: Number(r.n) }));
}

/** Passages of retired sets that the search index housekeeping has yet to delete, in the whole database (for /metrics). */
export async function countPassagesToDelete(db: Db): Promise<number> {
  const row = await db
    .selectFrom('kb_hidden_passages as h')
    .innerJoin('kb_passages as p', (join) => join.onRef('p.link_id', '=', 'h.link_id').onRef('p.version', '=', 'h.version'))
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('h.state', '=', 'retired')
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export async function countLinks(db: Db, botId: string): Promise<number> {
  const row = await db
    .selectFrom('kb_links')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('bot_id', '=', botId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/**
 * Deletes the links and hides every passage indexed from them: each of their sets (the visible
 * one and any being stored) is retired in the caller's transaction, so no search sees them once
 * it commits, and `deleteRetiredPassages` deletes them afterwards, a bounded batch per
 * transaction (the search index housekeeping; the ingestion worker for a replaced page). The
 * deletion itself writes a few rows per link however many passages they hold: on SQLite it
 * held the one writer for all of them, and every other write waited. On PostgreSQL the link's
 * row is deleted first, so a worker's transaction that holds it (storing a page at once) is
 * waited for, and the version it published is the one retired.
 */
export async function deleteLinks(db: Db, linkIds: readonly string[], now: string): Promise<void> {
  for (let i = 0; i < linkIds.length; i += DELETE_BATCH) {
    const ids = linkIds.slice(i, i + DELETE_BATCH);
    const gone = await db.deleteFrom('kb_links').where('id', 'in', ids).returning(['id', 'bot_id', 'version', 'passages', 'term_count']).execute();
    await retireHiddenSets(db, ids);
    await retireSets(
      db,
      gone.filter(holdsASet).map((link) => ({ link_id: link.id, version: link.version, bot_id: link.bot_id })),
      now,
    );
  }
}

/** A link never indexed (version 0, no passages, no terms) has no set to retire. */
function holdsASet(link: { version: number; passages: number; term_count: number }): boolean {
  return Number(link.version) > 0 || Number(link.passages) > 0 || Number(link.term_count) > 0;
}

/**
 * A deleted link's hidden sets are retired, not forgotten: their passages are deleted with the
 * set, and a worker still storing one of them writes no further batch (`stagePassages`).
 */
async function retireHiddenSets(db: Db, linkIds: readonly string[]): Promise<void> {
  await db
    .updateTable('kb_hidden_passages')
    .set({ state: 'retired' })
    .where('link_id', 'in', [...linkIds])
    .where('state', '=', 'staging')
    .execute();
}

export interface NewPassage {
  link_id: string;
  bot_id: string;
  seq: number;
  content: string;
  /** Its search terms, when computed already (on the task thread that split the page); else computed here. */
  terms?: string;
  term_count?: number;
}

/**
 * The one way to write passages: each row goes in with its term count, and the rows (with their
 * search terms: `passageTerms`, computed here unless given) make a segment of the search index
 * (search-index.repository.ts), in the caller's transaction. Returns each link's sum of term
 * counts. Callers batch (the rows go in one INSERT).
 */
async function writePassages(db: Db, rows: ReadonlyArray<NewPassage & { version: number }>): Promise<Map<string, number>> {
  const perLink = new Map<string, number>();
  if (rows.length === 0) return perLink;
  const terms: string[] = [];
  const values = rows.map((row) => {
    const counted = row.terms !== undefined && row.term_count !== undefined ? { terms: row.terms, term_count: row.term_count } : passageTerms(row.content);
    perLink.set(row.link_id, (perLink.get(row.link_id) ?? 0) + counted.term_count);
    terms.push(counted.terms);
    return { link_id: row.link_id, bot_id: row.bot_id, seq: row.seq, content: row.content, term_count: counted.term_count, version: row.version };
  });
  const ids = await db.insertInto('kb_passages').values(values).returning(['id', 'link_id', 'seq', 'version']).execute();
  // Each row's id, matched by (link, version, passage): nothing promises RETURNING's order.
  const at = new Map(values.map((v, i) => [`${v.link_id} ${v.version} ${v.seq}`, i]));
  await writeSegment(
    db,
    ids.map((r) => {
      const i = at.get(`${r.link_id} ${r.version} ${r.seq}`)!;
      return { id: Number(r.id), bot_id: values[i]!.bot_id, terms: terms[i]!, term_count: values[i]!.term_count };
    }),
  );
  return perLink;
}

/** Inserts passages into the links' visible sets at once, adding their terms to the links' `term_count`. */
export async function insertPassages(db: Db, rows: readonly NewPassage[]): Promise<void> {
  const linkIds = [...new Set(rows.map((r) => r.link_id))];
  const versions = new Map(
    linkIds.length === 0
      ? []
      : (await db.selectFrom('kb_links').select(['id', 'version']).where('id', 'in', linkIds).execute()).map((l) => [l.id, Number(l.version)]),
  );
  const perLink = new Map<string, number>();
  // A segment of the index per INSERT_ROWS rows (7 values each: under both parameter limits).
  for (let i = 0; i < rows.length; i += INSERT_ROWS)
    for (const [linkId, n] of await writePassages(
      db,
      rows.slice(i, i + INSERT_ROWS).map((r) => ({ ...r, version: versions.get(r.link_id) ?? 0 })),
    ))
      perLink.set(linkId, (perLink.get(linkId) ?? 0) + n);
  for (const linkId of linkIds) {
    const count = perLink.get(linkId) ?? 0;
    if (count > 0)
      await db
        .updateTable('kb_links')
        .set((eb) => ({ term_count: eb('term_count', '+', count) }))
        .where('id', '=', linkId)
        .execute();
  }
}

// ---- the ingestion queue: jobs are the pending links themselves ----

/**
 * Claims the next due job (a pending link whose run_after has come and whose lease is free or
 * ran out), fairly across bots: of the bots with a due job, the one with the fewest jobs running
 * (claimed, lease not run out; migration 018 indexes them), then the one whose jobs were claimed
 * least recently (never claimed: first), then that bot's oldest due job. One bot's long queue
 * of slow pages therefore delays another bot's new link by at most the jobs already running.
 * Running jobs come first because a claim is seen at once, while the turn (`noteClaimed`) moves
 * on in a statement of its own, after a chained claim's transaction even: workers claiming at
 * the same moment (their fetches timed out together) would otherwise all read the same turns and
 * all take the same bot.
 *
 * On PostgreSQL every lock is taken SKIP LOCKED, so several workers and instances claim at once
 * without waiting for each other. The job's row FOR UPDATE: no job is taken twice. The bot's row
 * FOR NO KEY UPDATE: a claim running at the same moment (whose running job the count cannot see
 * before it commits) passes over the bot this one takes and takes the next. Only when every due
 * bot is held that way, the bot's row FOR KEY SHARE, which such claims do not block: one bot's
 * crawl keeps every worker. Either way a bot whose knowledge base is being changed (an add, a
 * delete or a page's store holds its row FOR UPDATE) is passed over until that commits, except
 * by the transaction changing it. On SQLite each statement is atomic and the single writer
 * serialises them.
 */
export async function claimNextJob(db: Db, dialect: DialectName, owner: string, now: string, leaseUntil: string): Promise<KbLinkRow | undefined> {
  const job = await claimJob(db, dialect, owner, now, leaseUntil);
  if (job) await noteClaimed(db, job.bot_id, now);
  return job;
}

/**
 * claimNextJob's claim alone, for a transaction that ends a job and claims the worker's next
 * (CrawlHooks.endJob). Call noteClaimed once it commits.
 */
export async function claimJob(db: Db, dialect: DialectName, owner: string, now: string, leaseUntil: string): Promise<KbLinkRow | undefined> {
  const due = sql`l.status = 'pending' and l.run_after <= ${now} and (l.lease_expires_at is null or l.lease_expires_at < ${now})`;
  const pg = dialect === 'postgres';
  // The running jobs' own index (migration 018): SQLite's planner, without statistics, would
  // count through the bot's whole queue (kb_links_bot_queue); PostgreSQL's chooses it itself.
  const running = pg ? sql`` : sql`indexed by kb_links_running`;
  const pick = (lock: RawBuilder<unknown>) => sql`
    select k.bot_id from knowledge_bases k
    where k.bot_id in (select l.bot_id from kb_links l where ${due})
    order by
      (select count(*) from kb_links r ${running} where r.bot_id = k.bot_id and r.status = 'pending' and r.lease_owner is not null and r.lease_expires_at >= ${now}),
      coalesce(k.last_claimed_at, ''), k.bot_id
    limit 1
    ${lock}`;
  // PostgreSQL: a bot no other claim holds (a claim not yet committed is not seen by the count),
  // else, only when every due bot is held, one whose knowledge base is not being changed (the
  // second is read only when the first finds none: COALESCE evaluates what it needs).
  const candidate = pg
    ? sql`select coalesce((${pick(sql`for no key update of k skip locked`)}), (${pick(sql`for key share of k skip locked`)})) as bot_id`
    : pick(sql``);
  const { rows } = await sql<KbLinkRow>`
    with candidate as (${candidate})
    update kb_links set lease_owner = ${owner}, lease_expires_at = ${leaseUntil}, attempts = attempts + 1
    where id = (
      select l.id from kb_links l
      where l.bot_id = (select bot_id from candidate) and ${due}
      order by l.run_after, l.id
      limit 1
      ${pg ? sql`for update skip locked` : sql``}
    ) and status = 'pending'
    returning *`.execute(db);
  return rows[0];
}

/** The bot's turn in the fair queue moves on. After the claim, in a statement of its own: no lock is held while it waits for one. */
export async function noteClaimed(db: Db, botId: string, now: string): Promise<void> {
  await db
    .updateTable('knowledge_bases')
    .set({ last_claimed_at: now })
    .where('bot_id', '=', botId)
    .where((eb) => eb.or([eb('last_claimed_at', 'is', null), eb('last_claimed_at', '<', now)]))
    .execute();
}

/**
 * Extends a claimed job's lease (the worker's heartbeat). False when the job is no longer
 * this owner's: its link was deleted, re-queued (a new generation) or taken by another
 * worker after the lease ran out.
 */
export async function extendLease(db: Db, job: { id: string; owner: string; generation: number }, leaseUntil: string): Promise<boolean> {
  const result = await db
    .updateTable('kb_links')
    .set({ lease_expires_at: leaseUntil })
    .where('id', '=', job.id)
    .where('lease_owner', '=', job.owner)
    .where('generation', '=', job.generation)
    .where('status', '=', 'pending')
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/**
 * Inside a transaction that stores a page: serialises it with the other stores of the bot's
 * pages until the transaction ends (PostgreSQL, the knowledge base row's lock; SQLite's single
 * writer does so anyway), so that the bot's passage count read next stays true until this store
 * commits. Taken before the link's row, as every change of a link's counts does (migration 014).
 */
export async function lockBotForStore(db: Db, dialect: DialectName, botId: string): Promise<void> {
  if (dialect === 'postgres') await lockKnowledgeBase(db, dialect, botId);
}

/** Passages the bot's links other than `exceptLinkId` hold (the bot's total is kept in knowledge_bases.passages). */
export async function countPassagesOfOtherLinks(db: Db, botId: string, exceptLinkId: string): Promise<number> {
  const { rows } = await sql<{ n: number }>`select
      coalesce((select passages from knowledge_bases where bot_id = ${botId}), 0)
      - coalesce((select passages from kb_links where id = ${exceptLinkId} and bot_id = ${botId}), 0) as n`.execute(db);
  return Number(rows[0]?.n ?? 0);
}

/** A page's passages as storing reads them, a batch at a time (an array of strings is one). */
export interface StoredPassages {
  readonly length: number;
  slice(start: number, end: number): string[];
  /** Their search terms, when computed already. */
  sliceTerms?(start: number, end: number): Array<{ terms: string; term_count: number }>;
}

/** A claimed job, as its worker knows it: the link, the lease's owner and the link's generation at the claim. */
export type JobRef = { id: string; owner: string; generation: number };

/** What the link keeps of the fetch whose passages it publishes (link-refresh.repository.ts): a later fetch is conditional on it. */
export interface FetchedPage {
  etag: string | null;
  lastModified: string | null;
  /** `passagesDigest` of the passages. */
  sha256: string | null;
  /** They are of the page's first part only (its HTML is longer than extract.ts reads). */
  truncated: boolean;
  /** The passages were redacted (enhanced_privacy). */
  redacted: boolean;
}

/** The claimed job's link, if it is still this owner's (not deleted, re-queued or taken over). */
function ownLink(db: Db, job: JobRef) {
  return db.updateTable('kb_links').where('id', '=', job.id).where('lease_owner', '=', job.owner).where('generation', '=', job.generation);
}

/**
 * Ends a claimed job without passages: back to the queue (a retry, with `runAfter`) or failed.
 * False when the link was deleted or re-queued meanwhile (nothing written).
 */
export async function finishJob(
  db: Db,
  job: JobRef,
  outcome: { status: 'pending' | 'failed'; error: string; runAfter?: string; now: string },
): Promise<boolean> {
  const result = await ownLink(db, job)
    .set({
      lease_owner: null,
      lease_expires_at: null,
      updated_at: outcome.now,
      status: outcome.status,
      error: outcome.error,
      ...(outcome.runAfter && { run_after: outcome.runAfter }),
    })
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/**
 * Storing a page's passages, in three steps: `beginStaging` opens a new hidden version of the
 * link's passages, `stagePassages` writes them a batch at a time (each batch its own short
 * transaction, so no commit grows with the page), and `publishStagedPage` makes them the
 * link's visible set in one short transaction, retiring the set they replace. A search thus
 * sees the old passages or the new, never half. Retired sets are deleted by
 * `deleteRetiredPassages`, a batch at a time.
 */
export async function beginStaging(db: Db, job: JobRef, botId: string, now: string): Promise<number | null> {
  return inTransaction(db, async (trx) => {
    const next = await nextVersion(trx, job, { lock: false });
    if (!next) return null;
    await trx.insertInto('kb_hidden_passages').values({ link_id: job.id, version: next.version, bot_id: botId, state: 'staging', created_at: now }).execute();
    return next.version;
  });
}

/**
 * The claimed job's link (null when the job is no longer this owner's) and the version its new
 * passages take: past the visible one and every hidden one. Sets an earlier attempt of this job
 * left half stored (its process stopped) are retired. `lock` (PostgreSQL) holds the link's row
 * until the transaction ends.
 */
async function nextVersion(trx: Db, job: JobRef, options: { lock: boolean }) {
  const link = await trx
    .selectFrom('kb_links')
    .select((eb) => [
      'version',
      'bot_id',
      'passages',
      'term_count',
      eb
        .selectFrom('kb_hidden_passages')
        .select((h) => h.fn.max('version').as('v'))
        .where('link_id', '=', job.id)
        .as('hidden'),
      eb.selectFrom('knowledge_bases').select('knowledge_bases.passages').whereRef('knowledge_bases.bot_id', '=', 'kb_links.bot_id').as('bot_passages'),
    ])
    .where('id', '=', job.id)
    .where('lease_owner', '=', job.owner)
    .where('generation', '=', job.generation)
    .where('status', '=', 'pending')
    .$if(options.lock, (qb) => qb.forUpdate())
    .executeTakeFirst();
  if (!link) return null;
  const hidden = link.hidden === null ? null : Number(link.hidden);
  if (hidden !== null)
    await trx.updateTable('kb_hidden_passages').set({ state: 'retired' }).where('link_id', '=', job.id).where('state', '=', 'staging').execute();
  // The passages the bot's other links hold (the bot's total is kept in knowledge_bases.passages).
  const others = Number(link.bot_passages ?? 0) - Number(link.passages);
  return { link, version: Math.max(Number(link.version), hidden ?? 0) + 1, retiredStaging: hidden !== null, others };
}

/**
 * Writes a part of a staged set (hidden until published) in one transaction, if the set is still
 * being staged; returns its search terms, or null when the set was retired meanwhile (its link
 * deleted, or a later attempt begun): nothing is written then. A batch written into a retired set
 * after the housekeeping had deleted that set's row would be hidden by nothing. On PostgreSQL the
 * batch holds the set's row (FOR KEY SHARE) until it commits: retiring the set does not wait for
 * it, and `deleteRetiredPassages` leaves the set alone until the batch has committed.
 */
export async function stagePassages(db: Db, dialect: DialectName, rows: readonly NewPassage[], version: number): Promise<number | null> {
  const linkId = rows[0]?.link_id;
  if (linkId === undefined) return 0;
  return inTransaction(db, async (trx) => {
    const set = await trx
      .selectFrom('kb_hidden_passages')
      .select('state')
      .where('link_id', '=', linkId)
      .where('version', '=', version)
      .$if(dialect === 'postgres', (q) => q.forKeyShare())
      .executeTakeFirst();
    return set?.state === 'staging' ? writeStaged(trx, rows, version) : null;
  });
}

/**
 * Writes passages of `version` in the caller's transaction; returns their search terms. The rows
 * go in batches of PASSAGE_INSERT_BATCH, each a segment of the search index; a part of a few
 * thousand passages keeps the write lock's hold short.
 */
async function writeStaged(trx: Db, rows: readonly NewPassage[], version: number): Promise<number> {
  let terms = 0;
  for (let i = 0; i < rows.length; i += PASSAGE_INSERT_BATCH) {
    const batch = rows.slice(i, i + PASSAGE_INSERT_BATCH).map((r) => ({ ...r, version }));
    for (const n of (await writePassages(trx, batch)).values()) terms += n;
    // Building a batch's statement is event-loop work (and its search terms too, when the
    // caller has not computed them): one batch per turn, as the writer thread's answers may
    // otherwise arrive within one turn.
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
  return terms;
}

/**
 * Makes a staged set the link's visible passages and ends the job as indexed; the set it
 * replaces is retired. Run it in a transaction. False when the job was no longer this owner's
 * (nothing written: the caller retires the staged set).
 */
export async function publishStagedPage(
  db: Db,
  job: JobRef,
  staged: { version: number; passages: number; termCount: number; now: string; fetched?: FetchedPage },
): Promise<boolean> {
  const before = await db.selectFrom('kb_links').select(['version', 'bot_id', 'passages', 'term_count']).where('id', '=', job.id).executeTakeFirst();
  if (!before || !(await publish(db, job, staged, before))) return false;
  await db.deleteFrom('kb_hidden_passages').where('link_id', '=', job.id).where('version', '=', staged.version).execute();
  return true;
}

/** Passages that `storePageAtOnce` writes in one statement, at most. */
export const AT_ONCE_PASSAGES = PASSAGE_INSERT_BATCH;

/**
 * Stores a page of at most AT_ONCE_PASSAGES passages and publishes them, in the caller's
 * transaction: the staged steps without the staging, since nothing of a transaction is seen
 * before it commits (a page's job writes 6 statements instead of 18). Null when the job was no
 * longer this owner's (nothing written); `{over}` when the bot would then hold more than
 * `maxBotPassages` passages (`over` of them; nothing written: run it where the bot's stores run
 * one at a time, lockBotForStore); else whether it was published, and whether a set was retired
 * (for deleteRetiredPassages).
 */
export async function storePageAtOnce(
  trx: Db,
  dialect: DialectName,
  job: JobRef,
  rows: readonly NewPassage[],
  staged: { now: string; fetched?: FetchedPage },
  maxBotPassages = Number.POSITIVE_INFINITY,
): Promise<{ published: boolean; retired: boolean } | { over: number } | null> {
  if (rows.length > AT_ONCE_PASSAGES) throw new Error(`storePageAtOnce takes at most ${AT_ONCE_PASSAGES} passages`);
  // The row held until the commit (PostgreSQL), so the job stays this owner's until the publish.
  const next = await nextVersion(trx, job, { lock: dialect === 'postgres' });
  if (!next) return null;
  if (next.others + rows.length > maxBotPassages) return { over: next.others + rows.length };
  const { link, version } = next;
  const termCount = await writeStaged(trx, rows, version);
  const published = await publish(trx, job, { version, passages: rows.length, termCount, ...staged }, link);
  if (published === false) {
    // Not reached while the row is held (above); should it be, the set written stays hidden.
    await retireSet(trx, job.id, version, link.bot_id, staged.now);
    return { published: false, retired: true };
  }
  return { published: true, retired: published === 'retired' || next.retiredStaging };
}

/** Makes `version` the link's visible set and ends the job as indexed; retires the set it replaces (when it held any). */
async function publish(
  db: Db,
  job: JobRef,
  staged: { version: number; passages: number; termCount: number; now: string; fetched?: FetchedPage },
  before: { version: number; bot_id: string; passages: number; term_count: number },
): Promise<false | 'retired' | 'published'> {
  const result = await ownLink(db, job)
    .where('status', '=', 'pending')
    .set({
      lease_owner: null,
      lease_expires_at: null,
      updated_at: staged.now,
      status: 'indexed',
      error: null,
      passages: staged.passages,
      term_count: staged.termCount,
      version: staged.version,
      ...(staged.fetched && {
        etag: staged.fetched.etag,
        last_modified: staged.fetched.lastModified,
        content_sha256: staged.fetched.sha256,
        truncated: staged.fetched.truncated ? 1 : 0,
        redacted: staged.fetched.redacted ? 1 : 0,
        checked_at: staged.now,
      }),
    })
    .executeTakeFirst();
  if (Number(result.numUpdatedRows) === 0) return false;
  if (!holdsASet(before)) return 'published';
  await retireSet(db, job.id, Number(before.version), before.bot_id, staged.now);
  return 'retired';
}

/** Hides a set of the link's passages for good; its passages are deleted later (deleteRetiredPassages). */
export async function retireSet(db: Db, linkId: string, version: number, botId: string, now: string): Promise<void> {
  await retireSets(db, [{ link_id: linkId, version, bot_id: botId }], now);
}

async function retireSets(db: Db, sets: ReadonlyArray<{ link_id: string; version: number; bot_id: string }>, now: string): Promise<void> {
  if (sets.length === 0) return;
  await db
    .insertInto('kb_hidden_passages')
    .values(sets.map((set) => ({ link_id: set.link_id, version: Number(set.version), bot_id: set.bot_id, state: 'retired', created_at: now })))
    .onConflict((oc) => oc.columns(['link_id', 'version']).doUpdateSet({ state: 'retired' }))
    .execute();
}

/** Retired sets whose passages one transaction deletes together, at most. */
const RETIRED_SETS_PER_BATCH = 100;

/**
 * Deletes the passages of retired sets (of one link, or of any), oldest sets first, and then the
 * sets' rows: at most PASSAGE_DELETE_BATCH passages per transaction, of as many sets as they
 * come from (up to RETIRED_SETS_PER_BATCH). A deleted link's set is often small: a transaction
 * per set rewrote the bot's excluded ids (kb_excluded) once per set. On PostgreSQL a set that a
 * batch still being written holds (`stagePassages`) is skipped until that batch commits, so its
 * passages are not left behind without their set. Returns how many passages it deleted; stops
 * after about `budget` of them, else once no retired set is left (or none free to take).
 */
export async function deleteRetiredPassages(db: Db, dialect: DialectName, options: { linkId?: string; budget: number }): Promise<number> {
  let deleted = 0;
  while (deleted < options.budget) {
    const n = await inTransaction(db, async (trx) => {
      const sets = await trx
        .selectFrom('kb_hidden_passages')
        .select(['link_id', 'version'])
        .where('state', '=', 'retired')
        .$if(options.linkId !== undefined, (q) => q.where('link_id', '=', options.linkId!))
        .orderBy('created_at')
        .limit(RETIRED_SETS_PER_BATCH)
        .$if(dialect === 'postgres', (q) => q.forUpdate().skipLocked())
        .execute();
      if (sets.length === 0) return null;
      const ofTheSets = (eb: ExpressionBuilder<Database, 'kb_passages' | 'kb_hidden_passages'>) =>
        eb.or(sets.map((set) => eb.and([eb('link_id', '=', set.link_id), eb('version', '=', set.version)])));
      const batch = trx.selectFrom('kb_passages').select('id').where(ofTheSets).limit(PASSAGE_DELETE_BATCH);
      const rows = await trx.deleteFrom('kb_passages').where('id', 'in', batch).returning(['id', 'bot_id', 'term_count']).execute();
      await excludePassages(trx, dialect, rows);
      // Fewer than a batch: none of the sets holds a passage any more.
      if (rows.length < PASSAGE_DELETE_BATCH) await trx.deleteFrom('kb_hidden_passages').where(ofTheSets).where('state', '=', 'retired').execute();
      return rows.length;
    });
    if (n === null) break;
    deleted += n;
  }
  return deleted;
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

const PREFIX_LENGTH = 8;

/**
 * SQLite's full-text index (migrations 002 to 018; replaced by the service's own in 019) kept
 * each term under its bot: prefixed with the first 8 hex digits of the bot's id. Migration 017
 * reads it.
 */
export function searchTermPrefix(botId: string): string {
  return botId.replaceAll('-', '').slice(0, PREFIX_LENGTH).toLowerCase();
}

// ---- a copilot's deletion and purge ----

/**
 * Cancels a bot's queued jobs: its pending links become failed with `reason`, and their
 * generation moves on, so a worker still busy with one writes nothing. Returns how many.
 */
export async function cancelPendingLinks(db: Db, botId: string, reason: string, now: string): Promise<number> {
  const result = await db
    .updateTable('kb_links')
    .set({ status: 'failed', error: reason, lease_owner: null, lease_expires_at: null, generation: sql<number>`generation + 1`, updated_at: now })
    .where('bot_id', '=', botId)
    .where('status', '=', 'pending')
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/** Removes a bot's knowledge base with every link and passage; returns what it removed. */
export async function purgeKnowledgeBase(db: Db, dialect: DialectName, botId: string): Promise<{ links: number; passages: number }> {
  // The knowledge base row before the links, as every change of a link's counts (migration 014).
  await lockKnowledgeBase(db, dialect, botId);
  const links = await db.selectFrom('kb_links').select('id').where('bot_id', '=', botId).execute();
  const passages = await db
    .selectFrom('kb_passages')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('bot_id', '=', botId)
    .executeTakeFirstOrThrow();
  await deleteLinks(
    db,
    links.map((l) => l.id),
    nowTimestamp(),
  );
  await deleteKnowledgeBase(db, botId);
  return { links: links.length, passages: Number(passages.n) };
}
