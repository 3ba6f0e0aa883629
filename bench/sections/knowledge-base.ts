/**
 * Section 4 — the knowledge base: ingestion throughput (pages per second fetched from a
 * local web server by the service's own worker, KB_WORKERS=2), and the time to delete a
 * knowledge base's links but one with all their passages through the DELETE route, alone and
 * while list requests arrive at a fixed rate (their p99 shows whether the event loop was
 * blocked) and another copilot is changed at a fixed rate (PATCH: a write, which on SQLite
 * waits for the one writer) until the deleted passages are gone from the database. The links and passages to delete are written straight into the database
 * (service-host seedKnowledgeBase), which is much faster than ingesting them.
 * Issue 13: how long one bot's new link waits behind another bot's 1,000 never-ending pages
 * (fair claiming, benchFairness), and list latency while a 25 MiB Markdown page is fetched,
 * extracted and stored (benchLargePage).
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
  /** From the DELETE until the last deleted passage has left the database (the rounds with load). */
  gone_ms: number[];
  /** Another copilot's PATCHes sent from the DELETE until its passages were gone (all rounds pooled). */
  writes_during_delete: { n: number; p50_ms: number; p99_ms: number; max_ms: number; errors: number };
  write_rate_per_s: number;
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
      opts.log(
        `    ${service.dialect} ingestion ${r < 0 ? 'warm-up' : `run ${r + 1}/${opts.runs}`}: ${opts.pages} pages in ${seconds.toFixed(2)} s (${indexed} indexed, ${failed} failed)`,
      );
    }
  } finally {
    await site.close();
  }
  return {
    dialect: service.dialect,
    pages_per_run: opts.pages,
    workers: opts.workers,
    runs,
    median_pages_per_s: round(median(runs.map((r) => r.pages_per_s)), 1),
  };
}

export async function benchDeletion(
  host: ServiceHost,
  service: { url: string; key: string; dialect: string },
  opts: { links: number; passagesPerLink: number; rounds: number; warmup: boolean; listRate: number; writeRate: number; log: (line: string) => void },
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
  const gone: number[] = [];
  const writes: Array<{ ms: number; status: number }> = [];
  let seq = 0;
  const other = await json<{ id: string }>('POST', `${service.url}/backend/api/copilots`, service.key, { name: 'changed during deletions' });
  const patchUrl = `${service.url}/backend/api/copilot/${other.id}`;
  const patch = { method: 'PATCH' as const, body: JSON.stringify({ prompt_message: 'Changed while another copilot deletes its knowledge base.' }) };

  const deleteOnce = async (withLoad: boolean, counted: boolean): Promise<number> => {
    const bot = await json<{ id: string }>('POST', `${service.url}/backend/api/copilots`, service.key, { name: `kb delete ${seq}` });
    const seedStart = performance.now();
    // One link more than is deleted: the knowledge base stays, so its search index notes every
    // deleted passage as excluded (a deleted knowledge base's index simply goes).
    const seeded = await host.call<{ urls: string[] }>('seedKnowledgeBase', {
      botId: bot.id,
      links: opts.links + 1,
      passagesPerLink: opts.passagesPerLink,
      prefix: `d${seq++}`,
    });
    const urls = seeded.urls.slice(0, opts.links);
    if (counted) seedSeconds.push(round((performance.now() - seedStart) / 1000, 2));
    await sleep(200); // let the seeding's aftermath (WAL checkpoint, autovacuum kick-off) settle a little
    let loop = null;
    let writeLoop = null;
    if (withLoad) {
      const warm = openLoop(listUrl, headers, opts.listRate);
      await sleep(1000);
      const idleSamples = await warm.stop();
      if (counted) idle.push(...idleSamples.map((s) => s.ms));
      loop = openLoop(listUrl, headers, opts.listRate);
      writeLoop = openLoop(patchUrl, { ...headers, 'content-type': 'application/json' }, opts.writeRate, undefined, patch);
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
    // Its passages may leave the database after the answer (the housekeeping job): the next
    // round starts once they are gone, and the other copilot's writes are counted until then.
    while ((await host.call<number>('countPassages', { botId: bot.id })) > opts.passagesPerLink) {
      if (performance.now() - started > 600_000) throw new Error('the deleted passages were still stored after 10 minutes');
      await sleep(20);
    }
    const goneAt = performance.now();
    const writeSamples = writeLoop ? await writeLoop.stop() : [];
    const failed = writeSamples.find((s) => s.status !== 200);
    if (failed) throw new Error(`PATCH of another copilot → ${failed.status}`);
    if (counted && withLoad) {
      gone.push(round(goneAt - started, 1));
      writes.push(...writeSamples.filter((s) => s.sentAt >= started && s.sentAt <= goneAt).map((s) => ({ ms: s.ms, status: s.status })));
    }
    return ended - started;
  };

  if (opts.warmup) await deleteOnce(false, false);
  for (let r = 0; r < opts.rounds; r++) {
    const a = await deleteOnce(false, true);
    alone.push(round(a, 1));
    const b = await deleteOnce(true, true);
    withLists.push(round(b, 1));
    opts.log(
      `    ${service.dialect} deletion round ${r + 1}/${opts.rounds}: alone ${a.toFixed(0)} ms, with lists and writes ${b.toFixed(0)} ms, passages gone after ${gone.at(-1)} ms (seeding ${seedSeconds.slice(-2).join(' s, ')} s)`,
    );
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
    gone_ms: gone,
    writes_during_delete: { ...latencySummary(writes.map((s) => s.ms)), errors: writes.filter((s) => s.status !== 200).length },
    write_rate_per_s: opts.writeRate,
  };
}

// ---------------------------------------------------------------------------------------------
// Issue 13 §3: fairness. Bot A queues links to pages that send one byte every 200 ms and never
// end; bot B then adds one ordinary link. B's link must not wait for A's queue: at most for
// the fetches already running (one FETCH_TIMEOUT_MS) plus its own fetch.

export interface FairnessResult {
  dialect: string;
  workers: number;
  fetch_timeout_ms: number;
  /** Slow links bot A queued in each round (they pile up: rounds do not wait for them). */
  slow_links_per_round: number;
  /** An ordinary link alone, from POST to indexed (before any slow link was queued): for comparison. */
  alone_ms: number[];
  /** Bot B's link behind bot A's queue, per round: from POST to indexed… */
  wait_ms: number[];
  /** …of which its own fetch: from its page's request arriving to indexed. */
  own_fetch_ms: number[];
  /** The largest of wait − own fetch: how long B's link waited for a worker (target: ≤ FETCH_TIMEOUT_MS). */
  max_queued_ms: number;
}

/** A web site of ordinary pages (/page/<n>) and drips (/drip/<n>: a byte every `dripMs`, never ending). */
async function startDripServer(
  dripMs: number,
): Promise<{ origin: string; dripping: () => number; arrivedAt: (path: string) => number | undefined; close: () => Promise<void> }> {
  let dripping = 0;
  const arrivals = new Map<string, number>();
  const server = http.createServer((req, res) => {
    arrivals.set(req.url ?? '', performance.now());
    const n = Number(/\/(\d+)$/.exec(req.url ?? '')?.[1] ?? '0');
    if ((req.url ?? '').startsWith('/drip/')) {
      dripping++;
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      const timer = setInterval(() => res.write(' '), dripMs);
      res.on('close', () => {
        dripping--;
        clearInterval(timer);
      });
      return;
    }
    const body = Buffer.from(articlePage(n), 'utf8');
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-length': body.length });
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    dripping: () => dripping,
    arrivedAt: (path) => arrivals.get(path),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** POSTs `url` for `bot`; resolves when its link is no longer pending (throws unless indexed) with the times the POST started and ended. */
async function timeToIndexed(service: { url: string; key: string }, bot: string, url: string, pollMs: number): Promise<{ started: number; indexed: number }> {
  const started = performance.now();
  await json('POST', `${service.url}/backend/knowledgebase/b/${bot}`, service.key, { links: [url] });
  for (;;) {
    const list = await json<{ links: Array<{ url: string; status: string; error: string | null }> }>(
      'GET',
      `${service.url}/backend/knowledgebase/b/${bot}?limit=10`,
      service.key,
    );
    const link = list.links.find((l) => l.url === url);
    if (link && link.status !== 'pending') {
      if (link.status !== 'indexed') throw new Error(`${url} ended ${link.status}: ${link.error}`);
      return { started, indexed: performance.now() };
    }
    if (performance.now() - started > 120_000) throw new Error(`${url} was not indexed within 2 minutes`);
    await sleep(pollMs);
  }
}

export async function benchFairness(
  service: { url: string; key: string; dialect: string },
  opts: { slowLinks: number; rounds: number; workers: number; fetchTimeoutMs: number; log: (line: string) => void },
): Promise<FairnessResult> {
  const site = await startDripServer(200);
  const alone: number[] = [];
  const waits: number[] = [];
  const own: number[] = [];
  let page = 0;
  try {
    const quiet = await json<{ id: string }>('POST', `${service.url}/backend/api/copilots`, service.key, { name: 'fairness: alone' });
    for (let i = 0; i < 3; i++) {
      const t = await timeToIndexed(service, quiet.id, `${site.origin}/page/${page++}`, 10);
      alone.push(round(t.indexed - t.started, 1));
    }
    for (let r = 0; r < opts.rounds; r++) {
      const a = await json<{ id: string }>('POST', `${service.url}/backend/api/copilots`, service.key, { name: `fairness: slow tenant ${r}` });
      const b = await json<{ id: string }>('POST', `${service.url}/backend/api/copilots`, service.key, { name: `fairness: quiet tenant ${r}` });
      const slow = Array.from({ length: opts.slowLinks }, (_, i) => `${site.origin}/drip/${r}/${i}`);
      for (let i = 0; i < slow.length; i += 1000)
        await json('POST', `${service.url}/backend/knowledgebase/b/${a.id}`, service.key, { links: slow.slice(i, i + 1000) });
      // Every worker on a never-ending page (the latest for 0.1 s): B's link waits for the first to give up.
      const deadline = performance.now() + 30_000;
      while (site.dripping() < opts.workers) {
        if (performance.now() > deadline) throw new Error(`only ${site.dripping()} of ${opts.workers} workers took a slow link`);
        await sleep(5);
      }
      await sleep(100);
      const path = `/page/${page++}`;
      const t = await timeToIndexed(service, b.id, `${site.origin}${path}`, 10);
      const arrived = site.arrivedAt(path);
      if (arrived === undefined) throw new Error(`${path} was indexed without being fetched`);
      waits.push(round(t.indexed - t.started, 1));
      own.push(round(t.indexed - arrived, 1));
      opts.log(
        `    ${service.dialect} fairness round ${r + 1}/${opts.rounds}: ${opts.slowLinks} never-ending links queued for bot A, every worker on one; bot B's link fetched after ${(arrived - t.started).toFixed(0)} ms, indexed after ${(t.indexed - t.started).toFixed(0)} ms`,
      );
    }
  } finally {
    await site.close();
  }
  return {
    dialect: service.dialect,
    workers: opts.workers,
    fetch_timeout_ms: opts.fetchTimeoutMs,
    slow_links_per_round: opts.slowLinks,
    alone_ms: alone,
    wait_ms: waits,
    own_fetch_ms: own,
    max_queued_ms: round(Math.max(...waits.map((w, i) => w - own[i]!)), 1),
  };
}

// ---------------------------------------------------------------------------------------------
// Issue 13 §10: storing a large page never holds other requests. List requests at a fixed
// rate while one 25 MiB Markdown page is fetched, extracted (on a task thread) and stored.

export interface LargePageResult {
  dialect: string;
  bytes: number;
  passages: number;
  list_rate_per_s: number;
  /** POST → indexed, per round. */
  ingest_ms: number[];
  /** List requests sent while the page was being ingested (all rounds pooled). */
  lists_during: { n: number; p50_ms: number; p99_ms: number; max_ms: number; errors: number };
  lists_idle: { n: number; p50_ms: number; p99_ms: number };
}

// Two-letter words in paragraphs of 101: each paragraph is a passage of ~300 bytes (two do not
// fit one), about as many passages per MiB as the page of the issue (104,854 in 25 MiB).
const SHORT_WORDS = ['to', 'of', 'in', 'is', 'it', 'on', 'at', 'by', 'we', 'an', 'as', 'be', 'do', 'go', 'he', 'if', 'me', 'my', 'no', 'or', 'so', 'up', 'us'];

/** A Markdown page of `bytes` bytes: headings every 50 paragraphs, paragraphs of 101 short words. */
export function largeMarkdown(bytes: number): Buffer {
  const parts: string[] = [];
  let size = 0;
  for (let p = 0; size < bytes; p++) {
    let text = p % 50 === 0 ? `## Section ${p / 50}\n\n` : '';
    const words: string[] = [];
    for (let w = 0; w < 101; w++) words.push(SHORT_WORDS[(p * 7 + w * 13 + ((p * w) % 5)) % SHORT_WORDS.length]!);
    text += `${words.join(' ')}.\n\n`;
    parts.push(text);
    size += text.length;
  }
  return Buffer.from(parts.join('').slice(0, bytes), 'utf8');
}

export async function benchLargePage(
  service: { url: string; key: string; dialect: string },
  opts: { bytes: number; rounds: number; listRate: number; log: (line: string) => void },
): Promise<LargePageResult> {
  const body = largeMarkdown(opts.bytes);
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/markdown; charset=utf-8', 'content-length': body.length });
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const listUrl = `${service.url}/backend/api/copilots?limit=100`;
  const headers = { authorization: `Bearer ${service.key}` };
  const existing = (await json<unknown[]>('GET', listUrl, service.key)).length;
  for (let i = existing; i < 100; i++) await json('POST', `${service.url}/backend/api/copilots`, service.key, { name: `list filler ${i}` });
  const during: Array<{ ms: number; status: number }> = [];
  const idle: number[] = [];
  const ingest: number[] = [];
  let passages = 0;
  try {
    for (let r = 0; r < opts.rounds; r++) {
      const bot = await json<{ id: string }>('POST', `${service.url}/backend/api/copilots`, service.key, { name: `large page ${r}` });
      const warm = openLoop(listUrl, headers, opts.listRate);
      await sleep(1000);
      idle.push(...(await warm.stop()).map((s) => s.ms));
      const loop = openLoop(listUrl, headers, opts.listRate);
      await sleep(100);
      const url = `${origin}/large/${r}.md`;
      const started = performance.now();
      await json('POST', `${service.url}/backend/knowledgebase/b/${bot.id}`, service.key, { links: [url] });
      let link: { status: string; error: string | null; passages: number };
      for (;;) {
        const list = await json<{ links: Array<{ status: string; error: string | null; passages: number }> }>(
          'GET',
          `${service.url}/backend/knowledgebase/b/${bot.id}`,
          service.key,
        );
        link = list.links[0]!;
        if (link.status !== 'pending') break;
        if (performance.now() - started > 600_000) throw new Error('the large page was not ingested in 10 minutes');
        await sleep(100);
      }
      const ended = performance.now();
      const samples = await loop.stop();
      if (link.status !== 'indexed') throw new Error(`the large page ended ${link.status}: ${link.error}`);
      passages = link.passages;
      ingest.push(round(ended - started, 1));
      during.push(...samples.filter((s) => s.sentAt >= started && s.sentAt <= ended).map((s) => ({ ms: s.ms, status: s.status })));
      const slowest = Math.max(...samples.filter((s) => s.sentAt >= started && s.sentAt <= ended).map((s) => s.ms));
      opts.log(
        `    ${service.dialect} large page round ${r + 1}/${opts.rounds}: ${(opts.bytes / 1024 / 1024).toFixed(0)} MiB, ${passages} passages in ${((ended - started) / 1000).toFixed(1)} s; slowest list ${slowest.toFixed(1)} ms`,
      );
    }
  } finally {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
  const duringMs = during.map((s) => s.ms);
  return {
    dialect: service.dialect,
    bytes: body.length,
    passages,
    list_rate_per_s: opts.listRate,
    ingest_ms: ingest,
    lists_during: { ...latencySummary(duringMs), errors: during.filter((s) => s.status !== 200).length },
    lists_idle: { n: idle.length, p50_ms: round(percentile(idle, 50), 2), p99_ms: round(percentile(idle, 99), 2) },
  };
}

// ---------------------------------------------------------------------------------------------
// Issue 16 §2: re-sync of unchanged links. 1,000 links indexed from a local site that answers
// with an ETag and 304 to If-None-Match; POST …/refresh; the time until every link was checked,
// and what the refresh wrote, from snapshots of the bot's rows before and after (target: within
// 5 s, no passage and no link state written; the claim of each check records its time).

export interface ResyncResult {
  dialect: string;
  links: number;
  workers: number;
  /** POST …/refresh → every link checked, per run. */
  seconds: number[];
  median_seconds: number;
  /** Requests answered 304 / 200 during the measured runs. */
  not_modified: number;
  full_answers: number;
  /** Rows whose content changed (passage rows added, removed or re-versioned; link rows beyond their check times): the target is 0. */
  content_rows_written: number;
  /** Link rows whose only change is `checked_at` / `check_after` (the claim of each check), and the bot's fair-queue time. */
  check_rows_written: number;
}

interface KbSnapshot {
  links: Array<Record<string, unknown> & { id: string; checked_at: string | null; status: string }>;
  passages: { n: number; max_id: number; versions: number };
  knowledge_base: Record<string, unknown> | null;
}

/** What changed between two snapshots of a bot's knowledge base. */
function rowsWritten(before: KbSnapshot, after: KbSnapshot): { content: number; checks: number } {
  const was = new Map(before.links.map((l) => [l.id, l]));
  let content = Math.abs(after.links.length - before.links.length);
  let checks = 0;
  for (const link of after.links) {
    const old = was.get(link.id);
    if (!old) continue;
    const changed = Object.keys(link).filter((k) => String(link[k]) !== String(old[k]));
    if (changed.some((k) => k !== 'checked_at' && k !== 'check_after')) content++;
    else if (changed.length > 0) checks++;
  }
  const p = (s: KbSnapshot) => `${s.passages.n}/${s.passages.max_id}/${s.passages.versions}`;
  if (p(before) !== p(after)) content += Math.max(1, Math.abs(after.passages.n - before.passages.n));
  if (JSON.stringify(before.knowledge_base) !== JSON.stringify(after.knowledge_base)) checks++;
  return { content, checks };
}

export async function benchResync(
  host: ServiceHost,
  service: { url: string; key: string; dialect: string },
  opts: { links: number; runs: number; warmup: boolean; workers: number; log: (line: string) => void },
): Promise<ResyncResult> {
  const counts = { notModified: 0, full: 0 };
  const server = http.createServer((req, res) => {
    const n = Number(/\/(\d+)$/.exec(req.url ?? '')?.[1] ?? '0');
    const etag = `"page-${n}"`;
    if (req.headers['if-none-match'] === etag) {
      counts.notModified++;
      res.writeHead(304, { etag }).end();
      return;
    }
    counts.full++;
    const body = Buffer.from(articlePage(n), 'utf8');
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-length': body.length, etag });
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const seconds: number[] = [];
  let content = 0;
  let checks = 0;
  let measured = { notModified: 0, full: 0 };
  try {
    const bot = await json<{ id: string }>('POST', `${service.url}/backend/api/copilots`, service.key, { name: 're-sync' });
    const urls = Array.from({ length: opts.links }, (_, i) => `${origin}/kb/resync/${i}`);
    for (let i = 0; i < urls.length; i += 1000) {
      await json('POST', `${service.url}/backend/knowledgebase/b/${bot.id}`, service.key, { links: urls.slice(i, i + 1000) });
    }
    const started = performance.now();
    for (;;) {
      const snap = await host.call<KbSnapshot>('kbSnapshot', { botId: bot.id });
      if (snap.links.length === opts.links && snap.links.every((l) => l.status !== 'pending')) {
        const failed = snap.links.filter((l) => l.status !== 'indexed').length;
        if (failed > 0) throw new Error(`${failed} links were not indexed`);
        break;
      }
      if (performance.now() - started > 600_000) throw new Error('ingestion did not finish in 10 minutes');
      await sleep(100);
    }
    for (let r = opts.warmup ? -1 : 0; r < opts.runs; r++) {
      await sleep(500); // the ingestion's (or the last run's) aftermath: retired sets deleted
      const before = await host.call<KbSnapshot>('kbSnapshot', { botId: bot.id });
      const at = { ...counts };
      const t0 = performance.now();
      const res = await send('POST', `${service.url}/backend/knowledgebase/b/${bot.id}/refresh`, { headers: { authorization: `Bearer ${service.key}` } });
      if (res.status !== 202) throw new Error(`refresh → ${res.status}: ${res.body.toString('utf8').slice(0, 300)}`);
      const since = before.links.reduce((m, l) => (l.checked_at !== null && l.checked_at > m ? l.checked_at : m), '');
      let after: KbSnapshot;
      for (;;) {
        if (counts.notModified + counts.full - at.notModified - at.full >= opts.links) {
          after = await host.call<KbSnapshot>('kbSnapshot', { botId: bot.id });
          if (after.links.every((l) => l.checked_at !== null && l.checked_at > since)) break;
        }
        if (performance.now() - t0 > 120_000) throw new Error('the refresh did not finish in 2 minutes');
        await sleep(5);
      }
      const s = (performance.now() - t0) / 1000;
      const written = rowsWritten(before, after);
      if (r >= 0) {
        seconds.push(round(s, 3));
        content += written.content;
        checks += written.checks;
        measured = { notModified: measured.notModified + counts.notModified - at.notModified, full: measured.full + counts.full - at.full };
      }
      opts.log(
        `    ${service.dialect} re-sync ${r < 0 ? 'warm-up' : `run ${r + 1}/${opts.runs}`}: ${opts.links} unchanged links in ${s.toFixed(2)} s (${counts.notModified - at.notModified} × 304, ${counts.full - at.full} × 200; rows written: ${written.content} content, ${written.checks} check times)`,
      );
    }
  } finally {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
  return {
    dialect: service.dialect,
    links: opts.links,
    workers: opts.workers,
    seconds,
    median_seconds: round(median(seconds), 3),
    not_modified: measured.notModified,
    full_answers: measured.full,
    content_rows_written: content,
    check_rows_written: checks,
  };
}

/**
 * The local site a crawl reads: robots.txt without a Crawl-delay, and `pages` article pages under
 * /site/NAME/N, each linking to its ten children in a tree, to the start page and to a sibling.
 */
export async function startCrawlSite(pages: number): Promise<{ server: http.Server; origin: string }> {
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0]!;
    if (path === '/robots.txt') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('User-agent: *\nDisallow: /private/\n');
      return;
    }
    const match = /^\/site\/(\w+)\/(\d+)$/.exec(path);
    const n = Number(match?.[2] ?? -1);
    if (!match || n >= pages) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('Not found');
      return;
    }
    const base = `/site/${match[1]}`;
    const children = Array.from({ length: 10 }, (_, k) => n * 10 + 1 + k).filter((c) => c < pages);
    const links = [...children, 0, n + 1 < pages ? n + 1 : 0].map((c) => `<a href="${base}/${c}">page ${c}</a>`).join(' ');
    const body = Buffer.from(articlePage(n).replace('</body>', `<p>${links}</p></body>`), 'utf8');
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-length': body.length }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return { server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

export interface CrawlBenchResult {
  dialect: string;
  pages: number;
  workers: number;
  runs: Array<{ seconds: number; pages_per_s: number; indexed: number; failed: number }>;
  median_pages_per_s: number;
}

/**
 * Issue 16 §2: a crawl of a local site of `pages` article pages (robots.txt without a
 * Crawl-delay; each page links to its ten children in a tree, to the start page and to a
 * sibling, so most links are found more than once): POST …/crawl → state done, through the
 * service's own ingestion worker (the fair queue, the guarded fetch) and crawl job.
 */
export async function benchCrawl(
  service: { url: string; key: string; dialect: string },
  opts: { pages: number; runs: number; warmup: boolean; workers: number; log: (line: string) => void },
): Promise<CrawlBenchResult> {
  const { server, origin } = await startCrawlSite(opts.pages);
  const runs: CrawlBenchResult['runs'] = [];
  try {
    for (let r = opts.warmup ? -1 : 0; r < opts.runs; r++) {
      const bot = await json<{ id: string }>('POST', `${service.url}/backend/api/copilots`, service.key, { name: `crawl ${r}` });
      const started = performance.now();
      const crawl = await json<{ crawl_id: string }>('POST', `${service.url}/backend/knowledgebase/b/${bot.id}/crawl`, service.key, {
        url: `${origin}/site/run${r + 1}/0`,
        max_pages: opts.pages,
        max_depth: 20,
      });
      let state: { state: string; indexed: number; failed: number; discovered: number; error: string | null };
      for (;;) {
        state = await json('GET', `${service.url}/backend/knowledgebase/b/${bot.id}/crawls/${crawl.crawl_id}`, service.key);
        if (state.state !== 'queued' && state.state !== 'running') break;
        if (performance.now() - started > 600_000) throw new Error('the crawl did not finish in 10 minutes');
        await sleep(50);
      }
      const seconds = (performance.now() - started) / 1000;
      if (state.state !== 'done') throw new Error(`the crawl ended ${state.state}: ${state.error}`);
      if (r >= 0) runs.push({ seconds: round(seconds, 3), pages_per_s: round(state.indexed / seconds, 1), indexed: state.indexed, failed: state.failed });
      opts.log(
        `    ${service.dialect} crawl ${r < 0 ? 'warm-up' : `run ${r + 1}/${opts.runs}`}: ${state.discovered} pages in ${seconds.toFixed(2)} s (${state.indexed} indexed, ${state.failed} failed)`,
      );
    }
  } finally {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
  return { dialect: service.dialect, pages: opts.pages, workers: opts.workers, runs, median_pages_per_s: round(median(runs.map((r) => r.pages_per_s)), 1) };
}
