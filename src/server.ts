import { existsSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { buildApp } from './app.js';
import { ConfigError, loadConfig, type Config } from './config.js';
import { BOOTSTRAP_KEY_FILE, bootstrapKeyActive, ensureBootstrapAdminKey, seedAdminKey } from './domain/auth/api-keys.js';
import { sql } from 'kysely';
import { DataDirError } from './storage/data-dir.js';
import { databaseAdvice, type Storage } from './storage/database.js';
import { createServices, type Services } from './services.js';
import { migrateToLatest } from './storage/migrate.js';
import { followDatabaseClock } from './jobs/database-clock.js';
import { isDatabaseOutOfReach } from './storage/unavailable.js';
import { holdInstanceLock } from './storage/instance-lock.js';

export interface RunningService {
  app: FastifyInstance;
  services: Services;
  address: string;
  /** Stops taking requests and jobs, finishes in-flight requests, closes the database. */
  close(): Promise<void>;
}

/** Opens the database, migrates it, builds the app and listens. */
export async function startService(config: Config): Promise<RunningService> {
  let app: FastifyInstance | null = null;
  const services = createServices(config);
  const { storage } = services;
  let lock: { release(): void } | null = null;
  try {
    // SQLite: this process's alone while it serves (a second service on the DATA_DIR stops here).
    if (config.databaseUrl === null) lock = holdInstanceLock(config.dataDir);
    await checkAddress(config.host, config.port);
    await waitForDatabase(storage, config);
    await migrateToLatest(storage);
    // PostgreSQL: the server's clock is the service's (every instance's leases by one clock).
    await followDatabaseClock(storage);
    // A thread that cannot start (a broken install) stops the start, not each validation.
    await services.taskThreads.ready();
    app = await buildApp(services);
    // While draining, every answer closes its connection, and connections that fall idle are
    // closed, so a keep-alive client cannot hold the process until SHUTDOWN_TIMEOUT_MS.
    let draining = false;
    app.addHook('onSend', async (_request, reply) => {
      if (draining) reply.header('connection', 'close');
    });
    // Where the first key is, for the start-up line.
    let firstKey: string;
    if (config.adminApiKey !== null) {
      // ADMIN_API_KEY: the operator already knows the key, so nothing is written (its id only is logged).
      const seeded = await seedAdminKey(storage.db, config.adminApiKey);
      if (seeded.stored) app.log.warn({ keyId: seeded.id }, 'Stored ADMIN_API_KEY as the first admin API key');
      else if (seeded.works) app.log.info({ keyId: seeded.id }, 'ADMIN_API_KEY is an admin key of this database already');
      else {
        app.log.warn(
          { keyId: seeded.id },
          'ADMIN_API_KEY does not open this database: it holds other API keys, and this one is not an active admin key among them (it is stored only when the database holds no key); use a key of this database, or create one with copilot-service keys create',
        );
      }
      firstKey = seeded.works
        ? 'ADMIN_API_KEY'
        : 'none known (ADMIN_API_KEY is not an admin key of this database; create one with copilot-service keys create)';
    } else {
      const created = await ensureBootstrapAdminKey(storage.db, config.dataDir);
      if (created) app.log.warn({ file: created.file }, 'Created the first admin API key; it is in this file, readable by this user only');
      if (created?.replaced) {
        app.log.warn(
          { kept_as: created.replaced },
          'A first admin key file was in DATA_DIR already (of another database?): it is kept under this name, not overwritten',
        );
      }
      const file = path.join(config.dataDir, BOOTSTRAP_KEY_FILE);
      // The file keeps the first key after it is revoked: then it names no key that works.
      firstKey =
        existsSync(file) && (await bootstrapKeyActive(storage.db)) ? file : 'none on disk that works (keys exist; create one with copilot-service keys create)';
    }
    const address = await app.listen({ port: config.port, host: config.host });
    app.log.info(
      { address, database: storage.name, first_key: firstKey, dashboard: `${address}/` },
      `Copilot Management Service is listening on ${address} (${storage.name}; first admin key: ${firstKey})`,
    );
    for (const advice of await databaseAdvice(storage)) app.log.warn(advice);
    services.startJobs(app.log);
    const running = app;
    return {
      app: running,
      services,
      address,
      async close() {
        draining = true;
        const idleSweep = setInterval(() => running.server.closeIdleConnections(), 100);
        try {
          // Stop taking jobs first (jobs in flight are handed back), then requests.
          await services.stopJobs();
          await running.close();
        } finally {
          clearInterval(idleSweep);
          await services.close();
          lock?.release();
        }
      },
    };
  } catch (err) {
    await app?.close();
    await services.close();
    lock?.release();
    throw err;
  }
}

/**
 * The address before the database: a port in use or a HOST this machine does not have is said
 * at once, not after a wait for the database (up to DATABASE_STARTUP_TIMEOUT_MS) and its
 * migrations. A probe listens and closes; the service listens once it is ready.
 */
async function checkAddress(host: string, port: number): Promise<void> {
  const probe = net.createServer();
  await new Promise<void>((resolve, reject) => {
    probe.once('error', reject);
    probe.listen({ host, port, exclusive: true }, () => resolve());
  });
  await new Promise<void>((resolve) => probe.close(() => resolve()));
}

/**
 * Waits for the database at start (a container may start before its database): a failed
 * trivial query is retried with backoff until DATABASE_STARTUP_TIMEOUT_MS, each wait noted
 * on stderr, then the start fails naming the database (never its password).
 */
async function waitForDatabase(storage: Storage, config: Config): Promise<void> {
  const deadline = Date.now() + config.databaseStartupTimeoutMs;
  for (let delay = 250; ; delay = Math.min(delay * 2, 5000)) {
    try {
      await sql`select 1`.execute(storage.db);
      return;
    } catch (err) {
      const reason = (err as Error).message || String(err);
      // Only a database out of reach may come: a file that is no database, a wrong password or a
      // missing database answers the same at every try.
      if (!isDatabaseOutOfReach(err)) throw new Error(`Could not open ${storage.name}: ${reason}`);
      if (Date.now() + delay > deadline) {
        throw new Error(`Could not reach ${storage.name} within ${config.databaseStartupTimeoutMs} ms: ${reason}`);
      }
      process.stderr.write(`${storage.name} is not reachable yet (${reason}); retrying in ${delay} ms\n`);
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }
}

/** `npm start` / `copilot-service serve`: run until SIGTERM or SIGINT, then drain and exit 0. */
export async function serve(config: Config = loadConfig()): Promise<void> {
  // Until the service is up (or has failed), nothing else may keep the process alive: a failed
  // start closes what it opened, and Node must not exit, code 0, before the error is reported.
  const starting = setInterval(() => undefined, 60_000);
  // One handler for the whole life of the process: a signal Node has taken but not yet handed
  // to JavaScript (the loop busy) is dropped when its listener is swapped for another, so a
  // SIGTERM at the end of the start was lost and the service served on (clock sweep).
  let service: RunningService | null = null;
  let closing = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (service === null) {
      // While starting (waiting for the database, migrating): stop at once, as without a
      // handler, but say so: nothing was served yet, so there is nothing to drain.
      process.stderr.write(`Stopped by ${signal} while starting: nothing was served.\n`);
      process.exit(128 + (signal === 'SIGINT' ? 2 : 15));
    }
    if (closing) return;
    closing = true;
    drain(service, signal, config.shutdownTimeoutMs);
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  try {
    service = await startService(config);
  } finally {
    clearInterval(starting);
  }
}

/** Finishes in-flight requests and exits 0; past SHUTDOWN_TIMEOUT_MS, closes storage and exits 1. */
function drain(service: RunningService, signal: NodeJS.Signals, shutdownTimeoutMs: number): void {
  service.app.log.info({ signal }, 'Shutting down: finishing in-flight requests');
  const timer = setTimeout(() => {
    service.app.log.error('Shutdown took too long; closing storage and exiting');
    // Storage is closed on this path too (bounded, so a stuck close cannot hold the exit).
    const bound = new Promise((resolve) => setTimeout(resolve, 2000).unref());
    void Promise.race([service.services.storage.close().catch(() => undefined), bound]).then(() => process.exit(1));
  }, shutdownTimeoutMs);
  timer.unref();
  service.close().then(
    () => process.exit(0),
    (err) => {
      service.app.log.error({ err }, 'Error while shutting down');
      process.exit(1);
    },
  );
}

export function reportStartupError(err: unknown): never {
  const e = err as { code?: string; address?: string; port?: number; message?: string; syscall?: string; hostname?: string };
  if (err instanceof ConfigError || err instanceof DataDirError) {
    process.stderr.write(`${(err as Error).message}\n`);
  } else if (e.code === 'EADDRINUSE') {
    process.stderr.write(
      `Could not start: ${e.address ?? 'the address'}:${e.port ?? '?'} is already in use by another process; choose another PORT (or HOST).\n`,
    );
  } else if (e.syscall === 'getaddrinfo' || e.code === 'EADDRNOTAVAIL') {
    // Listening on a name that resolves nowhere, or an address this machine does not have.
    process.stderr.write(
      `Could not start: HOST ${e.hostname ?? e.address ?? ''} is not an address of this machine (${e.code}); use an address it has, 0.0.0.0 or :: for every one, or 127.0.0.1.\n`,
    );
  } else if (e.code === 'EACCES' && e.port !== undefined) {
    process.stderr.write(`Could not start: this user may not listen on ${e.address ?? ''}:${e.port}; choose a PORT above 1023.\n`);
  } else {
    process.stderr.write(`Could not start: ${e.message ?? String(err)}\n`);
  }
  process.exit(1);
}
