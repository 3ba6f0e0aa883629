/**
 * Keeping knowledge-base links current (issue 16 §2): the check queue and what a check writes.
 *
 * A check is due when a link's `check_after` has come (and the link is not pending: a pending
 * link is being ingested, which is conditional too). `check_after` is set by the schedule (the
 * links of a copilot with smart_sync = 1, SYNC_INTERVAL_MS apart, jittered) and by POST
 * …/refresh (now). The ingestion worker claims due checks through the same fair order as its
 * jobs, after them: a bot's checks never delay another bot's ingestion, and among bots the one
 * served least recently goes first.
 *
 * The claim is one statement that moves the link's `check_after` to its next check (or clears
 * it) and records `checked_at`: it is the lease (no other instance takes the link until then)
 * and the only write a check of an unchanged page makes. A check cut off by a crash is simply
 * done at the link's next check.
 */
import { sql, type Expression, type SqlBool } from 'kysely';
import type { DialectName } from './database.js';
import { inTransaction } from './transaction.js';
import type { Db, KbLinkRow } from './schema.js';

/** A link as a check found it: the generation guards every later write (a re-add or delete meanwhile wins). */
export interface CheckedLink {
  id: string;
  generation: number;
}

// A link that was ever indexed is kept current; one that never was is only retried on request.
const KEPT_CURRENT = sql<SqlBool>`(status = 'indexed' or content_sha256 is not null)`;

/** A claimed check: the link as it was, and whether its copilot has enhanced_privacy = 1. */
export type ClaimedCheck = KbLinkRow & { enhanced_privacy: number };

/**
 * Claims the next due check, fairly across bots (least recently served first), on bots whose
 * copilot is not deleted. Sets `checked_at` and the next `check_after` (`nextCheck` while the
 * copilot has smart_sync = 1 and the link was indexed, else none), and the bot's fair-queue
 * time. Unlike a job's claim, the bot's row is not locked: a check writes no passages, so an add
 * or a delete of the bot's links need not be waited for (a link being deleted is locked, and
 * skipped), and two workers checking one bot's links never pass each other over (skipping a
 * locked bot row made every other claim come back empty).
 */
export async function claimNextCheck(db: Db, dialect: DialectName, now: string, nextCheck: string): Promise<ClaimedCheck | undefined> {
  const due = sql`l.check_after <= ${now} and l.status <> 'pending'`;
  const pg = dialect === 'postgres';
  const claim = sql`
    update kb_links set checked_at = ${now},
      check_after = case when ${KEPT_CURRENT}
        and exists (select 1 from copilots c where c.id = kb_links.bot_id and c.smart_sync = 1) then ${nextCheck} else null end
    where id = (
      select l.id from kb_links l
      where l.bot_id = (select bot_id from candidate) and ${due}
      order by l.check_after, l.id
      limit 1
      ${pg ? sql`for update skip locked` : sql``}
    ) and status <> 'pending' and check_after <= ${now}
    returning *, (select c.enhanced_privacy from copilots c where c.id = kb_links.bot_id) as enhanced_privacy`;
  const candidate = sql`
    candidate as (
      select k.bot_id from knowledge_bases k
      where k.bot_id in (select l.bot_id from kb_links l where ${due})
        and exists (select 1 from copilots c where c.id = k.bot_id and c.deleted_at is null)
      order by coalesce(k.last_claimed_at, ''), k.bot_id
      limit 1
    )`;
  const touch = (bot: Expression<string>) => sql`
    update knowledge_bases set last_claimed_at = ${now}
    where bot_id = ${bot} and (last_claimed_at is null or last_claimed_at < ${now})`;
  if (pg) {
    // One statement, committed without waiting for the disk: a claim is bookkeeping, and lost in
    // a crash the check is only done again. The commit's wait was most of an unchanged page's cost.
    return inTransaction(db, async (trx) => {
      await sql`set local synchronous_commit = off`.execute(trx);
      const { rows } = await sql<ClaimedCheck>`
        with ${candidate}, claimed as (${claim}), touched as (${touch(sql`(select bot_id from claimed)`)})
        select * from claimed`.execute(trx);
      return rows[0];
    });
  }
  // SQLite: no data-modifying CTEs; its single writer makes the two statements cheap.
  const { rows } = await sql<ClaimedCheck>`with ${candidate} ${claim}`.execute(db);
  const link = rows[0];
  if (link) await touch(sql`${link.bot_id}`).execute(db);
  return link;
}

/**
 * The schedule: every link kept current of a copilot with smart_sync = 1 that has no check
 * scheduled gets one at `nextCheck` (links indexed since the last round, or all of a copilot
 * whose smart_sync was just turned on). Returns how many.
 */
export async function scheduleChecks(db: Db, nextCheck: string): Promise<number> {
  const result = await db
    .updateTable('kb_links')
    .set({ check_after: nextCheck })
    .where('check_after', 'is', null)
    .where('status', '<>', 'pending')
    .where(KEPT_CURRENT)
    .where('bot_id', 'in', (eb) => eb.selectFrom('copilots').select('id').where('smart_sync', '=', 1).where('deleted_at', 'is', null))
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/** POST …/refresh: every link of the bot that is not pending is due for a check now. Returns how many. */
export async function requestChecks(db: Db, botId: string, now: string): Promise<number> {
  const result = await db.updateTable('kb_links').set({ check_after: now }).where('bot_id', '=', botId).where('status', '<>', 'pending').executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/** The check of a link stopped with the worker (shutdown): due again at once. */
export async function requeueCheck(db: Db, link: CheckedLink, now: string): Promise<void> {
  await notPending(db, link).set({ check_after: now }).execute();
}

/** Whether the bot's copilot has enhanced_privacy = 1 (its passages are stored redacted). */
export async function isPrivacyBot(db: Db, botId: string): Promise<boolean> {
  const row = await db.selectFrom('copilots').select('enhanced_privacy').where('id', '=', botId).executeTakeFirst();
  return Number(row?.enhanced_privacy ?? 0) === 1;
}

function notPending(db: Db, link: CheckedLink) {
  return db.updateTable('kb_links').where('id', '=', link.id).where('generation', '=', link.generation).where('status', '<>', 'pending');
}

export interface Validators {
  etag: string | null;
  lastModified: string | null;
}

/**
 * A check found the page unchanged. Nothing is written unless there is something to say: the
 * link had failed (the page is back: indexed again, its passages are still there) or the
 * server's validators changed (kept, so that the next check can be answered 304). True when
 * it wrote.
 */
export async function recordUnchanged(db: Db, link: CheckedLink & { status: string } & Validators, fetched: Validators, now: string): Promise<boolean> {
  const newValidators = (fetched.etag ?? link.etag) !== link.etag || (fetched.lastModified ?? link.lastModified) !== link.lastModified;
  if (link.status === 'indexed' && !newValidators) return false;
  const result = await notPending(db, link)
    .set({
      ...(link.status !== 'indexed' && { status: 'indexed', error: null, updated_at: now }),
      ...(newValidators && { etag: fetched.etag ?? link.etag, last_modified: fetched.lastModified ?? link.lastModified }),
    })
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/**
 * A check found the page changed: the link goes back to the ingestion queue (pending, due now),
 * whose job fetches it again and replaces its passages in one transaction. Its passages stay
 * visible until then. False when the link was re-added or deleted meanwhile.
 */
export async function queueChanged(db: Db, link: CheckedLink, now: string): Promise<boolean> {
  const result = await notPending(db, link)
    .set({ status: 'pending', error: null, attempts: 0, run_after: now, lease_owner: null, lease_expires_at: null, updated_at: now })
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/**
 * A check found the page gone (404/410) or no longer indexable: the link is failed with the
 * reason; its passages stay (search still finds them) until the link is deleted.
 */
export async function recordCheckFailed(db: Db, link: CheckedLink, error: string, now: string): Promise<boolean> {
  const result = await notPending(db, link).set({ status: 'failed', error, updated_at: now }).executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/**
 * A pending job found the page unchanged (304, or the same passages): it ends as indexed with
 * its passages as they are (a re-added link is never indexed twice). False when the job was no
 * longer this owner's.
 */
export async function finishUnchangedJob(
  db: Db,
  job: { id: string; owner: string; generation: number },
  fetched: Validators & { previous: Validators },
  now: string,
): Promise<boolean> {
  const result = await db
    .updateTable('kb_links')
    .where('id', '=', job.id)
    .where('lease_owner', '=', job.owner)
    .where('generation', '=', job.generation)
    .where('status', '=', 'pending')
    .set({
      status: 'indexed',
      error: null,
      lease_owner: null,
      lease_expires_at: null,
      updated_at: now,
      checked_at: now,
      etag: fetched.etag ?? fetched.previous.etag,
      last_modified: fetched.lastModified ?? fetched.previous.lastModified,
    })
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}
