/**
 * Section 3 — GET /backend/api/copilots?limit=100 over 10,000 copilots, sent open loop at a
 * fixed rate (1,000 requests/s): each request is sent when it is due whatever the earlier
 * answers, and its latency counts from that moment, so a stalled server is measured by how
 * late its answers come. Issue 15 §2's target: p99 ≤ 20 ms.
 */
import { json, openLoop, send } from '../lib/http.js';
import { latencySummary, median, round } from '../lib/stats.js';

export interface OpenLoopRun {
  sent: number;
  p50_ms: number;
  p99_ms: number;
  max_ms: number;
  failed: number;
}

export interface ListResult {
  dialect: string;
  copilots: number;
  body_bytes: number;
  rate_per_s: number;
  seconds_per_run: number;
  runs: OpenLoopRun[];
  median_p99_ms: number;
}

async function seed(service: { url: string; key: string }, copilots: number): Promise<void> {
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < copilots; i = next++) {
      await json('POST', `${service.url}/backend/api/copilots`, service.key, {
        name: `Copilot ${i}`,
        website: `https://example${i}.com`,
        status: i % 3 === 0 ? 'live' : 'draft',
      });
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
}

async function run(url: string, headers: Record<string, string>, rate: number, seconds: number): Promise<OpenLoopRun> {
  const loop = openLoop(url, headers, rate);
  await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
  const samples = await loop.stop();
  const summary = latencySummary(samples.map((s) => s.ms));
  return {
    sent: samples.length,
    p50_ms: summary.p50_ms,
    p99_ms: summary.p99_ms,
    max_ms: summary.max_ms,
    failed: samples.filter((s) => s.status !== 200).length,
  };
}

export async function benchListCopilots(
  host: { call(cmd: string): Promise<unknown> },
  service: { url: string; key: string; dialect: string },
  opts: { copilots: number; rate: number; runs: number; seconds: number; warmup: boolean; log: (line: string) => void },
): Promise<ListResult> {
  await seed(service, opts.copilots);
  await host.call('analyze');
  const url = `${service.url}/backend/api/copilots?limit=100`;
  const headers = { authorization: `Bearer ${service.key}` };
  const real = await send('GET', url, { headers });
  if (real.status !== 200) throw new Error(`list → ${real.status}`);
  const items = JSON.parse(real.body.toString('utf8')) as unknown[];
  if (items.length !== 100) throw new Error(`the list answered ${items.length} copilots, not 100`);
  if (opts.warmup) await run(url, headers, opts.rate, Math.min(2, opts.seconds));
  const runs: OpenLoopRun[] = [];
  for (let r = 0; r < opts.runs; r++) {
    const result = await run(url, headers, opts.rate, opts.seconds);
    runs.push(result);
    opts.log(
      `    ${service.dialect} run ${r + 1}/${opts.runs}: ${result.sent} requests at ${opts.rate}/s, p50 ${result.p50_ms} ms, p99 ${result.p99_ms} ms, max ${result.max_ms} ms, failed ${result.failed}`,
    );
  }
  return {
    dialect: service.dialect,
    copilots: opts.copilots,
    body_bytes: real.body.length,
    rate_per_s: opts.rate,
    seconds_per_run: opts.seconds,
    runs,
    median_p99_ms: round(median(runs.map((r) => r.p99_ms)), 2),
  };
}
