/**
 * Section 2 — the validator over HTTP: documents uploaded once to a running service, then
 * GET /backend/api/copilot/:id/validator, first validation (the service's validation cache
 * cleared before each) and repeated validation of the unchanged document, beside the
 * in-process floor (decode + parse + JSON.stringify of the same bytes, in the service's
 * process). Interleaved per round: first, repeated ×k, floor.
 */
import { readFileSync } from 'node:fs';
import type { ServiceHost } from '../lib/host.js';
import { json, send, timedGet } from '../lib/http.js';
import { median, percentile, round } from '../lib/stats.js';
import type { SpecFile } from './validator-cli.js';

export interface HttpValidationResult {
  id: string;
  bytes: number;
  operations: number;
  floor_parser: string;
  first: Latency;
  repeated: Latency;
  floor: Latency;
}

export interface Latency {
  n: number;
  p50_ms: number;
  p99_ms: number;
}

const latency = (ms: number[]): Latency => ({ n: ms.length, p50_ms: round(percentile(ms, 50), 2), p99_ms: round(percentile(ms, 99), 2) });

export async function benchValidatorHttp(
  host: ServiceHost,
  service: { url: string; key: string },
  specs: readonly SpecFile[],
  opts: { rounds: number; repeatsPerRound: number; floorParser: string; log: (line: string) => void },
): Promise<HttpValidationResult[]> {
  const headers = { authorization: `Bearer ${service.key}` };
  const uploaded: Array<{ spec: SpecFile; id: string }> = [];
  for (const spec of specs) {
    const copilot = await json<{ id: string }>('POST', `${service.url}/backend/api/copilots`, service.key, { name: `bench ${spec.id}` });
    const res = await send('PUT', `${service.url}/backend/api/copilot/${copilot.id}/swagger`, {
      headers: { ...headers, 'content-type': spec.format === 'json' ? 'application/json' : 'application/yaml' },
      body: readFileSync(spec.file),
    });
    if (res.status !== 200) throw new Error(`upload of ${spec.id} → ${res.status}: ${res.body.toString('utf8').slice(0, 300)}`);
    uploaded.push({ spec, id: copilot.id });
  }

  const results: HttpValidationResult[] = [];
  for (const { spec, id } of uploaded) {
    const url = `${service.url}/backend/api/copilot/${id}/validator`;
    const parser = spec.format === 'json' ? 'json' : opts.floorParser;
    const first: number[] = [];
    const repeated: number[] = [];
    const floor: number[] = [];
    // Warm-up: one of each, not counted.
    await host.call('clearCache');
    await timedGet(url, headers);
    await timedGet(url, headers);
    await host.call<number>('floor', { file: spec.file, parser });
    for (let r = 0; r < opts.rounds; r++) {
      await host.call('clearCache');
      first.push(await timedGet(url, headers));
      for (let k = 0; k < opts.repeatsPerRound; k++) repeated.push(await timedGet(url, headers));
      floor.push(await host.call<number>('floor', { file: spec.file, parser }));
    }
    const result: HttpValidationResult = {
      id: spec.id,
      bytes: readFileSync(spec.file).length,
      operations: spec.operations,
      floor_parser: spec.format === 'json' ? 'JSON.parse' : opts.floorParser,
      first: latency(first),
      repeated: latency(repeated),
      floor: latency(floor),
    };
    opts.log(`  ${spec.id}: first p50 ${result.first.p50_ms} ms, repeated p50 ${result.repeated.p50_ms} ms, floor p50 ${result.floor.p50_ms} ms`);
    results.push(result);
  }
  return results;
}

export { median };
