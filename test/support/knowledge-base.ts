/**
 * Knowledge-base test helpers: polling, small helpers over the HTTP API and the tables, and
 * two instances on one database (the app itself: buildTestApp in app.ts).
 */
import type { LightMyRequestResponse } from 'fastify';
import { sql } from 'kysely';
import { afterAll, beforeAll, expect } from 'vitest';
import type { Crawl } from '../../src/domain/crawl-wire.js';
import { decodeIds, decodePostings, unpackBlock } from '../../src/domain/knowledgebase/search-index.js';
import type { KnowledgeBaseLink } from '../../src/domain/wire.js';
import type { IngestionWorker } from '../../src/jobs/ingestion-worker.js';
import { openStorage, type DialectName, type Storage } from '../../src/storage/database.js';
import { deleteLinks as deleteLinkRows, deleteRetiredPassages } from '../../src/storage/knowledge-base.repository.js';
import { migrateToLatest } from '../../src/storage/migrate.js';
import { inTransaction } from '../../src/storage/transaction.js';
import type { TaskThreads } from '../../src/threads/task-threads.js';
import type { TestApp } from './app.js';
import { createTestDatabase, type TestDatabase } from './databases.js';
import { call, kbPath } from './http.js';
import { PageServer } from './pages.js';
import { testTaskThreads } from './task-threads.js';

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
// Over the HTTP API

/** A knowledge-base link on the wire. */
export type WireLink = KnowledgeBaseLink;

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

/** A bot's crawls (`crawlPath(bot)`, POST) or one of them (`crawlPath(bot, id)`). */
export const crawlPath = (bot: string, id = '') => `${kbPath(bot)}/crawl${id === '' ? '' : `s/${id}`}`;

/** GET …/crawls/:id, answered 200. */
export async function crawlOf(t: TestApp, bot: string, id: string): Promise<Crawl> {
  const res = await call(t, 'GET', crawlPath(bot, id));
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as Crawl;
}

/** Waits until the crawl is no longer queued or running, and returns it. */
export function crawlFinished(t: TestApp, bot: string, id: string): Promise<Crawl> {
  return waitUntil(
    async () => {
      const c = await crawlOf(t, bot, id);
      return c.state === 'queued' || c.state === 'running' ? null : c;
    },
    'the crawl to finish',
    { timeoutMs: 30_000 },
  );
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

/**
 * Passages that nothing will delete: their link_id has no kb_links row, and no retired set
 * holds them (a deleted link's passages wait in one for the housekeeping job: sweepRetired).
 */
export async function orphanPassages(storage: Storage): Promise<number> {
  const { rows } = await sql<{ n: number }>`
    select count(*) as n from kb_passages p
    where not exists (select 1 from kb_links l where l.id = p.link_id)
      and not exists (select 1 from kb_hidden_passages h where h.link_id = p.link_id and h.version = p.version and h.state = 'retired')`.execute(storage.db);
  return Number(rows[0]!.n);
}

/** What the search index housekeeping does in the background, all at once: deletes the passages of every retired set. */
export async function sweepRetired(storage: Storage): Promise<void> {
  await deleteRetiredPassages(storage.db, storage.dialect, { budget: Number.POSITIVE_INFINITY });
}

/** Deletes links as the interface does (their passages hidden), then their passages as the housekeeping job does. */
export async function deleteLinksAndPassages(storage: Storage, linkIds: readonly string[]): Promise<void> {
  await inTransaction(storage.db, (trx) => deleteLinkRows(trx, linkIds, '2024-01-01T00:00:00.000000Z'));
  await sweepRetired(storage);
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
 * Passages of any bot that the search index holds for a word and a search can see: in some
 * segment's postings of the word, not excluded (deleted), and stored. Deleted passages stay in
 * their segments, excluded, until a merge drops them (test/knowledgebase/search-index-sweep.test.ts).
 */
export async function indexHits(storage: Storage, word: string): Promise<number> {
  let n = 0;
  for (const [botId, ids] of await postingsOf(storage, word)) {
    const excluded = decodeIds((await storage.db.selectFrom('kb_excluded').select('ids').where('bot_id', '=', botId).executeTakeFirst())?.ids);
    const seen = decodePostings(ids, excluded);
    const list = [...seen.ids.subarray(0, seen.count)];
    for (let i = 0; i < list.length; i += 500)
      n += (
        await storage.db
          .selectFrom('kb_passages')
          .select('id')
          .where('id', 'in', list.slice(i, i + 500))
          .execute()
      ).length;
  }
  return n;
}

/** Postings of a word in the search index, of any bot, excluded ones included (what merges have not dropped yet). */
export async function rawIndexHits(storage: Storage, word: string): Promise<number> {
  let n = 0;
  for (const blobs of (await postingsOf(storage, word)).values()) n += decodePostings(blobs).count;
  return n;
}

/**
 * Ids in the search index's postings (any bot, any term) that a search would see but that are no
 * longer stored: neither stored nor excluded. Must always be 0, whatever ran concurrently.
 */
export async function phantomPostings(storage: Storage): Promise<number> {
  const byBot = new Map<string, Set<number>>();
  for (const r of await indexEntries(storage)) {
    const list = decodePostings([r.postings]);
    const ids = byBot.get(r.bot_id) ?? new Set<number>();
    for (let i = 0; i < list.count; i++) ids.add(list.ids[i]!);
    byBot.set(r.bot_id, ids);
  }
  let n = 0;
  for (const [botId, ids] of byBot) {
    const excluded = new Set(decodeIds((await storage.db.selectFrom('kb_excluded').select('ids').where('bot_id', '=', botId).executeTakeFirst())?.ids));
    const candidates = [...ids].filter((id) => !excluded.has(id));
    for (let i = 0; i < candidates.length; i += 500) {
      const batch = candidates.slice(i, i + 500);
      const stored = (await storage.db.selectFrom('kb_passages').select('id').where('id', 'in', batch).execute()).length;
      n += batch.length - stored;
    }
  }
  return n;
}

async function postingsOf(storage: Storage, word: string): Promise<Map<string, Uint8Array[]>> {
  const byBot = new Map<string, Uint8Array[]>();
  for (const r of await indexEntries(storage)) if (r.term === word) byBot.set(r.bot_id, [...(byBot.get(r.bot_id) ?? []), r.postings]);
  return byBot;
}

/** Every (bot, segment, term, blob) of the search index, unpacked from its blocks. */
export async function indexEntries(storage: Storage): Promise<Array<{ bot_id: string; segment: number; term: string; postings: Uint8Array }>> {
  const rows = await storage.db.selectFrom('kb_blocks').select(['bot_id', 'segment', 'block']).execute();
  return rows.flatMap((r) => unpackBlock(r.block).map((e) => ({ bot_id: r.bot_id, segment: Number(r.segment), ...e })));
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
