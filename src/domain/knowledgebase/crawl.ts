/**
 * Crawls (issue 16 §2; docs/crawling.md). A crawl turns a site, from a start
 * URL or a sitemap, into ordinary links of the bot's knowledge base, each page once:
 *
 * 1. POST …/crawl stores the crawl (`queued`).
 * 2. Its start (CrawlRunner.startNext, in one instance: a lease) fetches the site's robots.txt
 *    and, for a sitemap crawl, the sitemap (an index's sitemaps too), and fills the frontier
 *    (`crawl_pages`) with the URLs in scope that robots.txt allows, at most `max_pages`.
 * 3. The frontier feeds the ingestion queue a few pages at a time: at most HOST_CONCURRENCY
 *    pending links per crawl (one with a Crawl-delay, each due a delay after the one before),
 *    so the queue's fairness across bots holds and the site gets a few requests at once. The
 *    ingestion worker fetches them like any link (guarded fetch, quotas) and asks this module
 *    (CrawlHooks) to read each one's links and canonical URL (on a task thread) and, when the
 *    job ends, to settle the page and queue the next ones.
 * 4. The crawl is `done` when no page waits or is queued; a cancel stops new fetches.
 */
import { randomUUID } from 'node:crypto';
import net from 'node:net';
import { AppError } from '../../errors.js';
import { FetchError, fetchGuarded, type FetchPolicy, isTransientFetchError } from '../../net/guarded-fetch.js';
import { isAddressAllowed } from '../../net/address-policy.js';
import * as crawls from '../../storage/crawl.repository.js';
import type { Storage } from '../../storage/database.js';
import * as kb from '../../storage/knowledge-base.repository.js';
import { isPrivacyBot } from '../../storage/link-refresh.repository.js';
import type { CrawlPageRow, CrawlRow, Db, KbLinkRow } from '../../storage/schema.js';
import { inTransaction } from '../../storage/transaction.js';
import type { PassageList } from './passages.js';
import type { CrawledPage, SitemapRead } from './crawl-page.js';
import {
  crawlDelayMs,
  type CrawlScope,
  MAX_PATTERN_WILDCARD_CHARS,
  MAX_ROBOTS_CHARS,
  parseRobots,
  pathPrefixOf,
  patternProblem,
  robotsProblem,
  scopeChecker,
  wildcardChars,
} from './crawl-scope.js';
import { USER_AGENT } from '../../net/user-agent.js';
import { ExtractError } from './extract.js';
import { liveBot } from './knowledge-base.service.js';
import { asLogged, canonicalLink, checkLinks, loggedUrl } from './links.js';
import type { Principal } from '../auth/api-keys.js';
import { recordAudit } from '../audit.js';
import { getCopilot } from '../copilots/copilot.service.js';
import { decodeCursor, pageByCreation } from '../cursor.js';
import { formatMicros, nowTimestamp, timestampIn } from '../ids.js';
import { type Crawl, type CrawlRequest, type Crawls, DEFAULT_MAX_DEPTH, DEFAULT_MAX_PAGES, MAX_MAX_PAGES } from '../crawl-wire.js';

/** Pending links a crawl without a Crawl-delay keeps in the queue at once: its requests in flight to the site, at most. */
export const HOST_CONCURRENCY = 4;
/** Crawls of one bot not finished yet (queued or running), at most. */
export const MAX_ACTIVE_CRAWLS_PER_BOT = 3;
/** Sitemaps of a sitemap index read, at most. */
export const MAX_SITEMAPS = 100;
/** How long a crawl's start reads the sitemaps of an index, at most; it then starts with the URLs found. */
export const SITEMAPS_READ_MS = 120_000;
/** The longest Crawl-delay a crawl honours (one hour): a site asking for more is not crawled. */
export const MAX_CRAWL_DELAY_MS = 3_600_000;
/** How long a finished crawl keeps its pages (longer than any job of it still running may need them). */
export const FINISHED_PAGES_KEPT_MS = 60 * 60_000;
/** Pages of finished crawls deleted per round of the crawl job, at most (one short statement). */
const PAGES_DELETED_PER_ROUND = 5_000;
/** Attempts at a crawl's start when robots.txt or the sitemap cannot be fetched for a passing reason. */
const START_ATTEMPTS = 3;
const START_BACKOFF_MS = 2000;

// ---------------------------------------------------------------------------------------------
// Requests

interface CheckedRequest {
  mode: 'links' | 'sitemap';
  url: string;
  maxPages: number;
  maxDepth: number;
  include: string[];
  exclude: string[];
}

const invalid = (message: string, details?: unknown) => new AppError('invalid_request', message, details);

/** The request as the schema let it through, checked further: one URL, fetchable, patterns well formed. */
export function checkCrawlRequest(body: CrawlRequest, allowNetworks: readonly string[]): CheckedRequest {
  if ((body.url === undefined) === (body.sitemap === undefined)) throw invalid('Give either "url" (a start URL) or "sitemap" (a sitemap URL), not both.');
  const field = body.url !== undefined ? 'url' : 'sitemap';
  const given = (body.url ?? body.sitemap)!;
  const checked = checkLinks([given]);
  if ('problems' in checked) throw invalid(`"${field}" ${checked.problems[0]!.reason}`, { field });
  const url = canonicalLink(given);
  const host = new URL(url).hostname.replace(/^\[|\]$/g, '');
  if (net.isIP(host) !== 0 && !isAddressAllowed(host, allowNetworks)) {
    throw new AppError('address_not_allowed', `The address ${host} is not allowed: only public addresses can be fetched.`, { field, url });
  }
  const include = body.include ?? [];
  const exclude = body.exclude ?? [];
  for (const [name, list] of [
    ['include', include],
    ['exclude', exclude],
  ] as const) {
    for (const [index, pattern] of list.entries()) {
      const problem = patternProblem(pattern);
      if (problem !== null) throw invalid(`"${name}" pattern ${index} ${problem}`, { field: name, index });
    }
  }
  const wildcard = [...include, ...exclude].reduce((sum, pattern) => sum + wildcardChars(pattern), 0);
  if (wildcard > MAX_PATTERN_WILDCARD_CHARS) {
    throw invalid(`The include and exclude patterns hold ${wildcard} characters after a "*"; at most ${MAX_PATTERN_WILDCARD_CHARS} are allowed.`, {
      max_wildcard_chars: MAX_PATTERN_WILDCARD_CHARS,
    });
  }
  return {
    mode: field === 'url' ? 'links' : 'sitemap',
    url,
    maxPages: body.max_pages ?? DEFAULT_MAX_PAGES,
    maxDepth: body.max_depth ?? DEFAULT_MAX_DEPTH,
    include,
    exclude,
  };
}

const crawlNotFound = (id: string) => new AppError('crawl_not_found', 'This knowledge base has no crawl with this id.', { crawl_id: id });

/** Stores a crawl (queued); its knowledge base is created with it. 429 when the bot has MAX_ACTIVE_CRAWLS_PER_BOT unfinished. */
export async function createCrawl(db: Db, botId: string, request: CheckedRequest, actor?: Principal): Promise<Crawl> {
  const now = nowTimestamp();
  const id = randomUUID();
  const url = new URL(request.url);
  const row: CrawlRow = {
    id,
    bot_id: botId,
    mode: request.mode,
    start_url: request.url,
    origin: url.origin,
    path_prefix: request.mode === 'links' ? pathPrefixOf(request.url) : '/',
    max_pages: request.maxPages,
    max_depth: request.mode === 'links' ? request.maxDepth : 0,
    include_patterns: JSON.stringify(request.include),
    exclude_patterns: JSON.stringify(request.exclude),
    state: 'queued',
    discovered: 0,
    blocked: 0,
    pages_queued: 0,
    pages_indexed: 0,
    pages_failed: 0,
    pages_skipped: 0,
    pages_fetched: 0,
    robots_txt: null,
    crawl_delay_ms: 0,
    next_fetch_at: now,
    error: null,
    attempts: 0,
    run_after: now,
    lease_owner: null,
    lease_expires_at: null,
    created_at: now,
    started_at: null,
    finished_at: null,
    updated_at: now,
  };
  const stored = await inTransaction(db, async (trx) => {
    // The copilot's row locked first, as links are added (knowledge-base.service.ts).
    const bot = await liveBot(trx, botId, () => new AppError('copilot_not_found', 'No copilot has this id.', { id: botId }), { lock: true });
    // Then the knowledge base row (PostgreSQL): the bot's crawls are counted one request at a time.
    await kb.ensureKnowledgeBase(trx, bot, now);
    const active = await crawls.countActiveCrawls(trx, bot);
    if (active >= MAX_ACTIVE_CRAWLS_PER_BOT) {
      throw new AppError('quota_exceeded', `This knowledge base has ${active} crawls not finished yet, its limit; wait for one to finish or cancel one.`, {
        limit: MAX_ACTIVE_CRAWLS_PER_BOT,
        active,
      });
    }
    const stored = { ...row, bot_id: bot };
    await crawls.insertCrawl(trx, stored);
    // enhanced_privacy: the audit log keeps the start or sitemap URL, not its query string (as a link's).
    const logged = asLogged(await isPrivacyBot(trx, bot))(request.url);
    await recordAudit(trx, actor, 'knowledgebase.crawl', bot, {
      crawl_id: id,
      [request.mode === 'links' ? 'url' : 'sitemap']: logged,
      max_pages: row.max_pages,
      max_depth: row.max_depth,
      include: request.include,
      exclude: request.exclude,
    });
    return stored;
  });
  return toCrawl(stored);
}

export async function getCrawl(db: Db, botId: string, crawlId: string): Promise<Crawl> {
  const bot = await liveBot(db, botId, () => crawlNotFound(crawlId));
  // Stored in lower case (randomUUID); read whatever the case, as copilot and bot ids are.
  const row = await crawls.findCrawl(db, bot, crawlId.toLowerCase());
  if (!row) throw crawlNotFound(crawlId);
  return toCrawl(row);
}

export async function listCrawls(db: Db, botId: string, page: { limit: number; cursor?: string }): Promise<{ body: Crawls; nextCursor: string | null }> {
  const bot = await liveBot(db, botId, () => new AppError('knowledge_base_not_found', 'No knowledge base exists for this bot.', { bot_id: botId }));
  const before = page.cursor === undefined ? undefined : decodeCursor(`crawls:${bot}`, page.cursor);
  const { rows, nextCursor } = pageByCreation(await crawls.listCrawls(db, bot, { limit: page.limit + 1, before }), page.limit, `crawls:${bot}`);
  return { body: { bot_id: bot, crawls: rows.map(toCrawl) }, nextCursor };
}

/**
 * Cancels a crawl: no new fetch of it starts. Its waiting pages are dropped; its queued links
 * not claimed by a worker leave the queue (a link the crawl created is deleted, one it queued
 * again goes back to what it was); a page being fetched finishes as an ordinary link, and one
 * claimed whose fetch has not begun leaves the queue when its worker looks it up (pageOf). A
 * crawl that has finished is answered as it is.
 */
export async function cancelCrawl(storage: Storage, botId: string, given: string, actor?: Principal): Promise<Crawl> {
  const { db, dialect } = storage;
  const bot = await liveBot(db, botId, () => crawlNotFound(given));
  const crawlId = given.toLowerCase();
  await inTransaction(db, async (trx) => {
    const crawl = await crawls.lockCrawl(trx, dialect, crawlId);
    if (!crawl || crawl.bot_id !== bot) throw crawlNotFound(given);
    if (crawl.state !== 'queued' && crawl.state !== 'running') return;
    await stopCrawl(trx, crawl, 'cancelled', null);
    await recordAudit(trx, actor, 'knowledgebase.cancel_crawl', bot, { crawl_id: crawlId });
  });
  return getCrawl(db, bot, crawlId);
}

/** Ends a crawl (cancelled, or failed with `error`): its pages not started leave the queue. Run it in a transaction holding the crawl's row. */
async function stopCrawl(trx: Db, crawl: CrawlRow, state: 'cancelled' | 'failed', error: string | null): Promise<void> {
  const now = nowTimestamp();
  await crawls.updateCrawl(trx, crawl.id, { state, error, finished_at: now, updated_at: now, lease_owner: null, lease_expires_at: null });
  await crawls.cancelWaitingPages(trx, crawl.id, now);
  for (const page of await crawls.queuedPages(trx, crawl.id)) {
    const link = await crawls.findLink(trx, crawl.bot_id, page.url);
    // Claimed: its worker drops it before the fetch (CrawlRunner.pageOf), or it is being fetched and finishes.
    if (link && !(await dropLink(trx, link, page, { notRunningAt: now }, now))) continue;
    await crawls.updatePage(trx, crawl.id, page.url, { state: 'cancelled', updated_at: now });
  }
}

/**
 * Takes a link the crawl queued out of the queue: deleted when the crawl created it, put back
 * as it was when the crawl queued it again; left alone when someone else had queued it. False
 * when `which` no longer holds (the link is being fetched, or is not the claimed job's any more).
 */
async function dropLink(
  trx: Db,
  link: KbLinkRow,
  page: CrawlPageRow,
  which: { owner?: string; generation?: number; notRunningAt?: string },
  now: string,
): Promise<boolean> {
  const target = { id: link.id, ...which };
  if (page.prior_status === null) {
    if (!(await crawls.linkIsOurs(trx, target))) return false;
    await kb.deleteLinks(trx, [link.id], now);
    return true;
  }
  if (page.prior_status === 'pending') return crawls.linkIsOurs(trx, target);
  return crawls.restoreLink(trx, target, { status: page.prior_status, error: page.prior_error }, now);
}

/** The wire form of a crawl: its progress is the counts its row keeps (migration 015), one row read. */
function toCrawl(row: CrawlRow): Crawl {
  return {
    crawl_id: row.id,
    bot_id: row.bot_id,
    url: row.mode === 'links' ? row.start_url : null,
    sitemap: row.mode === 'sitemap' ? row.start_url : null,
    max_pages: Number(row.max_pages),
    max_depth: Number(row.max_depth),
    include: JSON.parse(row.include_patterns) as string[],
    exclude: JSON.parse(row.exclude_patterns) as string[],
    state: (['queued', 'running', 'done', 'cancelled', 'failed'] as const).find((s) => s === row.state) ?? 'failed',
    discovered: Number(row.discovered),
    queued: Number(row.pages_queued),
    fetched: Number(row.pages_fetched),
    indexed: Number(row.pages_indexed),
    failed: Number(row.pages_failed),
    skipped: Number(row.pages_skipped),
    blocked: Number(row.blocked),
    crawl_delay_ms: Number(row.crawl_delay_ms),
    error: row.error,
    created_at: row.created_at,
    started_at: row.started_at,
    finished_at: row.finished_at,
    updated_at: row.updated_at,
  };
}

export function scopeOf(crawl: CrawlRow): CrawlScope {
  return {
    origin: crawl.origin,
    prefix: crawl.path_prefix,
    include: JSON.parse(crawl.include_patterns) as string[],
    exclude: JSON.parse(crawl.exclude_patterns) as string[],
    robotsTxt: crawl.robots_txt,
  };
}

// ---------------------------------------------------------------------------------------------
// The frontier

interface NewPage {
  url: string;
  depth: number;
  viaCanonical: boolean;
}

/**
 * Adds pages the crawl has not seen to its frontier (waiting), while its budget lasts. Run it
 * in a transaction holding the crawl's row. Returns how many it added.
 */
async function addToFrontier(trx: Db, crawl: CrawlRow, pages: readonly NewPage[], now: string, extra: { blocked?: number } = {}): Promise<number> {
  const room = Number(crawl.max_pages) - Number(crawl.discovered);
  const blocked = extra.blocked ?? 0;
  if (room <= 0 || pages.length === 0) {
    if (blocked > 0) await crawls.updateCrawl(trx, crawl.id, { blocked: Number(crawl.blocked) + blocked, updated_at: now });
    crawl.blocked = Number(crawl.blocked) + blocked;
    return 0;
  }
  const unique = [...new Map(pages.map((p) => [p.url, p])).values()];
  // Within the budget, the pages the crawl has already are skipped by the insert itself; past it,
  // they are read first, so that the budget takes only new ones.
  const fitsBudget = unique.length <= room;
  const known = fitsBudget
    ? new Set<string>()
    : await crawls.knownUrls(
        trx,
        crawl.id,
        unique.map((p) => p.url),
      );
  const fresh = unique.filter((p) => !known.has(p.url)).slice(0, room);
  if (fresh.length === 0) return 0;
  const first = Number(crawl.discovered);
  const added = await crawls.insertNewPages(
    trx,
    fresh.map((p, i) => ({
      crawl_id: crawl.id,
      url: p.url,
      bot_id: crawl.bot_id,
      seq: first + i,
      depth: p.depth,
      via_canonical: p.viaCanonical ? 1 : 0,
      state: 'waiting',
      fetched: 0,
      prior_status: null,
      prior_error: null,
      updated_at: now,
    })),
  );
  crawl.discovered = first + added;
  crawl.blocked = Number(crawl.blocked) + blocked;
  if (added > 0 || blocked > 0) await crawls.updateCrawl(trx, crawl.id, { discovered: crawl.discovered, blocked: crawl.blocked, updated_at: now });
  return added;
}

/** The links a fetched page found, added to the frontier while the crawl runs. Run it in a transaction holding the crawl's row. */
async function writeFound(trx: Db, crawl: CrawlRow, found: { pages: NewPage[]; blocked: number }, now: string): Promise<void> {
  if (crawl.state === 'running') await addToFrontier(trx, crawl, found.pages, now, { blocked: found.blocked });
}

const addMs = (timestamp: string, ms: number) => formatMicros(Date.parse(timestamp) * 1000 + Number(timestamp.slice(23, 26)) + ms * 1000);

/**
 * Moves the next waiting pages into the ingestion queue, up to the crawl's window (HOST_CONCURRENCY
 * pending links, or one under a Crawl-delay) and within the bot's pending links limit; under a
 * Crawl-delay each is due that long after the one before. Run it in a transaction holding the
 * crawl's row. Returns how many links it queued.
 */
async function promote(trx: Db, dialect: Storage['dialect'], crawl: CrawlRow, now: string, maxPendingLinks: number): Promise<number> {
  const delay = Number(crawl.crawl_delay_ms);
  const window = delay > 0 ? 1 : HOST_CONCURRENCY;
  const head = await crawls.frontierHead(trx, dialect, crawl, window);
  const pages = head.waiting.slice(0, Math.max(0, Math.min(window - head.inQueue, maxPendingLinks - head.pending)));
  if (pages.length === 0) return 0;
  // Brings the knowledge base back if its last link was deleted.
  if (!head.knowledgeBase) await kb.ensureKnowledgeBase(trx, crawl.bot_id, now);
  let next = crawl.next_fetch_at > now ? crawl.next_fetch_at : now;
  for (const page of pages) {
    const runAfter = next;
    if (delay > 0) next = addMs(runAfter, delay);
    // Most pages are new to the bot: the insert tells, and only a link there already is read.
    const link = (await crawls.insertPendingLink(trx, crawl.bot_id, page.url, runAfter, now)) ? null : await crawls.findLink(trx, crawl.bot_id, page.url);
    if (link && link.status !== 'pending') await crawls.requeueLink(trx, link.id, runAfter, now);
    await trx
      .updateTable('crawl_pages')
      .set({ state: 'queued', prior_status: link ? link.status : null, prior_error: link ? link.error : null, updated_at: now })
      .where('crawl_id', '=', crawl.id)
      .where('url', '=', page.url)
      .execute();
  }
  if (delay > 0) await crawls.updateCrawl(trx, crawl.id, { next_fetch_at: next });
  return pages.length;
}

/** Promotes, and ends the crawl (done) when nothing waits or is queued. Run it in a transaction holding the crawl's row. */
async function advance(trx: Db, dialect: Storage['dialect'], crawl: CrawlRow, now: string, maxPendingLinks: number): Promise<number> {
  if (crawl.state !== 'running') return 0;
  const queued = await promote(trx, dialect, crawl, now, maxPendingLinks);
  if (queued === 0 && !(await crawls.hasPagesIn(trx, crawl.id, ['waiting', 'queued']))) {
    await crawls.updateCrawl(trx, crawl.id, { state: 'done', finished_at: now, updated_at: now });
  }
  return queued;
}

// ---------------------------------------------------------------------------------------------
// Running crawls

/** A claimed job that is a page of a running crawl. */
export interface CrawlJob {
  crawl: CrawlRow;
  page: CrawlPageRow;
  /**
   * What examining a page to be indexed left for the end of its job (endJob): that the page was
   * fetched, and the links it found. Written with the page's outcome, not in a transaction of
   * their own before it.
   */
  found?: { pages: NewPage[]; blocked: number };
  /** The page was settled in the transaction that ended its job. */
  settled?: boolean;
}

/** What the ingestion worker asks of crawls (src/jobs/ingestion-worker.ts). */
export interface CrawlHooks {
  /**
   * The crawl page a claimed link is, or null when it is no crawl's: the worker's last step
   * before the fetch. 'dropped' when the page's crawl is no longer running (cancelled or failed
   * while the link was claimed: the cancel left it to its worker): the link was taken out of the
   * queue here as the cancel would have, and is not to be fetched.
   */
  pageOf(job: KbLinkRow, ref: kb.JobRef): Promise<CrawlJob | 'dropped' | null>;
  /**
   * After the page was fetched (2xx): reads its links and canonical URL, adds the links to the
   * frontier, and returns its passages to store, or null when it is not to be indexed (its
   * canonical is another page, noindex, redirected out of scope: the job was ended here).
   * Throws ExtractError when the page has no text to index.
   */
  examine(
    job: KbLinkRow,
    ref: kb.JobRef,
    crawlJob: CrawlJob,
    page: { url: string; body: Buffer; contentType: string | null },
    options?: { redact?: boolean },
  ): Promise<PassageList | null>;
  /**
   * Runs `write`, the step that ends the page's job (its passages published, its failure, …), in
   * one transaction with the page's settling: what examine left (the links found), the page's
   * outcome from its link, the crawl's next pages queued; then `then` (the worker claims its next
   * job). The crawl's row is locked before `write` runs, as every transaction that changes a
   * crawl's pages locks it first.
   */
  endJob<T>(crawlJob: CrawlJob, write: (trx: Db) => Promise<T>, then?: (trx: Db) => Promise<void>): Promise<T>;
  /** The job ended without endJob (or went back to the queue): settles the page as endJob does, unless endJob did. */
  settled(crawlJob: CrawlJob): Promise<void>;
}

export interface CrawlRunnerDeps {
  storage: Storage;
  fetchPolicy: FetchPolicy;
  taskThreads: {
    crawlPageOnThread(
      body: Buffer,
      contentType: string | null,
      finalUrl: string,
      scope: CrawlScope,
      options?: { redact?: boolean },
    ): Promise<Omit<CrawledPage, 'passages'> & { passages: PassageList | null }>;
    sitemapOnThread(body: Buffer, scope: CrawlScope, maxBytes: number): Promise<SitemapRead>;
  };
  /** KB_MAX_PENDING_LINKS_PER_BOT: a crawl queues no link beyond it. */
  maxPendingLinks: number;
  /** Links were queued: the local workers look at once. */
  onLinksQueued?: () => void;
  logger?: { info(obj: object, msg: string): void; warn(obj: object, msg: string): void; error(obj: object, msg: string): void };
  /** Identifies this instance's leases. */
  owner?: string;
}

/** Drives crawls: their start (robots.txt, sitemaps), and their frontier as the worker reports (CrawlHooks). */
export class CrawlRunner implements CrawlHooks {
  private readonly owner: string;
  private readonly leaseMs: number;

  constructor(private readonly deps: CrawlRunnerDeps) {
    this.owner = deps.owner ?? randomUUID();
    this.leaseMs = Math.max(60_000, 4 * deps.fetchPolicy.timeoutMs);
  }

  async pageOf(job: KbLinkRow, ref: kb.JobRef): Promise<CrawlJob | 'dropped' | null> {
    // The read connection: on SQLite it spares the writer's thread, which every page's stores wait for.
    const found = await crawls.queuedPageOfLink(this.deps.storage.readDb, job.bot_id, job.url);
    if (!found) return null;
    if (found.crawl.state === 'running') return found;
    if (!(await this.dropClaimed(job, ref, found))) return null;
    this.deps.logger?.info({ bot_id: job.bot_id, crawl_id: found.crawl.id, url: loggedUrl(job.url) }, 'crawl page not fetched: its crawl was stopped');
    return 'dropped';
  }

  /**
   * Takes a claimed page of a stopped crawl out of the queue before its fetch, as stopCrawl
   * would have had its link not been claimed. True when it is not to be fetched; false when the
   * link is someone else's (they had queued it: it is fetched as an ordinary link).
   */
  private async dropClaimed(job: KbLinkRow, ref: kb.JobRef, { crawl, page }: CrawlJob): Promise<boolean> {
    const { db, dialect } = this.deps.storage;
    const now = nowTimestamp();
    return inTransaction(db, async (trx) => {
      await crawls.lockCrawl(trx, dialect, crawl.id);
      if (await dropLink(trx, job, page, { owner: ref.owner, generation: ref.generation }, now)) {
        await crawls.updatePage(trx, crawl.id, page.url, { state: 'cancelled', updated_at: now });
        return page.prior_status !== 'pending';
      }
      // No longer this job's (deleted, queued again, taken over): nothing is written but the page's settling, as endJob's.
      await crawls.settlePage(trx, crawl.bot_id, crawl.id, page.url, now);
      return true;
    });
  }

  async examine(
    job: KbLinkRow,
    ref: kb.JobRef,
    crawlJob: CrawlJob,
    fetched: { url: string; body: Buffer; contentType: string | null },
    options: { redact?: boolean } = {},
  ): Promise<PassageList | null> {
    const { db, dialect } = this.deps.storage;
    const { crawl, page } = crawlJob;
    const read = await this.deps.taskThreads.crawlPageOnThread(fetched.body, fetched.contentType, fetched.url, scopeOf(crawl), options);
    const finalUrl = safeCanonical(fetched.url) ?? job.url;
    // Where the page says it lives: its canonical link when that is in scope, else where a redirect took it.
    const canonical = read.canonical !== null && read.canonicalVerdict === 'ok' ? read.canonical : finalUrl;
    let drop: 'duplicate' | 'skipped' | null = null;
    if (read.finalVerdict !== 'ok') drop = 'skipped';
    else if (read.noindex) drop = 'skipped';
    else if (canonical !== job.url && page.via_canonical === 0) drop = 'duplicate';
    const found: NewPage[] = [];
    if (crawl.mode === 'links' && Number(page.depth) < Number(crawl.max_depth)) {
      for (const url of read.links) found.push({ url, depth: Number(page.depth) + 1, viaCanonical: false });
    }
    // Most pages are indexed as they are: what they found is written when their job ends (endJob).
    if (drop === null && read.passages !== null) {
      crawlJob.found = { pages: found, blocked: read.blocked };
      return read.passages;
    }
    const now = nowTimestamp();
    // What became of the page: `drop`, or null when it is indexed after all (a run of the
    // transaction starts again from `drop`: inTransaction may run it more than once).
    const { dropped, outcome } = await inTransaction(db, async (trx) => {
      let outcome = drop;
      const locked = await crawls.lockCrawl(trx, dialect, crawl.id);
      if (!locked) return { dropped: false, outcome };
      // The canonical is fetched in this page's place: when the crawl has it already, or can still take it.
      if (locked.state === 'running' && outcome === 'duplicate' && !(await crawls.knownUrls(trx, crawl.id, [canonical])).has(canonical)) {
        if ((await addToFrontier(trx, locked, [{ url: canonical, depth: Number(page.depth), viaCanonical: true }], now)) === 0) outcome = null;
      } else if (locked.state !== 'running' && outcome === 'duplicate') outcome = null;
      await crawls.updatePage(trx, crawl.id, page.url, { fetched: 1, updated_at: now });
      await writeFound(trx, locked, { pages: found, blocked: read.blocked }, now);
      // A link someone else had queued is theirs: it is indexed as it is.
      if (outcome === null || page.prior_status === 'pending') return { dropped: false, outcome };
      const link = await crawls.findLink(trx, crawl.bot_id, job.url);
      if (!link || !(await dropLink(trx, link, page, { owner: ref.owner, generation: ref.generation }, now))) return { dropped: true, outcome };
      await crawls.updatePage(trx, crawl.id, page.url, { state: outcome, updated_at: now });
      return { dropped: true, outcome };
    });
    if (dropped) {
      this.deps.logger?.info({ bot_id: crawl.bot_id, crawl_id: crawl.id, url: loggedUrl(job.url), outcome }, 'crawl page not indexed');
      return null;
    }
    if (read.passages === null) throw new ExtractError(read.extractError ?? 'The page has no readable text to index.');
    return read.passages;
  }

  async endJob<T>(crawlJob: CrawlJob, write: (trx: Db) => Promise<T>, then?: (trx: Db) => Promise<void>): Promise<T> {
    const value = await this.settle(crawlJob.crawl.id, [crawlJob.page.url], write, { found: crawlJob.found, then });
    crawlJob.settled = true;
    return value;
  }

  async settled(crawlJob: CrawlJob): Promise<void> {
    if (!crawlJob.settled) await this.endJob(crawlJob, async () => undefined);
  }

  /**
   * In one transaction holding the crawl's row: `write` (what ends a page's job, if anything),
   * the links a page found (`found`, its page marked fetched), the queued pages among `urls`
   * whose link is no longer pending settled, the crawl advanced, then `then`.
   */
  private async settle<T>(
    crawlId: string,
    urls: readonly string[],
    write: (trx: Db) => Promise<T>,
    extra: { found?: CrawlJob['found']; then?: (trx: Db) => Promise<void> } = {},
  ): Promise<T> {
    const { db, dialect } = this.deps.storage;
    const { value, queued } = await inTransaction(db, async (trx) => {
      const crawl = await crawls.lockCrawl(trx, dialect, crawlId);
      const value = await write(trx);
      let queued = 0;
      if (crawl) {
        const now = nowTimestamp();
        // Under a Crawl-delay the next page is due the delay after this one ended, not after this
        // one was due (a page claimed late left a shorter gap, down to its own fetch's time).
        const delay = Number(crawl.crawl_delay_ms);
        const nextAfterThis = delay > 0 && urls.length > 0 ? addMs(now, delay) : null;
        if (nextAfterThis !== null && nextAfterThis > crawl.next_fetch_at) {
          crawl.next_fetch_at = nextAfterThis;
          await crawls.updateCrawl(trx, crawlId, { next_fetch_at: nextAfterThis });
        }
        if (extra.found) await writeFound(trx, crawl, extra.found, now);
        for (const url of urls) await crawls.settlePage(trx, crawl.bot_id, crawlId, url, now, { fetched: extra.found !== undefined });
        queued = await advance(trx, dialect, crawl, now, this.deps.maxPendingLinks);
      }
      await extra.then?.(trx);
      return { value, queued };
    });
    if (queued > 0) this.deps.onLinksQueued?.();
    return value;
  }

  /**
   * Looks after the running crawls (a round of the crawl job): settles queued pages whose link
   * was processed or deleted without the worker telling (a process that stopped, a delete),
   * queues pages the bot's pending limit held back, ends crawls with nothing left, and fails
   * those whose copilot was deleted. Then deletes a batch of the pages of crawls finished over
   * FINISHED_PAGES_KEPT_MS ago (their progress stays in their rows), so the frontiers of past
   * crawls do not pile up.
   */
  async sweep(limit = 50): Promise<void> {
    const { db, dialect } = this.deps.storage;
    for (const { id, bot_id: botId } of await crawls.runningCrawls(db, limit)) {
      if (!(await botIsLive(db, botId))) {
        await inTransaction(db, async (trx) => {
          const crawl = await crawls.lockCrawl(trx, dialect, id);
          if (crawl?.state === 'running') await stopCrawl(trx, crawl, 'failed', 'The copilot was deleted.');
        });
        continue;
      }
      await this.settle(id, await crawls.queuedPagesDone(db, id, 500), async () => undefined);
    }
    await crawls.deleteFinishedPages(db, timestampIn(-FINISHED_PAGES_KEPT_MS), PAGES_DELETED_PER_ROUND);
  }

  /** Starts the next queued crawl whose start is due (false when none): robots.txt, sitemaps, the first pages queued. */
  async startNext(signal?: AbortSignal): Promise<boolean> {
    const claimed = await this.claimNextStart(signal);
    if (claimed === null) return false;
    await claimed.started;
    return true;
  }

  /**
   * Claims the next queued crawl whose start is due, and starts it: `started`, the start under
   * way (a failed start fails its crawl; it rejects only when the database does), or null when
   * none is due. The crawl job runs starts side by side, so that
   * one site's slow start (its Crawl-delay between sitemaps) holds no other crawl's.
   */
  async claimNextStart(signal?: AbortSignal): Promise<{ started: Promise<void> } | null> {
    const { db, dialect } = this.deps.storage;
    const crawl = await crawls.claimCrawlStart(db, dialect, this.owner, nowTimestamp(), timestampIn(this.leaseMs));
    if (!crawl) return null;
    // In an object: a promise returned from an async function would be waited for.
    return { started: this.runStart(crawl, signal) };
  }

  private async runStart(crawl: CrawlRow, signal?: AbortSignal): Promise<void> {
    const { db, dialect } = this.deps.storage;
    try {
      await this.start(crawl, signal);
    } catch (err) {
      if (signal?.aborted) {
        await crawls.updateCrawl(db, crawl.id, { lease_owner: null, lease_expires_at: null, attempts: Number(crawl.attempts) - 1 }, this.owner);
        return;
      }
      const transient = err instanceof FetchError && isTransientFetchError(err);
      // The site's or the request's fault says why; anything else is the service's own, logged with its cause.
      const told = err instanceof FetchError || err instanceof ExtractError || err instanceof CrawlStartError;
      const message = told ? err.message : 'The crawl could not be started.';
      if (!told) this.deps.logger?.error({ err, bot_id: crawl.bot_id, crawl_id: crawl.id }, 'a crawl could not be started');
      if (transient && Number(crawl.attempts) < START_ATTEMPTS) {
        await crawls.updateCrawl(
          db,
          crawl.id,
          { lease_owner: null, lease_expires_at: null, error: message, run_after: timestampIn(START_BACKOFF_MS * 2 ** (Number(crawl.attempts) - 1)) },
          this.owner,
        );
      } else {
        await inTransaction(db, async (trx) => {
          const locked = await crawls.lockCrawl(trx, dialect, crawl.id);
          if (locked?.state === 'queued' && locked.lease_owner === this.owner) await stopCrawl(trx, locked, 'failed', message);
        });
        this.deps.logger?.warn({ bot_id: crawl.bot_id, crawl_id: crawl.id, reason: message }, 'crawl failed');
      }
    }
  }

  private async start(crawl: CrawlRow, signal?: AbortSignal): Promise<void> {
    const { db, dialect } = this.deps.storage;
    if (!(await botIsLive(db, crawl.bot_id))) throw new CrawlStartError('The copilot was deleted.');
    const robotsTxt = await this.fetchRobots(crawl.origin, signal);
    const tooComplex = robotsProblem(robotsTxt);
    if (tooComplex !== null) throw new CrawlStartError(tooComplex);
    const scope: CrawlScope = { ...scopeOf(crawl), robotsTxt };
    const delay = crawlDelayMs(crawl.origin, robotsTxt);
    if (delay > MAX_CRAWL_DELAY_MS) {
      throw new CrawlStartError(
        `The site's robots.txt asks for ${delay / 1000} s between requests; the service waits at most ${MAX_CRAWL_DELAY_MS / 1000} s, so it does not crawl the site.`,
      );
    }
    // Whether robots.txt lets the service fetch a URL (whatever the crawl's scope and patterns):
    // parsed once for the start URL and every sitemap of an index.
    const robots = parseRobots(crawl.origin, robotsTxt);
    const robotsAllow = (url: string) => robots?.isAllowed(url, USER_AGENT) !== false;
    const pages: NewPage[] = [];
    let blocked = 0;
    const what = crawl.mode === 'links' ? 'start URL' : 'sitemap URL';
    if (!robotsAllow(crawl.start_url)) throw new CrawlStartError(`The site's robots.txt disallows the ${what} for this service.`);
    if (crawl.mode === 'links' && scopeChecker(scope)(crawl.start_url) === 'excluded')
      throw new CrawlStartError("The start URL does not pass the crawl's include and exclude patterns.");
    if (crawl.mode === 'links') pages.push({ url: crawl.start_url, depth: 0, viaCanonical: false });
    else {
      const read = await this.readSitemaps(crawl, scope, delay, robotsAllow, signal);
      pages.push(...read.urls.map((url) => ({ url, depth: 0, viaCanonical: false })));
      blocked = read.blocked;
    }
    const now = nowTimestamp();
    const queued = await inTransaction(db, async (trx) => {
      const locked = await crawls.lockCrawl(trx, dialect, crawl.id);
      if (locked?.state !== 'queued' || locked.lease_owner !== this.owner) return 0; // cancelled meanwhile
      const patch = {
        state: 'running',
        robots_txt: robotsTxt,
        crawl_delay_ms: delay,
        blocked,
        error: null,
        started_at: now,
        updated_at: now,
        lease_owner: null,
        lease_expires_at: null,
      } as const;
      await crawls.updateCrawl(trx, crawl.id, patch);
      const running: CrawlRow = { ...locked, ...patch };
      await addToFrontier(trx, running, pages, now);
      return advance(trx, dialect, running, now, this.deps.maxPendingLinks);
    });
    if (queued > 0) this.deps.onLinksQueued?.();
  }

  /** The site's robots.txt: null when it has none (a 4xx answer: everything allowed, RFC 9309 §2.3.1.3). */
  private async fetchRobots(origin: string, signal?: AbortSignal): Promise<string | null> {
    try {
      // Its first MAX_ROBOTS_CHARS characters, whatever its size (a robots.txt over the document limit failed the crawl).
      const res = await fetchGuarded(`${origin}/robots.txt`, this.deps.fetchPolicy, {
        accept: 'text/plain, */*;q=0.1',
        signal,
        prefixBytes: MAX_ROBOTS_CHARS * 4,
      });
      return res.body.toString('utf8').slice(0, MAX_ROBOTS_CHARS);
    } catch (err) {
      if (err instanceof FetchError && err.kind === 'http_status' && err.status !== undefined && err.status >= 400 && err.status < 500 && err.status !== 429) {
        return null;
      }
      if (err instanceof FetchError) {
        // Unreachable robots.txt: assume everything is disallowed (RFC 9309 §2.3.1.4), so the crawl waits or fails.
        throw new FetchError(err.kind, err.url, `The site's robots.txt could not be fetched, so nothing may be crawled: ${err.message}`, err.status);
      }
      throw err;
    }
  }

  /** The URLs of the crawl's sitemap, or of each sitemap of a sitemap index, up to the budget. */
  private async readSitemaps(
    crawl: CrawlRow,
    scope: CrawlScope,
    delay: number,
    robotsAllow: (url: string) => boolean,
    signal?: AbortSignal,
  ): Promise<{ urls: string[]; blocked: number }> {
    const budget = Number(crawl.max_pages);
    const root = await this.fetchSitemap(crawl.start_url, scope, signal);
    if (root.kind === 'unknown') throw new CrawlStartError('The sitemap URL does not hold a sitemap (<urlset>) or a sitemap index (<sitemapindex>).');
    if (root.kind === 'urlset') return { urls: root.urls.slice(0, budget), blocked: root.blocked };
    const urls = new Set<string>();
    let blocked = 0;
    let unread = 0;
    const notRead = (sitemap: string, reason: string) => {
      unread++;
      this.deps.logger?.warn({ bot_id: crawl.bot_id, crawl_id: crawl.id, sitemap: loggedUrl(sitemap), reason }, 'sitemap not read');
    };
    // The sitemaps of an index are read for SITEMAPS_READ_MS at most (a Crawl-delay between them
    // included), and while the crawl is still this instance's to start: cancelled or its copilot
    // deleted, no further sitemap is fetched. The lease covers each wait.
    const until = Date.now() + SITEMAPS_READ_MS;
    for (const sitemap of root.urls.slice(0, MAX_SITEMAPS)) {
      if (urls.size >= budget || Date.now() + delay > until) break;
      if (!robotsAllow(sitemap)) continue;
      if (!(await this.stillStarting(crawl, delay))) break;
      if (delay > 0) await sleep(delay, signal);
      // Each sitemap of the index is read on its own: one that cannot be fetched or read is passed over.
      const read = await this.fetchSitemap(sitemap, scope, signal).catch((err: unknown) => {
        if (signal?.aborted) throw err;
        notRead(sitemap, (err as Error).message);
        return null;
      });
      if (read === null) continue;
      // An index inside an index is not followed (the protocol has none).
      if (read.kind !== 'urlset') {
        notRead(
          sitemap,
          read.kind === 'sitemapindex' ? 'It is a sitemap index itself; an index inside an index is not followed.' : 'It holds no sitemap (<urlset>).',
        );
        continue;
      }
      blocked += read.blocked;
      for (const url of read.urls) {
        if (urls.size >= budget) break;
        urls.add(url);
      }
    }
    // Nothing to crawl because no sitemap of the index could be read: the crawl says why (it
    // ended `done` with no page, and no word of it; outbound sweep).
    if (urls.size === 0 && unread > 0) {
      throw new CrawlStartError(
        `The sitemap index gave no page to crawl: ${unread} of its sitemaps could not be read (a sitemap index inside it is not followed); the service's log says why for each.`,
      );
    }
    return { urls: [...urls], blocked };
  }

  /** Whether the crawl is still queued and this instance's; if so its lease is renewed for `ms` more. */
  private async stillStarting(crawl: CrawlRow, ms: number): Promise<boolean> {
    const { db } = this.deps.storage;
    const row = await crawls.findCrawl(db, crawl.bot_id, crawl.id);
    if (row?.state !== 'queued' || row.lease_owner !== this.owner || !(await botIsLive(db, crawl.bot_id))) return false;
    return crawls.updateCrawl(db, crawl.id, { lease_expires_at: timestampIn(ms + this.leaseMs) }, this.owner);
  }

  private async fetchSitemap(url: string, scope: CrawlScope, signal?: AbortSignal): Promise<SitemapRead> {
    const res = await fetchGuarded(url, this.deps.fetchPolicy, { accept: 'application/xml, text/xml;q=0.9, */*;q=0.1', signal });
    return this.deps.taskThreads.sitemapOnThread(res.body, scope, this.deps.fetchPolicy.maxBytes);
  }
}

class CrawlStartError extends Error {
  override name = 'CrawlStartError';
}

async function botIsLive(db: Db, botId: string): Promise<boolean> {
  try {
    await getCopilot(db, botId);
    return true;
  } catch (err) {
    if (err instanceof AppError && err.code === 'copilot_not_found') return false;
    throw err;
  }
}

function safeCanonical(url: string): string | null {
  try {
    return canonicalLink(url);
  } catch {
    return null;
  }
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(signal.reason);
      },
      { once: true },
    );
  });
}

export { MAX_MAX_PAGES };
