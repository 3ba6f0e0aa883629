/**
 * The test harness: the app built as server.ts builds it (createServices, then buildApp) on a
 * fresh throw-away database, with an admin key, keys on demand and, for the knowledge-base
 * tests, a query tap and ingestion workers the test drives.
 */
import type { FastifyInstance, FastifyServerOptions } from 'fastify';
import { afterAll, beforeAll } from 'vitest';
import { buildApp } from '../../src/app.js';
import { loadConfig, type Config } from '../../src/config.js';
import { createApiKey, type Scope } from '../../src/domain/auth/api-keys.js';
import type { ValidationCache } from '../../src/domain/validator/index.js';
import { IngestionWorker, type WorkerOptions } from '../../src/jobs/ingestion-worker.js';
import { createServices, type Services } from '../../src/services.js';
import type { DialectName, Storage } from '../../src/storage/database.js';
import type { TaskThreads } from '../../src/threads/task-threads.js';
import { createTestStorage, type TestDatabase } from './databases.js';
import { PageServer } from './pages.js';
import { QueryTap, tappedStorage } from './query-tap.js';
import { testTaskThreads } from './task-threads.js';

/** What the tests may fetch from: the loopback networks (PageServer and friends listen there). */
export const ALLOW_NETWORKS = '127.0.0.0/8,::1/128';

export interface TestAppOptions {
  /** Configuration variables over the test defaults (silent log, ALLOW_NETWORKS fetchable, a 20 ms poll). */
  env?: Record<string, string>;
  /** Fastify's logger (default: none). */
  logger?: FastifyServerOptions['logger'];
  /** Every statement on the write connection goes through `t.tap` (the app's and the workers'). */
  tap?: boolean;
  /** Start an ingestion worker with the app: `true`, or options over `t.workerOptions`. */
  worker?: boolean | Partial<WorkerOptions>;
}

export interface TestApp {
  app: FastifyInstance;
  services: Services;
  config: Config;
  database: TestDatabase;
  /** The app's storage: through the tap when built with `tap`. */
  storage: Storage;
  /** The storage as created, never through the tap. */
  rawStorage: Storage;
  /** The app's task threads and validation cache (TASK_THREADS, VALIDATION_CACHE_BYTES); closed with it. */
  taskThreads: TaskThreads;
  validationCache: ValidationCache;
  /** An admin key's Authorization header value. */
  admin: string;
  /** Creates a key and returns its Authorization header value (its id: keyIdOf). */
  key(scopes: Scope[], bots?: string[]): Promise<string>;
  /** The query tap; only for an app built with `tap: true`. */
  readonly tap: QueryTap;
  /** The worker started with the app (option `worker`), or null. */
  worker: IngestionWorker | null;
  /** Options for the test's workers: the app's fetch policy (ALLOW_NETWORKS), 2 at once, 3 attempts, 50 ms backoff. */
  workerOptions: WorkerOptions;
  /** A worker on the app's storage, not started (call runOne(), or start()); told when links are queued, stopped on close. */
  newWorker(options?: Partial<WorkerOptions>): IngestionWorker;
  /**
   * Another instance of the service beside this app: on its configuration, storage and task
   * threads unless others are handed in. Ready; the caller closes it (and what it handed in).
   */
  anotherApp(parts?: { config?: Config; storage?: Storage; taskThreads?: TaskThreads }): Promise<FastifyInstance>;
  close(): Promise<void>;
}

/** The id of a key, from its Authorization header value (`Bearer cms_<id>_<secret>`). */
export const keyIdOf = (authorization: string): string => authorization.split('_')[1]!;

/** Builds the app on a fresh throw-away database of the dialect; call close() when done. */
export async function buildTestApp(dialect: DialectName, options: TestAppOptions = {}): Promise<TestApp> {
  // The storage is opened before the configuration is read: the one variable it takes, passed on.
  const searchTimeoutMs = options.env?.SEARCH_TIMEOUT_MS;
  const { storage: rawStorage, database, cleanup } = await createTestStorage(dialect, searchTimeoutMs ? { scanTimeLimitMs: Number(searchTimeoutMs) } : {});
  const tap = options.tap ? new QueryTap() : null;
  const storage = tap ? tappedStorage(rawStorage, tap) : rawStorage;
  const config = loadConfig({
    DATA_DIR: database.dataDir,
    ...(database.databaseUrl && { DATABASE_URL: database.databaseUrl }),
    LOG_LEVEL: 'silent',
    FETCH_ALLOW_NETWORKS: ALLOW_NETWORKS,
    FETCH_TIMEOUT_MS: '10000',
    KB_POLL_INTERVAL_MS: '20',
    ...options.env,
  });
  const taskThreads = testTaskThreads(config.taskThreads);
  const services = createServices(config, { storage, taskThreads });
  const workerOptions: WorkerOptions = {
    concurrency: 2,
    pollIntervalMs: config.kbPollIntervalMs,
    fetchPolicy: services.fetchPolicy,
    maxAttempts: 3,
    backoffMs: 50,
    taskThreads,
    crawls: services.crawls,
    ...(typeof options.worker === 'object' ? options.worker : {}),
  };
  const workers: IngestionWorker[] = [];
  const newWorker = (extra: Partial<WorkerOptions> = {}) => {
    const w = new IngestionWorker(storage, { ...workerOptions, ...extra });
    workers.push(w);
    return w;
  };
  const worker = options.worker ? newWorker() : null;
  // The test's own workers (their options vary by test) stand in for the services' jobs.
  const linksQueued = () => {
    for (const w of workers) w.notify();
  };
  const app = await buildApp({ ...services, linksQueued }, { logger: options.logger ?? false });
  await app.ready();
  worker?.start();

  const key = async (scopes: Scope[], bots?: string[]) => `Bearer ${(await createApiKey(rawStorage.db, { scopes, bots })).key}`;
  return {
    app,
    services,
    config,
    database,
    storage,
    rawStorage,
    taskThreads,
    validationCache: services.validationCache,
    admin: await key(['admin']),
    key,
    get tap() {
      if (!tap) throw new Error('This test app was built without { tap: true }');
      return tap;
    },
    worker,
    workerOptions,
    newWorker,
    async anotherApp(parts = {}) {
      const other = await buildApp(
        createServices(parts.config ?? config, { storage: parts.storage ?? storage, taskThreads: parts.taskThreads ?? taskThreads }),
        { logger: false },
      );
      await other.ready();
      return other;
    },
    async close() {
      tap?.clear();
      for (const w of workers) await w.stop();
      await app.close();
      await services.close();
      await taskThreads.close();
      await cleanup();
    },
  };
}

/**
 * Builds the test app (`options` as for buildTestApp) and a page server before the describe
 * block that calls this, hands both to `use`, and closes them after it.
 */
export function useTestAppWithPages(dialect: DialectName, options: TestAppOptions, use: (made: { t: TestApp; pages: PageServer }) => void): void {
  let made: { t: TestApp; pages: PageServer } | undefined;
  beforeAll(async () => {
    const pages = await PageServer.start();
    made = { t: await buildTestApp(dialect, options), pages };
    use(made);
  });
  afterAll(async () => {
    await made?.t.close();
    await made?.pages.close();
  });
}

/** Listens on a free loopback port (for tests that need real sockets) and returns it. */
export async function listenOnLoopback(t: TestApp): Promise<number> {
  await t.app.listen({ host: '127.0.0.1', port: 0 });
  return (t.app.server.address() as import('node:net').AddressInfo).port;
}

/** How many connections the app's server has open now. */
export function openConnections(t: TestApp): Promise<number> {
  return new Promise((resolve, reject) => t.app.server.getConnections((err, n) => (err ? reject(err) : resolve(n))));
}
