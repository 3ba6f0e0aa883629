import type { FastifyBaseLogger } from 'fastify';
import { randomUUID } from 'node:crypto';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Config } from './config.js';
import type { HistoryDeps, SyncDeps } from './domain/copilots/api-description-history.service.js';
import { createValidationCache, type ValidationCache } from './domain/validator/index.js';
import { enqueueWebhook } from './domain/webhooks/webhook.service.js';
import { startApiDescriptionSync } from './jobs/api-description-sync.js';
import { startWebhookDelivery } from './jobs/webhook-delivery.js';
import { IngestionWorker, type IngestionMetrics } from './jobs/ingestion-worker.js';
import { CrawlRunner } from './domain/knowledgebase/crawl.js';
import { startCrawls } from './jobs/crawl.js';
import { startLinkRefreshSchedule } from './jobs/link-refresh.js';
import { retentionWanted, startRetention } from './jobs/retention.js';
import { startSearchIndexHousekeeping } from './jobs/search-index-housekeeping.js';
import { startDatabaseClock } from './jobs/database-clock.js';
import { fetchPolicyOf, type FetchPolicy } from './net/guarded-fetch.js';
import { openStorage, type Storage } from './storage/database.js';
import { countLinksByStatus, countPassagesToDelete } from './storage/knowledge-base.repository.js';
import { createTaskThreads, type TaskThreads } from './threads/task-threads.js';

type Logger = Pick<FastifyBaseLogger, 'info' | 'warn' | 'error'>;

/**
 * Everything a running service holds besides its HTTP routes, built in one place and closed in
 * one place: the server, the CLI and the tests all build it with `createServices`.
 */
export interface Services {
  readonly config: Config;
  readonly storage: Storage;
  readonly taskThreads: TaskThreads;
  /** Where knowledge-base searches are scored: a thread of their own, never queued behind a page or a document. */
  readonly searchThread: Pick<TaskThreads, 'scoreOnThread'>;
  readonly validationCache: ValidationCache;
  readonly fetchPolicy: FetchPolicy;
  /** The Prometheus registry `/metrics` answers: process, task threads, validation cache (the app adds HTTP). */
  readonly metrics: Registry;
  /** The versions of API descriptions: where their changes are computed, how many are kept, who is told. */
  readonly history: HistoryDeps;
  /** What syncing an API description from its URL needs (the job and POST …/sync). */
  readonly sync: SyncDeps;
  /** Starts the background jobs: the ingestion worker (KB_WORKERS), search-index housekeeping, API description sync, retention. */
  startJobs(logger: Logger): void;
  /** New links were queued: the local ingestion worker looks at once instead of at its next poll. */
  linksQueued(): void;
  /** Crawls: their start, their frontier, the worker's hooks (src/domain/knowledgebase/crawl.ts). */
  readonly crawls: CrawlRunner;
  /** A crawl was queued: the local crawl job starts it at once instead of at its next round. */
  crawlQueued(): void;
  /** Stops the background jobs: no job is claimed any more, jobs in flight are handed back. */
  stopJobs(): Promise<void>;
  /** Stops the jobs, then closes the task threads and the database it opened. */
  close(): Promise<void>;
}

export interface ServiceParts {
  /** An open storage to use instead of opening the configured database (tests wrap theirs). */
  storage?: Storage;
  /** Task threads to use instead of building them (tests run a build of the sources under test). */
  taskThreads?: TaskThreads;
}

export function createServices(config: Config, parts: ServiceParts = {}): Services {
  const storage =
    parts.storage ??
    openStorage({
      databaseUrl: config.databaseUrl,
      dataDir: config.dataDir,
      connectTimeoutMs: config.databaseConnectTimeoutMs,
      lockTimeoutMs: config.databaseLockTimeoutMs,
      scanTimeLimitMs: config.searchTimeoutMs,
    });
  const taskThreads = parts.taskThreads ?? createTaskThreads({ threads: config.taskThreads });
  // The search index's work on threads of its own: a search's scoring (milliseconds, for a
  // request) never waits behind a page's extraction or a document's validation, and its merges
  // (seconds on a large knowledge base, in the background) never delay either.
  const searchThread = taskThreads.alike(1);
  const indexThread = taskThreads.alike(1);
  const validationCache = createValidationCache({ maxBytes: config.validationCacheBytes });
  const fetchPolicy = fetchPolicyOf(config);
  const metrics = serviceMetrics(taskThreads, validationCache, storage);
  const ingestionMetrics = knowledgeBaseMetrics(metrics, storage);
  const apiChanges = new Counter({
    name: 'api_description_changes',
    help: 'Changes between consecutive versions of API descriptions (upload or sync), by whether they break a copilot calling the API',
    labelNames: ['breaking'] as const,
    registers: [metrics],
  });
  // Set when the jobs start (the server's logger); uploads before that are counted, not logged.
  let logger: Logger | null = null;
  const webhookTarget = config.webhookUrl && config.webhookSecret ? { url: config.webhookUrl, secret: config.webhookSecret } : null;
  const history: HistoryDeps = {
    differ: taskThreads,
    versionsKept: config.apiDescriptionVersionsKept,
    onVersion(copilotId, recorded, source) {
      apiChanges.inc({ breaking: 'true' }, recorded.breaking);
      apiChanges.inc({ breaking: 'false' }, recorded.other);
      if (recorded.breaking === 0) return;
      logger?.warn({ copilot: copilotId, source, ...recorded }, 'An API description changed in a way that breaks a copilot calling it');
    },
    // The webhook's delivery, in the version's transaction: never a version without its event.
    async inVersion(trx, copilotId, recorded, source, changes) {
      if (recorded.breaking === 0) return;
      const breaking = changes.filter((c) => c.breaking);
      const data = {
        version: recorded.version,
        source,
        changes: { breaking: recorded.breaking, other: recorded.other },
        // The first 50 breaking changes; the rest are at changes_path.
        breaking_changes: breaking.slice(0, 50).map(({ kind, method, path, message }) => ({ kind, method, path, message })),
        changes_path: `/backend/api/copilot/${copilotId}/swagger/changes`,
      };
      await enqueueWebhook(trx, webhookTarget, 'api_description.breaking_change', copilotId, data);
    },
  };
  const sync: SyncDeps = {
    ...history,
    policy: fetchPolicy,
    intervalMs: config.syncIntervalMs,
    owner: randomUUID(),
    // A fetched document is validated into the cache: its first validation is then an answer from memory.
    check: async (copilotId, src, sha256) => {
      await validationCache.answer(src, { sha256 }, (doc, opts) => taskThreads.answerOnThread(copilotId, doc, opts));
    },
  };

  let worker: IngestionWorker | null = null;
  let crawlJob: ReturnType<typeof startCrawls> | null = null;
  const crawls = new CrawlRunner({
    storage,
    fetchPolicy,
    taskThreads,
    maxPendingLinks: config.kbMaxPendingLinksPerBot,
    onLinksQueued: () => worker?.notify(),
    logger: { info: (obj, msg) => logger?.info(obj, msg), warn: (obj, msg) => logger?.warn(obj, msg), error: (obj, msg) => logger?.error(obj, msg) },
  });
  const jobs: Array<{ stop(): Promise<void> }> = [];
  let closing: Promise<void> | null = null;
  const stopJobs = async () => {
    for (const job of jobs.splice(0)) await job.stop();
  };

  return {
    config,
    storage,
    taskThreads,
    searchThread,
    validationCache,
    fetchPolicy,
    metrics,
    history,
    sync,
    startJobs(jobLogger) {
      if (worker || closing) return;
      logger = jobLogger;
      worker = new IngestionWorker(storage, {
        concurrency: config.kbWorkers,
        pollIntervalMs: config.kbPollIntervalMs,
        fetchPolicy,
        maxPassagesPerLink: config.kbMaxPassagesPerLink,
        maxPassagesPerBot: config.kbMaxPassagesPerBot,
        logger: jobLogger,
        taskThreads,
        metrics: ingestionMetrics,
        refreshIntervalMs: config.syncIntervalMs,
        crawls,
      });
      worker.start();
      jobs.push(worker);
      jobs.push(
        startSearchIndexHousekeeping(storage, {
          intervalMs: config.kbPollIntervalMs,
          merge: (inputs, excluded) => indexThread.mergeSegmentsOnThread(inputs, excluded),
          logger: jobLogger,
        }),
      );
      crawlJob = startCrawls(crawls, { intervalMs: config.kbPollIntervalMs, logger: jobLogger });
      jobs.push(crawlJob);
      jobs.push(startApiDescriptionSync(storage, sync, { logger: jobLogger }));
      if (storage.dialect === 'postgres') jobs.push(startDatabaseClock(storage, { logger: jobLogger }));
      jobs.push(startLinkRefreshSchedule(storage, { intervalMs: config.syncIntervalMs, logger: jobLogger }));
      if (webhookTarget) {
        const delivery = { policy: fetchPolicy, secret: webhookTarget.secret, owner: sync.owner, retryBaseMs: 10_000 };
        jobs.push(startWebhookDelivery(storage, delivery, { intervalMs: 1000, logger: jobLogger }));
      }
      if (retentionWanted(config)) {
        const { purgeDeletedAfterDays, webhookDeliveriesKeptDays, auditLogKeptDays } = config;
        jobs.push(startRetention(storage, { purgeDeletedAfterDays, webhookDeliveriesKeptDays, auditLogKeptDays, logger: jobLogger }));
      }
    },
    linksQueued() {
      worker?.notify();
    },
    crawls,
    crawlQueued() {
      crawlJob?.wake();
    },
    stopJobs,
    close() {
      closing ??= (async () => {
        try {
          await stopJobs();
        } finally {
          // What was handed in (ServiceParts) is closed by whoever made it.
          await indexThread.close();
          await searchThread.close();
          if (!parts.taskThreads) await taskThreads.close();
          if (!parts.storage) await storage.close();
        }
      })();
      return closing;
    },
  };
}

/** The registry with what the services themselves report; each app adds its HTTP metrics to it. */
function serviceMetrics(taskThreads: Pick<TaskThreads, 'stats'>, validationCache: Pick<ValidationCache, 'stats'>, storage: Storage): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  readGauge(
    registry,
    'task_threads',
    "Task threads (validation, page extraction) by state: busy, idle, tasks queued for one (or for their copilot's turn), and since the start tasks refused because their copilot had too many waiting",
    'state',
    () => {
      const { threads, busy, queued, refused } = taskThreads.stats();
      return { busy, idle: threads - busy, queued, refused };
    },
  );
  readGauge(
    registry,
    'task_threads_wait_milliseconds',
    'How long tasks waited for a task thread since the start: median and 99th percentile',
    'quantile',
    () => {
      const { waitP50Ms, waitP99Ms } = taskThreads.stats();
      return { '0.5': waitP50Ms, '0.99': waitP99Ms };
    },
  );
  readGauge(
    registry,
    'database_connections',
    'Write connections in use and idle, and queries waiting for one (PostgreSQL: the pool; SQLite: the writer thread)',
    'state',
    () => {
      const { inUse, idle, waiting } = storage.connections();
      return { in_use: inUse, idle, waiting };
    },
  );
  readGauge(
    registry,
    'search_scans',
    'Knowledge-base searches running and waiting for a scan connection, and since the start those refused (a bot had too many waiting) and those stopped at the time limit (SEARCH_TIMEOUT_MS)',
    'state',
    () => {
      const { running, waiting, refused, timedOut } = storage.scans();
      return { running, waiting, refused, timed_out: timedOut };
    },
  );
  readGauge(
    registry,
    'validation_cache',
    'Validation answers kept in memory: entries, bytes, and lookups that hit or missed since the start',
    'measure',
    () => {
      const { entries, bytes, hits, misses } = validationCache.stats();
      return { entries, bytes, hits, misses };
    },
  );
  return registry;
}

/** A gauge with one series per value of `label`, read from `read` at each scrape (in its key order). */
function readGauge(registry: Registry, name: string, help: string, label: string, read: () => Record<string, number>): void {
  new Gauge({
    name,
    help,
    labelNames: [label],
    registers: [registry],
    collect() {
      for (const [value, n] of Object.entries(read())) this.set({ [label]: value }, n);
    },
  });
}

/**
 * A series read from the database at a scrape, or null when the database cannot answer now:
 * the scrape then leaves that series out (a series without labels: NaN) and still reports the process and the pool, which an
 * operator needs most while the database is down (it answered 503, or 500 for a closed pool).
 */
async function whileReadable<T>(read: () => Promise<T>): Promise<T | null> {
  try {
    return await read();
  } catch {
    return null;
  }
}

/** The knowledge base's series: links by state and passages to delete (read at each scrape), fetches, pages indexed, failures by reason. */
function knowledgeBaseMetrics(registry: Registry, storage: Storage): IngestionMetrics {
  new Gauge({
    name: 'kb_links',
    help: 'Knowledge-base links by state (pending, indexed, failed), in the whole database',
    labelNames: ['state'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      const rows = await whileReadable(() => countLinksByStatus(storage.readDb));
      for (const { status, n } of rows ?? []) this.set({ state: status }, n);
    },
  });
  new Gauge({
    name: 'kb_passages_to_delete',
    help: "Passages hidden for good (a deleted link's, a replaced page's) that the search index housekeeping has yet to delete, in the whole database",
    registers: [registry],
    async collect() {
      // A series without labels always has its one sample: NaN says "not known now", never 0.
      this.set((await whileReadable(() => countPassagesToDelete(storage.readDb))) ?? Number.NaN);
    },
  });
  const fetchSeconds = new Histogram({
    name: 'kb_fetch_duration_seconds',
    help: 'Time to fetch a knowledge-base page (headers and body), by outcome (ok, not_modified, error)',
    labelNames: ['outcome'] as const,
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [registry],
  });
  const pages = new Counter({ name: 'kb_pages_indexed_total', help: 'Pages indexed by this instance', registers: [registry] });
  const passages = new Counter({ name: 'kb_passages_stored_total', help: 'Passages stored by this instance', registers: [registry] });
  const failures = new Counter({
    name: 'kb_link_failures_total',
    help: 'Links that failed for good in this instance, by reason (timeout, http_status, too_large, refused, extract, limit, …)',
    labelNames: ['reason'] as const,
    registers: [registry],
  });
  const refreshes = new Counter({
    name: 'kb_link_refreshes_total',
    help: 'Re-fetches of links indexed before (checks, refreshes, re-adds) by result: unchanged (304 or the same passages), changed, gone (404/410), failed, error (tried again later)',
    labelNames: ['result'] as const,
    registers: [registry],
  });
  return {
    fetched: (outcome, seconds) => fetchSeconds.observe({ outcome }, seconds),
    refreshed: (result) => refreshes.inc({ result }),
    indexed(count) {
      pages.inc();
      passages.inc(count);
    },
    failed: (reason) => failures.inc({ reason }),
  };
}
