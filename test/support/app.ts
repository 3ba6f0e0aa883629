import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.js';
import { loadConfig, type Config } from '../../src/config.js';
import { createApiKey, type Scope } from '../../src/domain/auth/api-keys.js';
import type { DialectName, Storage } from '../../src/storage/database.js';
import { createTestStorage } from './databases.js';

export interface TestApp {
  app: FastifyInstance;
  storage: Storage;
  config: Config;
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
  const app = await buildApp(config, { storage, logger: false });
  await app.ready();
  const bearer = async (scopes: Scope[], bots?: string[]) => `Bearer ${(await createApiKey(storage, { scopes, bots })).key}`;
  const admin = await bearer(['admin']);
  return {
    app,
    storage,
    config,
    admin,
    bearer,
    async close() {
      await app.close();
      await cleanup();
    },
  };
}
