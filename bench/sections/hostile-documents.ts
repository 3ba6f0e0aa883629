/**
 * Section 2, second table — documents built to hurt, over HTTP: PUT …/swagger of each
 * hostile fixture of the tests (test/fixtures/validator/hostile), of nesting bombs as
 * large as MAX_DOCUMENT_BYTES allows, of the answer bombs of issue 13 (a 1 MiB YAML string
 * aliased by 150 operations, and a 12 MB JSON path-level parameter merged into 8 methods:
 * hundreds of MB of answer, refused by counting before rendering), and of a container-dense document (millions of
 * empty arrays: valid, accepted, the most parsing work per byte); the time to the answer,
 * the validation cache cleared before each. During the rounds of the container-dense
 * document (upload, hashing, validation on a task thread, storing), list requests are sent
 * at a fixed rate: their latency shows how long the upload holds the event loop. No
 * target: the tests check what each answer is; this shows how soon it comes (timings
 * belong here, not in the tests).
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { jsonPathParameterBomb, yamlAliasBomb } from '../../test/domain/validator/answer-bombs.js';
import type { ServiceHost } from '../lib/host.js';
import { json, openLoop, send } from '../lib/http.js';
import { latencySummary, median, round } from '../lib/stats.js';

export interface HostileResult {
  id: string;
  bytes: number;
  /** The answers' status codes and error codes, one per round. */
  statuses: number[];
  errors: Array<string | null>;
  median_ms: number;
  max_ms: number;
  runs: number;
}

export interface HostileSection {
  documents: HostileResult[];
  /** GET …/copilots?limit=100 at a fixed rate while the container-dense document is validated. */
  lists_during_dense: { n: number; failed: number; p50_ms: number; p99_ms: number; max_ms: number; per_second: number };
}

export interface Doc {
  id: string;
  bytes: Buffer;
  type: string;
}

const OPENAPI = '{"openapi":"3.0.3","info":{"title":"t","version":"1"},"paths":{"/a":{"get":{}}},"x":';

function documents(fixtures: string, maxBytes: number): { hostile: Doc[]; dense: Doc } {
  const typeOf = (name: string) => (name.endsWith('.json') ? 'application/json' : 'application/yaml');
  const hostile = readdirSync(fixtures)
    .sort()
    .map((name) => ({ id: name, bytes: readFileSync(path.join(fixtures, name)), type: typeOf(name) }));
  const room = maxBytes - 1024;
  hostile.push(
    { id: 'nesting bomb (JSON, [[[…)', bytes: Buffer.from('['.repeat(room)), type: 'application/json' },
    { id: 'nesting bomb (YAML, x: [[[…)', bytes: Buffer.from(`openapi: 3.0.3\nx: ${'['.repeat(room - 20)}`), type: 'application/yaml' },
    {
      id: 'answer bomb (YAML, one string aliased by 150 operations)',
      bytes: yamlAliasBomb({ bytes: Math.min(1024 * 1024, room) }),
      type: 'application/yaml',
    },
    {
      id: 'answer bomb (JSON, path-level parameter × 8 methods)',
      bytes: jsonPathParameterBomb({ bytes: Math.min(12_000_000, room) }),
      type: 'application/json',
    },
  );
  return { hostile, dense: containerDense(maxBytes) };
}

/** A valid description of about `maxBytes` (less 1 KiB) that is almost all empty arrays: the most parsing work per byte. */
export function containerDense(maxBytes: number): Doc {
  const arrays = Math.floor((maxBytes - 1024 - OPENAPI.length) / 3);
  return {
    id: 'container-dense (JSON, [[],[],…], accepted)',
    bytes: Buffer.from(`${OPENAPI}[${'[],'.repeat(arrays - 1)}[]]}`),
    type: 'application/json',
  };
}

/** "400 invalid_swagger_file", or each distinct answer with its count when the rounds differ. */
export function answerOf(r: HostileResult): string {
  const answers = r.statuses.map((status, i) => (r.errors[i] ? `${status} ${r.errors[i]}` : String(status)));
  const distinct = [...new Set(answers)];
  return distinct.length === 1 ? distinct[0]! : distinct.map((a) => `${a} ×${answers.filter((x) => x === a).length}`).join(', ');
}

export async function benchHostileDocuments(
  host: ServiceHost,
  service: { url: string; key: string },
  opts: { fixtures: string; maxBytes: number; rounds: number; log: (line: string) => void },
): Promise<HostileSection> {
  const headers = { authorization: `Bearer ${service.key}` };
  const copilot = await json<{ id: string }>('POST', `${service.url}/backend/api/copilots`, service.key, { name: 'bench hostile' });
  const url = `${service.url}/backend/api/copilot/${copilot.id}/swagger`;
  const { hostile, dense } = documents(opts.fixtures, opts.maxBytes);

  const measure = async (doc: Doc): Promise<HostileResult> => {
    const ms: number[] = [];
    const statuses: number[] = [];
    const errors: Array<string | null> = [];
    for (let r = 0; r < opts.rounds; r++) {
      await host.call('clearCache');
      const started = performance.now();
      const res = await send('PUT', url, { headers: { ...headers, 'content-type': doc.type }, body: doc.bytes });
      ms.push(performance.now() - started);
      statuses.push(res.status);
      errors.push(res.status === 200 ? null : ((JSON.parse(res.body.toString('utf8')) as { error?: string }).error ?? null));
    }
    return { id: doc.id, bytes: doc.bytes.length, statuses, errors, median_ms: round(median(ms), 2), max_ms: round(Math.max(...ms), 2), runs: ms.length };
  };

  const results: HostileResult[] = [];
  for (const doc of hostile) results.push(await measure(doc));
  const perSecond = 50;
  const lists = openLoop(`${service.url}/backend/api/copilots?limit=100`, headers, perSecond);
  results.push(await measure(dense));
  const answered = await lists.stop();
  const samples = answered.filter((s) => s.status === 200).map((s) => s.ms);
  for (const r of results) opts.log(`  ${r.id}: ${answerOf(r)} in ${r.median_ms} ms (median of ${r.runs})`);
  return {
    documents: results,
    lists_during_dense: { ...latencySummary(samples), failed: answered.length - samples.length, per_second: perSecond },
  };
}
