/**
 * The service under test, in a child process of the benchmark (so the load generator and
 * the service do not share an event loop or a core): started with startService() exactly
 * as `copilot-service serve` does, driven by the runner over IPC.
 *
 * Commands: start {env} → {url, key}; clearCache;
 * floor {file, parser} → ms; seedKnowledgeBase {botId, links, passagesPerLink} → {urls};
 * countPassages {botId} → the bot's passages still stored;
 * analyze (PostgreSQL: ANALYZE, what autovacuum would have done by now);
 * settleIndex {botId} → seconds until its search index is merged;
 * searchBare {botId, queries, limit} → ms per query; kbSnapshot {botId} → links, passages, knowledge base;
 * memory → {rss, maxRssKb} of this process (every thread);
 * profileStart {intervalUs}; profileStop {file}; stop.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { sql } from 'kysely';
import { loadConfig } from '../src/config.js';
import { createApiKey } from '../src/domain/auth/api-keys.js';
import { startService, type RunningService } from '../src/server.js';
import { searchPassages } from '../src/storage/knowledge-base.repository.js';
import { nextMerge } from '../src/storage/search-index.repository.js';
import { queryTerms } from '../src/text/search-terms.js';
import { seedIndexedLinks } from '../test/support/seed.js';
import { passageText } from './lib/text.js';

let service: RunningService | null = null;
let profiler: Session | null = null;
const documents = new Map<string, Buffer>();
const parsers = new Map<string, (text: string) => unknown>();

async function parserFor(name: string): Promise<(text: string) => unknown> {
  let parse = parsers.get(name);
  if (!parse) {
    if (name === 'json') parse = JSON.parse;
    else if (name === 'js-yaml') parse = (await import('js-yaml')).load;
    else if (name === 'yaml') parse = (await import('yaml')).parse as (text: string) => unknown;
    else throw new Error(`unknown parser ${name}`);
    parsers.set(name, parse);
  }
  return parse;
}

const handlers: Record<string, (args: any) => unknown> = {
  async start(args: { env: Record<string, string> }) {
    const config = loadConfig({ HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'silent', ...args.env });
    service = await startService(config);
    const key = await createApiKey(service.services.storage.db, { scopes: ['admin'], name: 'bench' });
    return { url: service.address, key: key.key, dialect: service.services.storage.dialect };
  },

  /**
   * A bot's knowledge base as stored, to tell what a run wrote: every link row (all columns)
   * and its passages' count, highest id and versions.
   */
  async kbSnapshot(args: { botId: string }) {
    if (!service) throw new Error('start first');
    const { db } = service.services.storage;
    const links = await db.selectFrom('kb_links').selectAll().where('bot_id', '=', args.botId).orderBy('id').execute();
    const passages = await db
      .selectFrom('kb_passages')
      .select((eb) => [eb.fn.countAll<number>().as('n'), eb.fn.max('id').as('max_id'), eb.fn.sum<number>('version').as('versions')])
      .where('bot_id', '=', args.botId)
      .executeTakeFirstOrThrow();
    const kb = await db.selectFrom('knowledge_bases').selectAll().where('bot_id', '=', args.botId).executeTakeFirst();
    return {
      links,
      passages: { n: Number(passages.n), max_id: Number(passages.max_id), versions: Number(passages.versions) },
      knowledge_base: kb ?? null,
    };
  },

  /**
   * This machine's PostgreSQL runs with autovacuum off (the service warns about it at start);
   * a default server analyzes a table within a minute of it growing. Without statistics the
   * planner takes 10,000 seeded copilots for about fifty and reads the whole table for each page.
   */
  async analyze() {
    if (!service) throw new Error('start first');
    if (service.services.storage.dialect === 'postgres') await sql`analyze`.execute(service.services.storage.db);
    return null;
  },

  clearCache() {
    service?.services.validationCache.clear();
    return null;
  },

  /** The in-process floor: decode, parse and JSON.stringify the bytes; returns milliseconds. */
  async floor(args: { file: string; parser: string }) {
    let bytes = documents.get(args.file);
    if (!bytes) {
      bytes = readFileSync(args.file);
      documents.set(args.file, bytes);
    }
    const parse = await parserFor(args.parser);
    const started = performance.now();
    const text = JSON.stringify(parse(bytes.toString('utf8')));
    const ms = performance.now() - started;
    if (text.length === 0) throw new Error('empty floor output');
    return ms;
  },

  /**
   * A knowledge base of `links` indexed links with `passagesPerLink` passages each,
   * written through the service's own database connection (search index included), in
   * one transaction: much faster than ingesting pages, same rows.
   */
  async seedKnowledgeBase(args: { botId: string; links: number; passagesPerLink: number; prefix: string }) {
    if (!service) throw new Error('start first');
    const urls = Array.from({ length: args.links }, (_, i) => `https://docs.example.com/${args.prefix}/page-${i}`);
    let n = 0;
    await service.services.storage.db.transaction().execute(async (trx) => {
      // 200 links at a time: the passages' text is made as it is written, never all at once.
      for (let i = 0; i < urls.length; i += 200) {
        const links = urls.slice(i, i + 200).map((url) => ({ url, passages: Array.from({ length: args.passagesPerLink }, () => passageText(n++)) }));
        await seedIndexedLinks(trx, args.botId, links);
      }
    });
    return { urls };
  },

  /** The bot's passages still stored (a deleted link's are deleted in the background). */
  async countPassages(args: { botId: string }) {
    if (!service) throw new Error('start first');
    const row = await service.services.storage.db
      .selectFrom('kb_passages')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('bot_id', '=', args.botId)
      .executeTakeFirstOrThrow();
    return Number(row.n);
  },

  /**
   * Waits until the service's housekeeping has merged the bot's search index as far as it
   * merges (docs/search-index.md): a knowledge base seeded at once holds the segments of its
   * seeding, where one ingested page by page would have been merged as it grew. Seconds waited.
   */
  async settleIndex(args: { botId: string }) {
    if (!service) throw new Error('start first');
    const started = performance.now();
    while (await nextMerge(service.services.storage.db, args.botId)) {
      if (performance.now() - started > 30 * 60_000) throw new Error('the index did not settle in 30 minutes');
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    return (performance.now() - started) / 1000;
  },

  /**
   * Each query searched bare, one after another: the repository's statement through the
   * connection the search route uses (storage.scanDb; no HTTP, auth or JSON); milliseconds per query.
   */
  async searchBare(args: { botId: string; queries: string[]; limit: number }) {
    if (!service) throw new Error('start first');
    const { scanDb, dialect } = service.services.storage;
    const ms: number[] = [];
    for (const q of args.queries) {
      const started = performance.now();
      await searchPassages(scanDb, dialect, args.botId, queryTerms(q), args.limit);
      ms.push(performance.now() - started);
    }
    return ms;
  },

  /** V8's CPU profiler (what --cpu-prof uses), scoped to what the runner measures. */
  async profileStart(args: { intervalUs?: number }) {
    profiler = new Session();
    profiler.connect();
    await profiler.post('Profiler.enable');
    await profiler.post('Profiler.setSamplingInterval', { interval: args.intervalUs ?? 500 });
    await profiler.post('Profiler.start');
    return null;
  },

  /** Resident set size of this process now (bytes) and at its peak (KiB), every thread. */
  async memory() {
    return { rss: process.memoryUsage().rss, maxRssKb: process.resourceUsage().maxRSS };
  },

  /** CPU time of this process, every thread (µs). */
  async cpuUsage() {
    return process.cpuUsage();
  },

  async profileStop(args: { file: string }) {
    if (!profiler) throw new Error('profileStart first');
    const { profile } = await profiler.post('Profiler.stop');
    writeFileSync(args.file, JSON.stringify(profile));
    profiler.disconnect();
    profiler = null;
    return { file: args.file };
  },

  async stop() {
    await service?.close();
    service = null;
    return null;
  },
};

process.on('message', (message: { id: number; cmd: string; args?: unknown }) => {
  const handler = handlers[message.cmd];
  Promise.resolve()
    .then(() => {
      if (!handler) throw new Error(`unknown command ${message.cmd}`);
      return handler(message.args ?? {});
    })
    .then(
      (result) => process.send!({ id: message.id, ok: true, result }),
      (err: unknown) => process.send!({ id: message.id, ok: false, error: err instanceof Error ? (err.stack ?? err.message) : String(err) }),
    );
});
process.on('disconnect', () => {
  // The runner went away: close and exit.
  void Promise.resolve(handlers.stop!({})).finally(() => process.exit(0));
});
