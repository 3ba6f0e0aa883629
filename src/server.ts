import type { FastifyInstance } from 'fastify';
import { buildApp } from './app.js';
import { ConfigError, loadConfig, type Config } from './config.js';
import { ensureBootstrapAdminKey } from './domain/auth/api-keys.js';
import { configureValidationCache } from './domain/validator/index.js';
import { IngestionWorker } from './jobs/ingestion-worker.js';
import { openStorage, type Storage } from './storage/database.js';
import { taskThreads } from './threads/task-threads.js';
import { migrateToLatest } from './storage/migrate.js';

export interface RunningService {
  app: FastifyInstance;
  storage: Storage;
  address: string;
  /** Stops taking requests and jobs, finishes in-flight requests, closes the database. */
  close(): Promise<void>;
}

/** Opens the database, migrates it, builds the app and listens. */
export async function startService(config: Config): Promise<RunningService> {
  configureValidationCache({ maxChars: config.validationCacheBytes });
  taskThreads.configure({ threads: config.taskThreads });
  let app: FastifyInstance | null = null;
  const storage = openStorage({
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    preparedStatements: config.databasePreparedStatements,
    backgroundCheckpoints: {
      onFailure: (err) => {
        const message = 'The SQLite checkpoint thread stopped; checkpoints run on the main thread again';
        if (app) app.log.error({ err }, message);
        else process.emitWarning(`${message}: ${String(err)}`);
      },
    },
  });
  try {
    await migrateToLatest(storage);
    // A thread that cannot start (a broken install) stops the start, not each validation.
    await taskThreads.ready();
    let worker: IngestionWorker | null = null;
    app = await buildApp(config, { storage, onLinksQueued: () => worker?.notify() });
    worker = new IngestionWorker(storage, {
      concurrency: config.kbWorkers,
      pollIntervalMs: config.kbPollIntervalMs,
      fetchPolicy: { timeoutMs: config.fetchTimeoutMs, maxBytes: config.maxDocumentBytes, maxRedirects: 5, allowNetworks: [...config.fetchAllowNetworks] },
      logger: app.log,
    });
    const keyFile = await ensureBootstrapAdminKey(storage, config.dataDir);
    if (keyFile) app.log.warn({ file: keyFile }, 'Created the first admin API key; it is in this file, readable by this user only');
    const address = await app.listen({ port: config.port, host: config.host });
    app.log.info({ address, database: storage.dialect }, 'Copilot Management Service is listening');
    worker.start();
    const running = app;
    const runningWorker = worker;
    return {
      app: running,
      storage,
      address,
      async close() {
        // Stop taking jobs first; jobs in flight finish (or their lease covers a cut-off).
        await runningWorker.stop();
        await running.close();
        await storage.close();
      },
    };
  } catch (err) {
    await app?.close();
    await storage.close();
    throw err;
  }
}

/** `npm start` / `copilot-service serve`: run until SIGTERM or SIGINT, then drain and exit 0. */
export async function serve(config: Config = loadConfig()): Promise<void> {
  const service = await startService(config);
  let closing = false;
  const shutdown = (signal: string) => {
    if (closing) return;
    closing = true;
    service.app.log.info({ signal }, 'Shutting down: finishing in-flight requests');
    const timer = setTimeout(() => {
      service.app.log.error('Shutdown took too long; exiting');
      process.exit(1);
    }, config.shutdownTimeoutMs);
    timer.unref();
    service.close().then(
      () => process.exit(0),
      (err) => {
        service.app.log.error({ err }, 'Error while shutting down');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

export function reportStartupError(err: unknown): never {
  if (err instanceof ConfigError) {
    process.stderr.write(`${err.message}\n`);
  } else {
    process.stderr.write(`Could not start: ${(err as Error).message ?? String(err)}\n`);
  }
  process.exit(1);
}

