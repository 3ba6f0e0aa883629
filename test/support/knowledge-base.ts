/**
 * Knowledge-base test harness: the app built as server.ts builds it (the ingestion worker
 * told when links are queued), a query tap to pause or break a statement inside a
 * transaction, and small helpers over the HTTP API and the tables.
 */
import type { LightMyRequestResponse } from 'fastify';
import { sql, type KyselyPlugin, type PluginTransformQueryArgs, type PluginTransformResultArgs, type QueryResult, type RootOperationNode, type UnknownRow } from 'kysely';
import { afterAll, beforeAll, expect } from 'vitest';
import { buildApp } from '../../src/app.js';
import { createServices } from '../../src/services.js';
import { loadConfig } from '../../src/config.js';
import { createApiKey, type Scope } from '../../src/domain/auth/api-keys.js';
import type { KnowledgeBaseLink } from '../../src/domain/wire.js';
import { IngestionWorker, type WorkerOptions } from '../../src/jobs/ingestion-worker.js';
import { openStorage, type DialectName, type Storage } from '../../src/storage/database.js';
import { migrateToLatest } from '../../src/storage/migrate.js';
import { PageServer } from './pages.js';
import type { TestApp } from './app.js';
import { createTestDatabase, createTestStorage, type TestDatabase } from './databases.js';
import type { TaskThreads } from '../../src/threads/task-threads.js';
import { testTaskThreads } from './task-threads.js';
import { call } from './http.js';

export const ALLOW_NETWORKS = '127.0.0.0/8,::1/128';

// ---------------------------------------------------------------------------------------------
// Polling

export async function waitUntil<T>(
  probe: () => Promise<T | null | undefined | false> | T | null | undefined | false,
  what: string,
  { timeoutMs = 20_000, intervalMs = 20 } = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== null && value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

// ---------------------------------------------------------------------------------------------
// The query tap

type StatementKind = 'select' | 'insert' | 'update' | 'delete';
export interface StatementMatch {
  kind: StatementKind;
  table: string;
  /** Let this many matching statements through first. */
  skip?: number;
}

interface Trap {
  match: StatementMatch;
  skipped: number;
  action: 'pause' | 'fail';
  reached: () => void;
  released: Promise<void>;
}

export interface Pause {
  /** Resolves when the statement has run (its transaction is still open). */
  reached: Promise<void>;
  /** Lets the statement's caller go on. */
  release(): void;
}

function describeStatement(node: RootOperationNode): StatementMatch | null {
  const name = (table: unknown): string | undefined =>
    (table as { kind?: string; table?: { identifier?: { name?: string } } } | undefined)?.kind === 'TableNode'
      ? (table as { table: { identifier: { name: string } } }).table.identifier.name
      : undefined;
  switch (node.kind) {
    case 'SelectQueryNode': {
      const t = name(node.from?.froms[0]);
      return t ? { kind: 'select', table: t } : null;
    }
    case 'InsertQueryNode': {
      const t = name(node.into);
      return t ? { kind: 'insert', table: t } : null;
    }
    case 'UpdateQueryNode': {
      const t = name(node.table);
      return t ? { kind: 'update', table: t } : null;
    }
    case 'DeleteQueryNode': {
      const t = name(node.from.froms[0]);
      return t ? { kind: 'delete', table: t } : null;
    }
    default:
      return null;
  }
}

/**
 * A Kysely plugin that stops the next statement matching a kind and table right after it
 * has run — inside its transaction — until the test releases it, or makes it fail as if
 * the database had failed. Each trap fires once.
 */
export class QueryTap implements KyselyPlugin {
  private readonly traps: Trap[] = [];
  private readonly pending = new Map<unknown, Trap>();

  pauseAfter(match: StatementMatch): Pause {
    let reached!: () => void;
    const reachedPromise = new Promise<void>((resolve) => (reached = resolve));
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    this.traps.push({ match, skipped: 0, action: 'pause', reached, released });
    return { reached: reachedPromise, release };
  }

  failAfter(match: StatementMatch): Promise<void> {
    let reached!: () => void;
    const reachedPromise = new Promise<void>((resolve) => (reached = resolve));
    this.traps.push({ match, skipped: 0, action: 'fail', reached, released: Promise.resolve() });
    return reachedPromise;
  }

  clear(): void {
    this.traps.splice(0);
  }

  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    const statement = describeStatement(args.node);
    if (statement) {
      const i = this.traps.findIndex((t) => t.match.kind === statement.kind && t.match.table === statement.table);
      const trap = this.traps[i];
      if (trap && trap.skipped < (trap.match.skip ?? 0)) trap.skipped++;
      else if (trap) this.pending.set(args.queryId, this.traps.splice(i, 1)[0]!);
    }
    return args.node;
  }

  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    const trap = this.pending.get(args.queryId);
    if (!trap) return args.result;
    this.pending.delete(args.queryId);
    trap.reached();
    if (trap.action === 'fail') throw new Error('simulated database failure (test tap)');
    await trap.released;
    return args.result;
  }
}

/** The storage with every statement on the write connection going through the tap. */
export function tappedStorage(storage: Storage, tap: QueryTap): Storage {
  const db = storage.db.withPlugin(tap);
  return {
    dialect: storage.dialect,
    db,
    get readDb() {
      return storage.readDb;
    },
    close: () => storage.close(),
  };
}

// ---------------------------------------------------------------------------------------------
// The app with its worker

export interface Key {
  id: string;
  /** The Authorization header value. */
  header: string;
}

export interface KbTestApp extends TestApp {
  database: TestDatabase;
  /** The storage as created (no tap). */
  rawStorage: Storage;
  tap: QueryTap;
  /** The worker started with the app, or null when built with `worker: false`. */
  worker: IngestionWorker | null;
  /** Worker options as the app's worker got them (a fetch policy allowing 127.0.0.0/8). */
  workerOptions: WorkerOptions;
  /** A worker on the app's (tapped) storage, not started (call runOne(), or start()); stopped on close. */
  newWorker(options?: Partial<WorkerOptions>): IngestionWorker;
  key(scopes: Scope[], bots?: string[]): Promise<Key>;
}

export async function buildKbTestApp(
  dialect: DialectName,
  options: { worker?: Partial<WorkerOptions> | false; env?: Record<string, string> } = {},
): Promise<KbTestApp> {
  const { storage: rawStorage, database, cleanup } = await createTestStorage(dialect);
  const tap = new QueryTap();
  const storage = tappedStorage(rawStorage, tap);
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
  const { validationCache } = services;
  const workerOptions: WorkerOptions = {
    concurrency: 2,
    pollIntervalMs: config.kbPollIntervalMs,
    fetchPolicy: services.fetchPolicy,
    maxAttempts: 3,
    backoffMs: 50,
    taskThreads,
    ...(options.worker || {}),
  };
  const workers: IngestionWorker[] = [];
  const worker = options.worker === false ? null : new IngestionWorker(storage, workerOptions);
  if (worker) workers.push(worker);
  // The test's own workers (their options vary by test) stand in for the services' jobs.
  const app = await buildApp({ ...services, linksQueued: () => workers.forEach((w) => w.notify()) }, { logger: false });
  await app.ready();
  worker?.start();

  const key = async (scopes: Scope[], bots?: string[]): Promise<Key> => {
    const created = await createApiKey(rawStorage.db, { scopes, bots });
    return { id: created.id, header: `Bearer ${created.key}` };
  };
  const admin = (await key(['admin'])).header;
  return {
    app,
    storage,
    rawStorage,
    database,
    config,
    taskThreads,
    validationCache,
    admin,
    tap,
    worker,
    workerOptions,
    bearer: async (scopes, bots) => (await key(scopes, bots)).header,
    key,
    newWorker(extra = {}) {
      const w = new IngestionWorker(storage, { ...workerOptions, ...extra });
      workers.push(w);
      return w;
    },
    async close() {
      tap.clear();
      for (const w of workers) await w.stop();
      await app.close();
      await services.close();
      await taskThreads.close();
      await cleanup();
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Over the HTTP API

/** A knowledge-base link on the wire. */
export type WireLink = KnowledgeBaseLink;

export async function createBot(t: TestApp, name = 'Knowledge bot'): Promise<string> {
  const res = await call(t, 'POST', '/backend/api/copilots', { payload: { name } });
  expect(res.statusCode, res.body).toBe(201);
  return (res.json() as { id: string }).id;
}

export const kbPath = (bot: string) => `/backend/knowledgebase/b/${bot}`;

export function postLinks(t: TestApp, bot: string, links: unknown, key?: string | null): Promise<LightMyRequestResponse> {
  return call(t, 'POST', kbPath(bot), { payload: { links }, key });
}

export function deleteLinks(t: TestApp, bot: string, links: unknown, key?: string | null): Promise<LightMyRequestResponse> {
  return call(t, 'DELETE', kbPath(bot), { payload: { links }, key });
}

export async function search(t: TestApp, bot: string, q: string, limit?: number) {
  const query = new URLSearchParams({ q, ...(limit !== undefined && { limit: String(limit) }) });
  const res = await call(t, 'GET', `${kbPath(bot)}/search?${query.toString()}`);
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as { bot_id: string; query: string; results: Array<{ url: string; passage: number; content: string; score: number }> };
}

/** The bot's links by URL (null when the knowledge base answers 404). */
export async function links(t: TestApp, bot: string): Promise<Map<string, WireLink> | null> {
  const res = await call(t, 'GET', `${kbPath(bot)}?limit=1000`);
  if (res.statusCode === 404) return null;
  expect(res.statusCode, res.body).toBe(200);
  return new Map((res.json() as { links: WireLink[] }).links.map((l) => [l.url, l]));
}

const FINAL = ['indexed', 'failed'];

/** Waits until every URL's link is in a final state (or satisfies `done`), and returns them. */
export async function waitForLinks(
  t: TestApp,
  bot: string,
  urls: string[],
  done: (link: WireLink) => boolean = (l) => FINAL.includes(l.status),
  timeoutMs = 20_000,
): Promise<Map<string, WireLink>> {
  return waitUntil(
    async () => {
      const all = await links(t, bot);
      return all && urls.every((u) => all.get(u) && done(all.get(u)!)) ? all : null;
    },
    `links ${urls.join(', ')} of bot ${bot}`,
    { timeoutMs },
  );
}

// ---------------------------------------------------------------------------------------------
// Straight from the tables

/** Passages whose link_id has no kb_links row. */
export async function orphanPassages(storage: Storage): Promise<number> {
  const { rows } = await sql<{ n: number }>`
    select count(*) as n from kb_passages p where not exists (select 1 from kb_links l where l.id = p.link_id)`.execute(storage.db);
  return Number(rows[0]!.n);
}

export async function linkRows(storage: Storage, bot: string, urls?: string[]) {
  let q = storage.db.selectFrom('kb_links').selectAll().where('bot_id', '=', bot);
  if (urls) q = q.where('url', 'in', urls);
  return q.execute();
}

export async function passageRows(storage: Storage, linkIds: string[]) {
  if (linkIds.length === 0) return [];
  return storage.db.selectFrom('kb_passages').selectAll().where('link_id', 'in', linkIds).orderBy('seq').execute();
}

/**
 * SQLite only: entries of the FTS5 index matching a word that a search can return (their
 * passage exists). Entries of deleted passages linger until the worker sweeps them
 * (test/knowledgebase/search-index-sweep.test.ts) but are never returned.
 */
export async function ftsHits(storage: Storage, word: string): Promise<number> {
  const { rows } = await sql<{ n: number }>`select count(*) as n from kb_passages_fts f join kb_passages p on p.id = f.rowid
    where kb_passages_fts match ${`"${word}"`}`.execute(storage.db);
  return Number(rows[0]!.n);
}

/** SQLite only: every entry of the FTS5 index matching a word, stale ones included. */
export async function rawFtsHits(storage: Storage, word: string): Promise<number> {
  const { rows } = await sql<{ n: number }>`select count(*) as n from kb_passages_fts where kb_passages_fts match ${`"${word}"`}`.execute(storage.db);
  return Number(rows[0]!.n);
}

/** PostgreSQL only: sessions on this database waiting for a lock held by another transaction. */
export async function lockWaiters(storage: Storage): Promise<number> {
  const { rows } = await sql<{ n: number }>`
    select count(*) as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`.execute(storage.db);
  return Number(rows[0]!.n);
}

/** A deterministic pseudo-random generator (mulberry32), so a failing schedule can be replayed by its seed. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// ---------------------------------------------------------------------------------------------
// Several instances on one database

export interface Instances {
  /** Two storages: two connection pools on PostgreSQL (two instances); the same one twice on SQLite. */
  readonly storages: Storage[];
  /** Workers the test starts; stopped after the describe block. */
  readonly workers: IngestionWorker[];
  /** Each instance's task threads, for its workers' options. */
  readonly taskThreads: TaskThreads[];
  readonly pages: PageServer;
}

/**
 * Two instances on one throw-away database, and a page server, for the describe block that
 * calls this (SQLite has one instance per file: one storage serves both "instances").
 */
export function useTwoInstances(dialect: DialectName): Instances {
  let database: TestDatabase | undefined;
  let pages: PageServer | undefined;
  const storages: Storage[] = [];
  const workers: IngestionWorker[] = [];
  const taskThreads: TaskThreads[] = [];
  beforeAll(async () => {
    taskThreads.push(testTaskThreads(), testTaskThreads());
    database = await createTestDatabase(dialect);
    pages = await PageServer.start();
    const open = () => openStorage({ databaseUrl: database!.databaseUrl, dataDir: database!.dataDir, poolSize: 4 });
    const first = open();
    storages.push(first);
    await migrateToLatest(first);
    storages.push(dialect === 'postgres' ? open() : first);
  });
  afterAll(async () => {
    for (const w of workers) await w.stop();
    for (const threads of taskThreads) await threads.close();
    for (const s of new Set(storages)) await s.close();
    await pages?.close();
    await database?.drop();
  });
  return {
    storages,
    workers,
    taskThreads,
    get pages() {
      return pages!;
    },
  };
}

// ---------------------------------------------------------------------------------------------
// The app and a page server for one describe block

/**
 * Builds the knowledge-base app (`options` as for buildKbTestApp) and a page server before
 * the describe block that calls this, hands both to `use`, and closes them after it.
 */
export function useKbAppWithPages(
  dialect: DialectName,
  options: Parameters<typeof buildKbTestApp>[1],
  use: (made: { t: KbTestApp; pages: PageServer }) => void,
): void {
  let made: { t: KbTestApp; pages: PageServer } | undefined;
  beforeAll(async () => {
    const pages = await PageServer.start();
    made = { t: await buildKbTestApp(dialect, options), pages };
    use(made);
  });
  afterAll(async () => {
    await made?.t.close();
    await made?.pages.close();
  });
}
