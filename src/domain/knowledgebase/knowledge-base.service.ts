import { AppError } from '../../errors.js';
import { recordAudit } from '../audit.js';
import type { DialectName, Storage } from '../../storage/database.js';
import * as kb from '../../storage/knowledge-base.repository.js';
import type { Db, KbLinkRow } from '../../storage/schema.js';
import { asScan } from '../scans.js';
import { inTransaction } from '../../storage/transaction.js';
import type { Principal } from '../auth/api-keys.js';
import { getCopilot, isCopilotId } from '../copilots/copilot.service.js';
import { decodeCursor, pageByCreation } from '../cursor.js';
import { nowTimestamp } from '../ids.js';
import { asLogged, canonicalLink, checkLinks, uniqueCanonicalLinks } from './links.js';
import { queryTerms } from '../../text/search-terms.js';
import { isPrivacyBot, requestChecks } from '../../storage/link-refresh.repository.js';
import type { TaskThreads } from '../../threads/task-threads.js';
import { LINK_STATUSES, type KnowledgeBaseLink, type KnowledgeBaseLinks, type LinksDeleted, type LinksRefreshed, type SearchResults } from '../wire.js';

export const DELETE_MESSAGE = 'Knowledge base and associated links have been successfully deleted.';

// A status this service never writes reads as failed: the link needs adding again.
const storedStatus = (value: string) => LINK_STATUSES.find((s) => s === value) ?? 'failed';

const toLink = (row: KbLinkRow): KnowledgeBaseLink => ({
  url: row.url,
  status: storedStatus(row.status),
  error: row.error,
  passages: Number(row.passages),
  created_at: row.created_at,
  updated_at: row.updated_at,
  truncated: Number(row.truncated) === 1,
});

/** The request body's links, or 400 naming every offending index. */
export function requireLinks(body: unknown): string[] {
  const links = body !== null && typeof body === 'object' && !Array.isArray(body) && 'links' in body ? body.links : undefined;
  const checked = checkLinks(links);
  if ('problems' in checked) {
    throw new AppError('invalid_request', 'The body must be {"links": [...]} with 1 to 1000 absolute http(s) URLs of at most 2048 characters.', {
      problems: checked.problems,
    });
  }
  return checked.links;
}

const kbNotFound = (botId: string) => new AppError('knowledge_base_not_found', 'No knowledge base exists for this bot.', { bot_id: botId });

/** The bot's canonical id when it is a live copilot; 404 otherwise (soft-deleted copilots included). */
export async function liveBot(db: Db, botId: string, notFound: () => AppError, options: { lock?: boolean } = {}): Promise<string> {
  if (!isCopilotId(botId)) throw notFound();
  try {
    return (await getCopilot(db, botId, options)).id;
  } catch (err) {
    if (err instanceof AppError && err.code === 'copilot_not_found') throw notFound();
    throw err;
  }
}

/**
 * Queues links for ingestion (a link already there is queued again); creates the knowledge base
 * on the first link. `maxPendingLinks` (KB_MAX_PENDING_LINKS_PER_BOT) bounds the bot's links
 * waiting to be indexed: a request that would go over it queues nothing (429 quota_exceeded).
 */
export async function addLinks(
  db: Db,
  botId: string,
  sent: readonly string[],
  limits: { maxPendingLinks?: number } = {},
  actor?: Principal,
): Promise<KnowledgeBaseLinks> {
  // One page, one link: stored, answered and counted in the canonical form, each page once.
  const links = uniqueCanonicalLinks(sent);
  const now = nowTimestamp();
  const { id, rows } = await inTransaction(db, async (trx) => {
    // The copilot's row locked first: a deletion racing this add waits for it (and cancels what it
    // queues) or comes first (404).
    const id = await liveBot(trx, botId, () => new AppError('copilot_not_found', 'No copilot has this id.', { id: botId }), { lock: true });
    // Then the knowledge base row (PostgreSQL): adds to one bot count one at a time.
    await kb.ensureKnowledgeBase(trx, id, now);
    if (limits.maxPendingLinks !== undefined) await checkPendingLimit(trx, id, links, limits.maxPendingLinks);
    await kb.upsertPendingLinks(trx, id, links, now);
    // enhanced_privacy: the audit log keeps the pages, not their query strings.
    await recordAudit(trx, actor, 'knowledgebase.add_links', id, { links: links.map(asLogged(await isPrivacyBot(trx, id))) });
    return { id, rows: await kb.findLinksByUrls(trx, id, links) };
  });
  const byUrl = new Map(rows.map((r) => [r.url, r]));
  return { bot_id: id, links: links.map((url) => toLink(byUrl.get(url)!)) };
}

/** 429 when queueing `links` (those not pending already) would take the bot over `limit` pending links. */
async function checkPendingLimit(trx: Db, botId: string, links: readonly string[], limit: number): Promise<void> {
  const alreadyPending = (await kb.findLinksByUrls(trx, botId, links)).filter((r) => r.status === 'pending').length;
  const adding = links.length - alreadyPending;
  if (adding === 0) return;
  const pending = await kb.countPendingLinks(trx, botId);
  if (pending + adding <= limit) return;
  throw new AppError(
    'quota_exceeded',
    `This knowledge base has ${pending} links waiting to be indexed; adding ${adding} more would go over its limit of ${limit} pending links. Try again once some have been indexed.`,
    { limit, pending, adding },
  );
}

export async function listLinks(
  db: Db,
  botId: string,
  page: { limit: number; cursor?: string },
): Promise<{ body: KnowledgeBaseLinks; nextCursor: string | null }> {
  const id = await liveBot(db, botId, () => kbNotFound(botId));
  const after = page.cursor === undefined ? undefined : decodeCursor(`links:${id}`, page.cursor);
  if (!(await kb.findKnowledgeBase(db, id))) throw kbNotFound(botId);
  const { rows, nextCursor } = pageByCreation(await kb.listLinks(db, id, { limit: page.limit + 1, after }), page.limit, `links:${id}`);
  return { body: { bot_id: id, links: rows.map(toLink) }, nextCursor };
}

/**
 * POST …/refresh: every link of the bot not already waiting to be indexed is due for a check
 * now (link-refresh.repository.ts): a conditional GET through the ingestion queue; an unchanged
 * page writes nothing, a changed one is indexed again. Works whatever the copilot's smart_sync.
 */
export async function refreshLinks(db: Db, botId: string, actor?: Principal): Promise<LinksRefreshed> {
  return inTransaction(db, async (trx) => {
    const id = await liveBot(trx, botId, () => kbNotFound(botId), { lock: true });
    if (!(await kb.findKnowledgeBase(trx, id))) throw kbNotFound(botId);
    const queued = await requestChecks(trx, id, nowTimestamp());
    await recordAudit(trx, actor, 'knowledgebase.refresh', id, { queued });
    return { bot_id: id, queued, pending: await kb.countPendingLinks(trx, id) };
  });
}

/**
 * Searches the bot's passages on a scan connection, in the bot's turn (storage.scan), scored on
 * a task thread (`scorer`): the checks before it are short reads on the read connection. A bot
 * with too many searches waiting already is answered 429 at once, and so is a search stopped
 * at its time limit.
 */
export async function searchKnowledgeBase(
  storage: Pick<Storage, 'readDb' | 'dialect' | 'scan'>,
  scorer: Pick<TaskThreads, 'scoreOnThread'>,
  botId: string,
  q: string,
  limit: number,
): Promise<SearchResults> {
  const id = await liveBot(storage.readDb, botId, () => kbNotFound(botId));
  if (!(await kb.findKnowledgeBase(storage.readDb, id))) throw kbNotFound(botId);
  const terms = queryTerms(q);
  const hits = await asScan(
    storage,
    id,
    (db) => kb.searchPassages(db, storage.dialect, id, terms, limit, (blobs, totals, n, excluded) => scorer.scoreOnThread(blobs, totals, n, excluded)),
    {
      waiting: (n) => `This knowledge base has ${n} searches waiting already, its limit; try again when they have answered.`,
      timedOut: (ms) =>
        `This search ran past its time limit of ${ms} ms and was stopped: too many of this knowledge base's passages hold its words; search without the words most passages hold.`,
    },
  );
  return { bot_id: id, query: q, results: hits.map((h) => ({ url: h.url, passage: h.seq, content: h.content, score: h.score })) };
}

/**
 * The interface's delete: removes the named links and hides all their passages in one
 * transaction (they are deleted in the background, a batch at a time: kb.deleteLinks); the
 * knowledge base goes with its last link. Written to the audit log.
 */
export async function deleteLinks(db: Db, dialect: DialectName, botId: string, links: readonly string[], actor: Principal): Promise<LinksDeleted> {
  const result = await inTransaction(db, async (trx) => {
    const id = await liveBot(trx, botId, () => kbNotFound(botId));
    if (!(await kb.lockKnowledgeBase(trx, dialect, id))) throw kbNotFound(botId);
    // Any spelling finds the stored (canonical) link; the answer keeps the caller's spellings.
    const canonicalOf = new Map(links.map((url) => [url, canonicalLink(url)]));
    const found = await kb.findLinksByUrls(trx, id, [...new Set(canonicalOf.values())]);
    const foundCanonical = new Set(found.map((r) => r.url));
    const foundUrls = new Set(links.filter((url) => foundCanonical.has(canonicalOf.get(url)!)));
    await kb.deleteLinks(
      trx,
      found.map((r) => r.id),
      nowTimestamp(),
    );
    const remaining = await kb.countLinks(trx, id);
    if (remaining === 0) await kb.deleteKnowledgeBase(trx, id);
    const deleted = links.filter((url) => foundUrls.has(url));
    const notFound = links.filter((url) => !foundUrls.has(url));
    const logged = asLogged(await isPrivacyBot(trx, id));
    await recordAudit(trx, actor, 'knowledgebase.delete_links', id, {
      deleted_links: deleted.map(logged),
      not_found_links: notFound.map(logged),
      knowledge_base_deleted: remaining === 0,
    });
    return { deleted, notFound };
  });
  return { message: DELETE_MESSAGE, deleted_links: result.deleted, not_found_links: result.notFound };
}
