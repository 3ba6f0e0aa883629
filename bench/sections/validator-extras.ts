/**
 * Section 2, fourth table — GET …/tools and …/fixes of a large description, and the event
 * loop meanwhile. Each answer is built and written on a task thread and sent as those bytes;
 * list requests sent at a fixed rate while they are answered show how long each holds the
 * event loop for every other request (before the answers were written there: Microsoft
 * Graph's tools, 50 MB of JSON, held it for seconds). No target: the tests check that the
 * bytes come from the thread; this shows what that is worth.
 */
import { readFileSync } from 'node:fs';
import type { ServiceHost } from '../lib/host.js';
import { json, openLoop, send } from '../lib/http.js';
import { latencySummary, median, round } from '../lib/stats.js';
import type { SpecFile } from './validator-cli.js';

export interface ExtrasRow {
  /** The request (path after the copilot, and the Accept header). */
  request: string;
  answer_bytes: number;
  median_ms: number;
  runs: number;
  /** List requests sent meanwhile, and their latency from each one's due time. */
  lists: { n: number; p50_ms: number; p99_ms: number; max_ms: number; failed: number; per_second: number };
}

export interface ExtrasSection {
  document: string;
  rows: ExtrasRow[];
}

export async function benchValidatorExtras(
  host: ServiceHost,
  service: { url: string; key: string },
  spec: SpecFile,
  opts: { rounds: number; log: (line: string) => void },
): Promise<ExtrasSection> {
  const headers = { authorization: `Bearer ${service.key}` };
  const copilot = await json<{ id: string }>('POST', `${service.url}/backend/api/copilots`, service.key, { name: 'bench tools and fixes' });
  const base = `${service.url}/backend/api/copilot/${copilot.id}`;
  const type = spec.format === 'json' ? 'application/json' : 'application/yaml';
  const put = await send('PUT', `${base}/swagger`, { headers: { ...headers, 'content-type': type }, body: readFileSync(spec.file) });
  if (put.status !== 200) throw new Error(`The upload answered ${put.status}`);
  await host.call('clearCache');
  // Validated into the cache first: each request below is its own task alone.
  await send('GET', `${base}/validator`, { headers });

  const requests = [
    { request: 'tools?platform=openai', accept: 'application/json' },
    { request: 'tools?platform=mcp', accept: 'application/json' },
    { request: 'fixes (JSON)', path: 'fixes', accept: 'application/json' },
    { request: 'fixes (YAML)', path: 'fixes', accept: 'application/yaml' },
  ];
  const rows: ExtrasRow[] = [];
  const perSecond = 100;
  for (const r of requests) {
    const ms: number[] = [];
    let bytes = 0;
    const lists = openLoop(`${service.url}/backend/api/copilots?limit=100`, headers, perSecond);
    for (let i = 0; i < opts.rounds; i++) {
      const started = performance.now();
      const res = await send('GET', `${base}/${r.path ?? r.request}`, { headers: { ...headers, accept: r.accept } });
      ms.push(performance.now() - started);
      if (res.status !== 200) throw new Error(`GET …/${r.request} answered ${res.status}`);
      bytes = res.body.length;
    }
    const answered = await lists.stop();
    const samples = answered.filter((s) => s.status === 200).map((s) => s.ms);
    const row = {
      request: r.request,
      answer_bytes: bytes,
      median_ms: round(median(ms), 1),
      runs: ms.length,
      lists: { ...latencySummary(samples), failed: answered.length - samples.length, per_second: perSecond },
    };
    opts.log(`    GET …/${row.request}: ${row.answer_bytes} B in ${row.median_ms} ms; lists meanwhile p99 ${row.lists.p99_ms} ms, max ${row.lists.max_ms} ms`);
    rows.push(row);
  }
  return { document: spec.id, rows };
}
