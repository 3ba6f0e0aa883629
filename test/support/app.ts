import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.js';
import { createServices } from '../../src/services.js';
import { loadConfig, type Config } from '../../src/config.js';
import { createApiKey, type Scope } from '../../src/domain/auth/api-keys.js';
import type { ValidationCache } from '../../src/domain/validator/index.js';
import type { DialectName, Storage } from '../../src/storage/database.js';
import type { TaskThreads } from '../../src/threads/task-threads.js';
import { createTestStorage } from './databases.js';
import { testTaskThreads } from './task-threads.js';

export interface TestApp {
  app: FastifyInstance;
  storage: Storage;
  config: Config;
  /** The app's task threads and validation cache (TASK_THREADS, VALIDATION_CACHE_BYTES); closed with it. */
  taskThreads: TaskThreads;
  validationCache: ValidationCache;
  /** An admin key's Authorization header value. */
  admin: string;
  /** Creates a key and returns its Authorization header value. */
  bearer(scopes: Scope[], bots?: string[]): Promise<string>;
  close(): Promise<void>;
}

/** Builds the app on a fresh throw-away database of the dialect; call close() when done. */
export async function buildTestApp(dialect: DialectName, env: Record<string, string> = {}): Promise<TestApp> {
  const { storage, database, cleanup } = await createTestStorage(dialect);
  const config = loadConfig({
    DATA_DIR: database.dataDir,
    ...(database.databaseUrl && { DATABASE_URL: database.databaseUrl }),
    LOG_LEVEL: 'silent',
    FETCH_ALLOW_NETWORKS: '127.0.0.0/8,::1/128',
    KB_POLL_INTERVAL_MS: '20',
    ...env,
  });
  const taskThreads = testTaskThreads(config.taskThreads);
  const services = createServices(config, { storage, taskThreads });
  const { validationCache } = services;
  const app = await buildApp(services, { logger: false });
  await app.ready();
  const bearer = async (scopes: Scope[], bots?: string[]) => `Bearer ${(await createApiKey(storage.db, { scopes, bots })).key}`;
  const admin = await bearer(['admin']);
  return {
    app,
    storage,
    config,
    taskThreads,
    validationCache,
    admin,
    bearer,
    async close() {
      await app.close();
      await services.close();
      await taskThreads.close();
      await cleanup();
    },
  };
}
