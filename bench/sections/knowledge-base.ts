/**
 * Section 4 — the knowledge base: ingestion throughput (pages per second fetched from a
 * local web server by the service's own worker, KB_WORKERS=2), and the time to delete a
 * knowledge base's links with all their passages through the DELETE route, alone and
 * while list requests arrive at a fixed rate (their p99 shows whether the event loop was
 * blocked). The links and passages to delete are written straight into the database
 * (service-host seedKnowledgeBase), which is much faster than ingesting them.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ServiceHost } from '../lib/host.js';
import { json, openLoop, send } from '../lib/http.js';
import { latencySummary, median, percentile, round } from '../lib/stats.js';
import { articlePage } from '../lib/text.js';

export interface IngestionResult {
  dialect: string;
  pages_per_run: number;
  workers: number;
  runs: Array<{ seconds: number; pages_per_s: number; indexed: number; failed: number }>;
  median_pages_per_s: number;
}

export interface DeletionResult {
  dialect: string;
  links: number;
  passages: number;
  list_rate_per_s: number;
  seed_seconds: number[];
  alone_ms: number[];
  with_lists_ms: number[];
  median_alone_ms: number;
  median_with_lists_ms: number;
  /** p99 of list requests sent while a deletion ran (all rounds pooled). */
  lists_during_delete: { n: number; p50_ms: number; p99_ms: number; max_ms: number; errors: number };
  /** p99 of the same list requests with no deletion running (just before each). */
  lists_idle: { n: number; p50_ms: number; p99_ms: number };
}

/** A local web site of article pages, /kb/<anything>/<n>. */
export async function startPageServer(): Promise<{ origin: string; served: () => number; close: () => Promise<void> }> {
  let served = 0;
  const server = http.createServer((req, res) => {
    const n = Number(/\/(\d+)$/.exec(req.url ?? '')?.[1] ?? '0');
    const body = Buffer.from(articlePage(n), 'utf8');
    served++;
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-length': body.length });
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    served: () => served,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

interface LinkList {
  links: Array<{ status: string }>;
}

export async function benchIngestion(
  service: { url: string; key: string; dialect: string },
  opts: { pages: number; runs: number; warmup: boolean; workers: number; log: (line: string) => void },
): Promise<IngestionResult> {
  const site = await startPageServer();
  const runs: IngestionResult['runs'] = [];
  try {
    for (let r = opts.warmup ? -1 : 0; r < opts.runs; r++) {
      const bot = await json<{ id: string }>('POST', `${service.url}/backend/api/copilots`, service.key, { name: `ingestion ${r}` });
      const urls = Array.from({ length: opts.pages }, (_, i) => `${site.origin}/kb/run${r + 1}/${i}`);
      const started = performance.now();
      for (let i = 0; i < urls.length; i += 1000) {
        await json('POST', `${service.url}/backend/knowledgebase/b/${bot.id}`, service.key, { links: urls.slice(i, i + 1000) });
      }
      let list: LinkList;
      for (;;) {
        list = await json<LinkList>('GET', `${service.url}/backend/knowledgebase/b/${bot.id}?limit=1000`, service.key);
        if (list.links.every((l) => l.status !== 'pending')) break;
        if (performance.now() - started > 600_000) throw new Error('ingestion did not finish in 10 minutes');
        await sleep(20);
      }
      const seconds = (performance.now() - started) / 1000;
      const indexed = list.links.filter((l) => l.status === 'indexed').length;
      const failed = list.links.length - indexed;
      if (r >= 0) runs.push({ seconds: round(seconds, 3), pages_per_s: round(opts.pages / seconds, 1), indexed, failed });
      opts.log(`    ${service.dialect} ingestion ${r < 0 ? 'warm-up' : `run ${r + 1}/${opts.runs}`}: ${opts.pages} pages in ${seconds.toFixed(2)} s (${indexed} indexed, ${failed} failed)`);
    }
  } finally {
    await site.close();
  }
  return { dialect: service.dialect, pages_per_run: opts.pages, workers: opts.workers, runs, median_pages_per_s: round(median(runs.map((r) => r.pages_per_s)), 1) };
}

export async function benchDeletion(
  host: ServiceHost,
  service: { url: string; key: string; dialect: string },
  opts: { links: number; passagesPerLink: number; rounds: number; warmup: boolean; listRate: number; log: (line: string) => void },
): Promise<DeletionResult> {
  const listUrl = `${service.url}/backend/api/copilots?limit=100`;
  const headers = { authorization: `Bearer ${service.key}` };
  // Enough copilots for a full page, as in the list benchmark.
  const existing = (await json<unknown[]>('GET', listUrl, service.key)).length;
  for (let i = existing; i < 100; i++) await json('POST', `${service.url}/backend/api/copilots`, service.key, { name: `list filler ${i}` });

  const seedSeconds: number[] = [];
  const alone: number[] = [];
  const withLists: number[] = [];
  const during: Array<{ ms: number; status: number }> = [];
  const idle: number[] = [];
  let seq = 0;

  const deleteOnce = async (withLoad: boolean, counted: boolean): Promise<number> => {
    const bot = await json<{ id: string }>('POST', `${service.url}/backend/api/copilots`, service.key, { name: `kb delete ${seq}` });
    const seedStart = performance.now();
    const { urls } = await host.call<{ urls: string[] }>('seedKnowledgeBase', { botId: bot.id, links: opts.links, passagesPerLink: opts.passagesPerLink, prefix: `d${seq++}` });
    if (counted) seedSeconds.push(round((performance.now() - seedStart) / 1000, 2));
    await sleep(200); // let the seeding's aftermath (WAL checkpoint, autovacuum kick-off) settle a little
    let loop = null;
    if (withLoad) {
      const warm = openLoop(listUrl, headers, opts.listRate);
      await sleep(1000);
      const idleSamples = await warm.stop();
      if (counted) idle.push(...idleSamples.map((s) => s.ms));
      loop = openLoop(listUrl, headers, opts.listRate);
      await sleep(100);
    }
    const started = performance.now();
    const res = await send('DELETE', `${service.url}/backend/knowledgebase/b/${bot.id}`, {
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({ links: urls }),
    });
    const ended = performance.now();
    const samples = loop ? await loop.stop() : [];
    if (res.status !== 200) throw new Error(`DELETE → ${res.status}: ${res.body.toString('utf8').slice(0, 300)}`);
    const body = JSON.parse(res.body.toString('utf8')) as { deleted_links: string[] };
    if (body.deleted_links.length !== urls.length) throw new Error(`deleted ${body.deleted_links.length} of ${urls.length} links`);
    if (counted) during.push(...samples.filter((s) => s.sentAt >= started && s.sentAt <= ended).map((s) => ({ ms: s.ms, status: s.status })));
    return ended - started;
  };

  if (opts.warmup) await deleteOnce(false, false);
  for (let r = 0; r < opts.rounds; r++) {
    const a = await deleteOnce(false, true);
    alone.push(round(a, 1));
    const b = await deleteOnce(true, true);
    withLists.push(round(b, 1));
    opts.log(`    ${service.dialect} deletion round ${r + 1}/${opts.rounds}: alone ${a.toFixed(0)} ms, with lists ${b.toFixed(0)} ms (seeding ${seedSeconds.slice(-2).join(' s, ')} s)`);
  }
  const duringMs = during.map((s) => s.ms);
  return {
    dialect: service.dialect,
    links: opts.links,
    passages: opts.links * opts.passagesPerLink,
    list_rate_per_s: opts.listRate,
    seed_seconds: seedSeconds,
    alone_ms: alone,
    with_lists_ms: withLists,
    median_alone_ms: round(median(alone), 1),
    median_with_lists_ms: round(median(withLists), 1),
    lists_during_delete: { ...latencySummary(duringMs), errors: during.filter((s) => s.status !== 200).length },
    lists_idle: { n: idle.length, p50_ms: round(percentile(idle, 50), 2), p99_ms: round(percentile(idle, 99), 2) },
  };
}
