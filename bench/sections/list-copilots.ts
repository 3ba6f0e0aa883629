/**
 * Section 3 — GET /backend/api/copilots?limit=100 under autocannon, beside a bare route of
 * the same framework (a second Fastify instance in the same process) answering the same
 * bytes; interleaved service, bare, service, … after a warm-up of each.
 */
import autocannon from 'autocannon';
import type { ServiceHost } from '../lib/host.js';
import { json, send } from '../lib/http.js';
import { median, round } from '../lib/stats.js';

export interface LoadRun {
  requests_per_s: number;
  p50_ms: number;
  p99_ms: number;
  errors: number;
  non2xx: number;
}

export interface ListResult {
  dialect: string;
  copilots: number;
  body_bytes: number;
  connections: number;
  seconds_per_run: number;
  service: { runs: LoadRun[]; median_rps: number; median_p99_ms: number };
  bare: { runs: LoadRun[]; median_rps: number; median_p99_ms: number };
}

async function load(url: string, headers: Record<string, string>, seconds: number, connections: number): Promise<LoadRun> {
  const result = await autocannon({ url, connections, duration: seconds, headers });
  return {
    requests_per_s: round(result.requests.average, 1),
    p50_ms: result.latency.p50,
    p99_ms: result.latency.p99,
    errors: result.errors + result.timeouts,
    non2xx: result.non2xx,
  };
}

export async function benchListCopilots(
  host: ServiceHost,
  service: { url: string; key: string; dialect: string },
  opts: { copilots: number; runs: number; seconds: number; connections: number; warmup: boolean; log: (line: string) => void },
): Promise<ListResult> {
  for (let i = 0; i < opts.copilots; i++) {
    await json('POST', `${service.url}/backend/api/copilots`, service.key, {
      name: `Copilot ${i}`,
      website: `https://example${i}.com`,
      status: i % 3 === 0 ? 'live' : 'draft',
    });
  }
  const path = '/backend/api/copilots?limit=100';
  const headers = { authorization: `Bearer ${service.key}` };
  const real = await send('GET', `${service.url}${path}`, { headers });
  if (real.status !== 200) throw new Error(`list → ${real.status}`);
  const items = JSON.parse(real.body.toString('utf8')) as unknown[];
  if (items.length !== 100) throw new Error(`the list answered ${items.length} copilots, not 100`);
  const contentType = String(real.headers['content-type']);
  const bare = await host.call<{ url: string }>('bare', { body: real.body.toString('utf8'), contentType });
  const check = await send('GET', `${bare.url}${path}`);
  if (!check.body.equals(real.body)) throw new Error('the bare route does not answer the same bytes');

  const serviceRuns: LoadRun[] = [];
  const bareRuns: LoadRun[] = [];
  if (opts.warmup) {
    await load(`${service.url}${path}`, headers, Math.min(2, opts.seconds), opts.connections);
    await load(`${bare.url}${path}`, headers, Math.min(2, opts.seconds), opts.connections);
  }
  for (let r = 0; r < opts.runs; r++) {
    serviceRuns.push(await load(`${service.url}${path}`, headers, opts.seconds, opts.connections));
    bareRuns.push(await load(`${bare.url}${path}`, headers, opts.seconds, opts.connections));
    opts.log(`    ${service.dialect} round ${r + 1}/${opts.runs}: service ${serviceRuns[r]!.requests_per_s} req/s p99 ${serviceRuns[r]!.p99_ms} ms; bare ${bareRuns[r]!.requests_per_s} req/s p99 ${bareRuns[r]!.p99_ms} ms`);
  }
  const summary = (runs: LoadRun[]) => ({
    runs,
    median_rps: round(median(runs.map((r) => r.requests_per_s)), 1),
    median_p99_ms: round(median(runs.map((r) => r.p99_ms)), 2),
  });
  return {
    dialect: service.dialect,
    copilots: opts.copilots,
    body_bytes: real.body.length,
    connections: opts.connections,
    seconds_per_run: opts.seconds,
    service: summary(serviceRuns),
    bare: summary(bareRuns),
  };
}
