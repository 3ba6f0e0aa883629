import { AppError } from '../../errors.js';
import * as audit from '../../storage/audit.repository.js';
import type { Storage } from '../../storage/database.js';
import * as kb from '../../storage/knowledge-base.repository.js';
import type { KbLinkRow } from '../../storage/schema.js';
import type { Principal } from '../auth/api-keys.js';
import { getCopilot, isCopilotId } from '../copilots/copilot.service.js';
import { decodeCursor, encodeCursor } from '../cursor.js';
import { nowTimestamp } from '../ids.js';
import { checkLinks } from './links.js';
import { normaliseSearchText, toFts5Query } from './search-query.js';

export const DELETE_MESSAGE = 'Knowledge base and associated links have been successfully deleted.';

export interface KbLink {
  url: string;
  status: string;
  error: string | null;
  passages: number;
  created_at: string;
  updated_at: string;
}

const toLink = (row: KbLinkRow): KbLink => ({
  url: row.url,
  status: row.status,
  error: row.error,
  passages: Number(row.passages),
  created_at: row.created_at,
  updated_at: row.updated_at,
});

/** The request body's links, or 400 naming every offending index. */
export function requireLinks(body: unknown): string[] {
  const links = body !== null && typeof body === 'object' && !Array.isArray(body) ? (body as { links?: unknown }).links : undefined;
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
async function liveBot(storage: Storage, botId: string, notFound: () => AppError): Promise<string> {
  if (!isCopilotId(botId)) throw notFound();
  try {
    return (await getCopilot(storage, botId)).id;
  } catch (err) {
    if (err instanceof AppError && err.code === 'copilot_not_found') throw notFound();
    throw err;
  }
}

/** Queues links for ingestion (a link already there is queued again); creates the knowledge base on the first link. */
export async function addLinks(storage: Storage, botId: string, links: readonly string[]): Promise<{ bot_id: string; links: KbLink[] }> {
  const id = await liveBot(storage, botId, () => new AppError('copilot_not_found', 'No copilot has this id.', { id: botId }));
  const now = nowTimestamp();
  const rows = await storage.db.transaction().execute(async (trx) => {
    await kb.ensureKnowledgeBase(trx, id, now);
    await kb.upsertPendingLinks(trx, id, links, now);
    return kb.findLinksByUrls(trx, id, links);
  });
  const byUrl = new Map(rows.map((r) => [r.url, r]));
  return { bot_id: id, links: links.map((url) => toLink(byUrl.get(url)!)) };
}

export async function listLinks(
  storage: Storage,
  botId: string,
  page: { limit: number; cursor?: string },
): Promise<{ body: { bot_id: string; links: KbLink[] }; nextCursor: string | null }> {
  const id = await liveBot(storage, botId, () => kbNotFound(botId));
  const after = page.cursor === undefined ? undefined : decodeCursor(page.cursor);
  if (!(await kb.findKnowledgeBase(storage.readDb, id))) throw kbNotFound(botId);
  const rows = await kb.listLinks(storage.readDb, id, { limit: page.limit + 1, after });
  const more = rows.length > page.limit;
  const items = more ? rows.slice(0, page.limit) : rows;
  const last = items[items.length - 1];
  return {
    body: { bot_id: id, links: items.map(toLink) },
    nextCursor: more && last ? encodeCursor({ createdAt: last.created_at, id: last.id }) : null,
  };
}

export async function searchKnowledgeBase(storage: Storage, botId: string, q: string, limit: number) {
  const id = await liveBot(storage, botId, () => kbNotFound(botId));
  if (!(await kb.findKnowledgeBase(storage.readDb, id))) throw kbNotFound(botId);
  const query = storage.dialect === 'postgres' ? normaliseSearchText(q) : toFts5Query(q);
  const hits = query === null ? [] : await kb.searchPassages(storage.readDb, storage.dialect, id, query, limit);
  return { bot_id: id, query: q, results: hits.map((h) => ({ url: h.url, passage: h.seq, content: h.content, score: h.score })) };
}

const yieldToEventLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * The interface's delete: removes the named links and all their passages in one
 * transaction; the knowledge base goes with its last link. Written to the audit log.
 */
export async function deleteLinks(storage: Storage, botId: string, links: readonly string[], actor: Principal) {
  const id = await liveBot(storage, botId, () => kbNotFound(botId));
  const result = await storage.db.transaction().execute(async (trx) => {
    if (!(await kb.lockKnowledgeBase(trx, storage.dialect, id))) throw kbNotFound(botId);
    const found = await kb.findLinksByUrls(trx, id, links);
    const foundUrls = new Set(found.map((r) => r.url));
    await kb.deleteLinksAndPassages(
      trx,
      found.map((r) => r.id),
      storage.dialect === 'sqlite' ? yieldToEventLoop : async () => undefined,
    );
    const remaining = await kb.countLinks(trx, id);
    if (remaining === 0) await kb.deleteKnowledgeBase(trx, id);
    const deleted = links.filter((url) => foundUrls.has(url));
    const notFound = links.filter((url) => !foundUrls.has(url));
    await audit.insertAuditEntry(trx, {
      at: nowTimestamp(),
      actor_key_id: actor.kind === 'key' ? actor.keyId : null,
      action: 'knowledgebase.delete_links',
      bot_id: id,
      details: JSON.stringify({ deleted_links: deleted, not_found_links: notFound, knowledge_base_deleted: remaining === 0 }),
    });
    return { deleted, notFound };
  });
  return { message: DELETE_MESSAGE, deleted_links: result.deleted, not_found_links: result.notFound };
}

export async function listAudit(storage: Storage, page: { limit: number; cursor?: string; botId?: string }) {
  let beforeId: number | undefined;
  if (page.cursor !== undefined) {
    if (!/^\d{1,15}$/.test(page.cursor)) throw new AppError('invalid_cursor', 'The cursor is not one this service issued.');
    beforeId = Number(page.cursor);
  }
  const rows = await audit.listAuditEntries(storage.readDb, { limit: page.limit + 1, beforeId, botId: page.botId });
  const more = rows.length > page.limit;
  const items = (more ? rows.slice(0, page.limit) : rows).map((r) => ({
    id: Number(r.id),
    at: r.at,
    actor_key_id: r.actor_key_id,
    action: r.action,
    bot_id: r.bot_id,
    details: JSON.parse(r.details) as unknown,
  }));
  return { items, nextCursor: more ? String(items[items.length - 1]!.id) : null };
}
