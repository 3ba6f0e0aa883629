import type { FastifyBaseLogger } from 'fastify';
import { collectDefaultMetrics, Gauge, Registry } from 'prom-client';
import type { Config } from './config.js';
import { createValidationCache, type ValidationCache } from './domain/validator/index.js';
import { IngestionWorker } from './jobs/ingestion-worker.js';
import { startRetention } from './jobs/retention.js';
import { startSearchIndexHousekeeping } from './jobs/search-index-housekeeping.js';
import { fetchPolicyOf, type FetchPolicy } from './net/guarded-fetch.js';
import { openStorage, type Storage } from './storage/database.js';
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
  readonly validationCache: ValidationCache;
  readonly fetchPolicy: FetchPolicy;
  /** The Prometheus registry `/metrics` answers: process, task threads, validation cache (the app adds HTTP). */
  readonly metrics: Registry;
  /** Starts the background jobs: the ingestion worker (KB_WORKERS), search-index housekeeping, retention. */
  startJobs(logger: Logger): void;
  /** New links were queued: the local ingestion worker looks at once instead of at its next poll. */
  linksQueued(): void;
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
    });
  const taskThreads = parts.taskThreads ?? createTaskThreads({ threads: config.taskThreads });
  const validationCache = createValidationCache({ maxBytes: config.validationCacheBytes });
  const fetchPolicy = fetchPolicyOf(config);
  const metrics = serviceMetrics(taskThreads, validationCache);

  let worker: IngestionWorker | null = null;
  const jobs: Array<{ stop(): Promise<void> }> = [];
  let closing: Promise<void> | null = null;
  const stopJobs = async () => {
    for (const job of jobs.splice(0)) await job.stop();
  };

  return {
    config,
    storage,
    taskThreads,
    validationCache,
    fetchPolicy,
    metrics,
    startJobs(logger) {
      if (worker || closing) return;
      worker = new IngestionWorker(storage, {
        concurrency: config.kbWorkers,
        pollIntervalMs: config.kbPollIntervalMs,
        fetchPolicy,
        maxPassagesPerLink: config.kbMaxPassagesPerLink,
        maxPassagesPerBot: config.kbMaxPassagesPerBot,
        logger,
        taskThreads,
      });
      worker.start();
      jobs.push(worker);
      jobs.push(startSearchIndexHousekeeping(storage, { intervalMs: config.kbPollIntervalMs, logger }));
      if (config.purgeDeletedAfterDays > 0) jobs.push(startRetention(storage, { purgeDeletedAfterDays: config.purgeDeletedAfterDays, logger }));
    },
    linksQueued() {
      worker?.notify();
    },
    stopJobs,
    close() {
      closing ??= (async () => {
        try {
          await stopJobs();
        } finally {
          // What was handed in (ServiceParts) is closed by whoever made it.
          if (!parts.taskThreads) await taskThreads.close();
          if (!parts.storage) await storage.close();
        }
      })();
      return closing;
    },
  };
}

/** The registry with what the services themselves report; each app adds its HTTP metrics to it. */
function serviceMetrics(taskThreads: Pick<TaskThreads, 'stats'>, validationCache: Pick<ValidationCache, 'stats'>): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  new Gauge({
    name: 'task_threads',
    help: 'Task threads (validation, page extraction) by state: busy, idle, and tasks queued for one',
    labelNames: ['state'] as const,
    registers: [registry],
    collect() {
      const { threads, busy, queued } = taskThreads.stats();
      this.set({ state: 'busy' }, busy);
      this.set({ state: 'idle' }, threads - busy);
      this.set({ state: 'queued' }, queued);
    },
  });
  new Gauge({
    name: 'validation_cache',
    help: 'Validation answers kept in memory: entries, bytes, and lookups that hit or missed since the start',
    labelNames: ['measure'] as const,
    registers: [registry],
    collect() {
      const { entries, bytes, hits, misses } = validationCache.stats();
      this.set({ measure: 'entries' }, entries);
      this.set({ measure: 'bytes' }, bytes);
      this.set({ measure: 'hits' }, hits);
      this.set({ measure: 'misses' }, misses);
    },
  });
  return registry;
}
