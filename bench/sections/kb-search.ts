/**
 * Section 6 — knowledge-base search at scale (issue 16's target: at 1,000,000 passages,
 * search p99 ≤ 50 ms and ≤ 2× the bare query on the same index, while ingestion runs).
 *
 * One bot's knowledge base is seeded with `links × passagesPerLink` passages straight into
 * the database (service-host seedKnowledgeBase: the same rows and search index as
 * ingestion writes). Then, while the service's workers ingest a local site for another bot,
 * search requests arrive at a fixed rate through HTTP (auth, route, JSON: what a client
 * sees), after the same queries ran bare in the service process (service-host searchBare:
 * the repository's statement through the read connection, no HTTP), three times each. Queries mix one rare
 * word, two words and a common word of the generated vocabulary (bench/lib/text.ts).
 */
import type { ServiceHost } from '../lib/host.js';
import { json, openLoop } from '../lib/http.js';
import { latencySummary, round } from '../lib/stats.js';
import { searchQueries } from '../lib/text.js';
import { startPageServer } from './knowledge-base.js';

export interface SearchResult {
  dialect: string;
  passages: number;
  seed_seconds: number;
  /** Seconds the service's housekeeping took to merge the seeded index (measured after it). */
  merge_seconds?: number;
  rate_per_s: number;
  ingesting_pages: number;
  /** Latency of the searches answered (200); `refused`: answered 429 (the bot had too many waiting); `errors`: anything else. */
  http: { n: number; p50_ms: number; p99_ms: number; max_ms: number; refused: number; errors: number };
  bare: { n: number; p50_ms: number; p99_ms: number; max_ms: number };
  /**
   * The same queries, bare, for another copilot whose knowledge base is one passage, beside the
   * large one: what one tenant's data costs another's search (nothing, once each bot's terms are
   * indexed under it on SQLite, migration 017).
   */
  beside: { n: number; p50_ms: number; p99_ms: number; max_ms: number };
  /** HTTP p99 over bare p99. */
  ratio_p99: number;
}

export async function benchSearch(
  host: ServiceHost,
  service: { url: string; key: string; dialect: string },
  opts: { links: number; passagesPerLink: number; rate: number; seconds: number; log: (line: string) => void },
): Promise<SearchResult> {
  const bot = await json<{ id: string }>('POST', `${service.url}/backend/api/copilots`, service.key, { name: 'kb search' });
  const seedStart = performance.now();
  await host.call('seedKnowledgeBase', { botId: bot.id, links: opts.links, passagesPerLink: opts.passagesPerLink, prefix: 'search' });
  const seedSeconds = round((performance.now() - seedStart) / 1000, 1);
  const passages = opts.links * opts.passagesPerLink;
  opts.log(`    ${service.dialect}: seeded ${passages.toLocaleString('en-US')} passages in ${seedSeconds} s`);
  // Ingested page by page, its index would have been merged as it grew (docs/search-index.md).
  const settleSeconds = round(await host.call<number>('settleIndex', { botId: bot.id }), 1);
  opts.log(`    ${service.dialect}: its search index merged by the service's housekeeping in ${settleSeconds} s`);
  await host.call('analyze');

  const list = searchQueries(60);
  // Another copilot beside it, with a knowledge base of one passage of the same vocabulary.
  const small = await json<{ id: string }>('POST', `${service.url}/backend/api/copilots`, service.key, { name: 'kb search beside' });
  await host.call('seedKnowledgeBase', { botId: small.id, links: 1, passagesPerLink: 1, prefix: 'beside' });
  const headers = { authorization: `Bearer ${service.key}` };
  const searchUrl = (q: string) => `${service.url}/backend/knowledgebase/b/${bot.id}/search?q=${encodeURIComponent(q)}&limit=10`;
  // Warm both paths (page cache, prepared statements, JIT) before anything is measured.
  for (const q of list) await json('GET', searchUrl(q), service.key);
  await host.call('searchBare', { botId: bot.id, queries: list, limit: 10 });
  // Before any ingestion: the small copilot's searches, alone on the machine.
  await host.call('searchBare', { botId: small.id, queries: list, limit: 10 });
  const beside: number[] = [];
  for (let round = 0; round < 3; round++) beside.push(...(await host.call<number[]>('searchBare', { botId: small.id, queries: list, limit: 10 })));

  // Ingestion of another bot's pages keeps the writer and the task threads busy meanwhile.
  const site = await startPageServer();
  const other = await json<{ id: string }>('POST', `${service.url}/backend/api/copilots`, service.key, { name: 'kb search ingestion' });
  const pages = Math.max(100, opts.rate * opts.seconds);
  for (let i = 0; i < pages; i += 500) {
    const links = Array.from({ length: Math.min(500, pages - i) }, (_, k) => `${site.origin}/kb/search/${i + k}`);
    await json('POST', `${service.url}/backend/knowledgebase/b/${other.id}`, service.key, { links });
  }
  try {
    // First the bare queries, one at a time, then the same queries over HTTP at the rate:
    // both while the other bot's pages are ingested, never competing with each other.
    const bare: number[] = [];
    for (let round = 0; round < 3; round++) bare.push(...(await host.call<number[]>('searchBare', { botId: bot.id, queries: list, limit: 10 })));
    let next = 0;
    const loop = openLoop(searchUrl(list[0]!), headers, opts.rate, () => searchUrl(list[next++ % list.length]!));
    await new Promise((resolve) => setTimeout(resolve, opts.seconds * 1000));
    const samples = await loop.stop();
    // A refusal (429: the bot's searches waiting for a scan connection were at their limit) is
    // answered at once: counted apart, never as a fast search.
    const http = {
      ...latencySummary(samples.filter((s) => s.status === 200).map((s) => s.ms)),
      refused: samples.filter((s) => s.status === 429).length,
      errors: samples.filter((s) => s.status !== 200 && s.status !== 429).length,
    };
    const bareSummary = latencySummary(bare);
    const ingested = site.served();
    const besideSummary = latencySummary(beside);
    opts.log(`    ${service.dialect}: a one-passage copilot's bare search beside it p50 ${besideSummary.p50_ms} ms, p99 ${besideSummary.p99_ms} ms`);
    opts.log(
      `    ${service.dialect}: search p50 ${http.p50_ms} ms, p99 ${http.p99_ms} ms (${http.n} answered of ${samples.length} sent at ${opts.rate}/s, ${http.refused} refused 429, ${http.errors} errors); bare p50 ${bareSummary.p50_ms} ms, p99 ${bareSummary.p99_ms} ms; ${ingested} pages fetched meanwhile`,
    );
    return {
      dialect: service.dialect,
      passages,
      seed_seconds: seedSeconds,
      merge_seconds: settleSeconds,
      rate_per_s: opts.rate,
      ingesting_pages: ingested,
      http,
      bare: bareSummary,
      beside: besideSummary,
      ratio_p99: round(http.p99_ms / Math.max(bareSummary.p99_ms, 0.01), 2),
    };
  } finally {
    await site.close();
  }
}
