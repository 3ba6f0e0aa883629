/**
 * Section 2, third table — copilots' fair turns on the task threads (src/fair-turns.ts). One
 * copilot asks for the Overlay of fixes of a large description as many times at once as it may
 * (one running, TASKS_WAITING_PER_TENANT waiting, one more refused: GET …/fixes is a validation of
 * its own each time, not cached); meanwhile another copilot uploads a small description. Its
 * upload time during that flood, beside the same upload alone, is the delay one copilot puts on
 * another. No target: the tests check the turns; this shows what they are worth.
 */
import { readFileSync } from 'node:fs';
import { TASKS_WAITING_PER_TENANT } from '../../src/threads/task-threads.js';
import type { ServiceHost } from '../lib/host.js';
import { json, send } from '../lib/http.js';
import { median, round } from '../lib/stats.js';
import type { SpecFile } from './validator-cli.js';

export interface FairTurnsResult {
  /** The flooding copilot's description and the other's. */
  large: string;
  small: string;
  /** GET …/fixes sent at once by the flooding copilot in each round, and their answers by status over all rounds. */
  flood_requests: number;
  flood_statuses: Record<string, number>;
  /** Median of the rounds: the whole flood answered, the other copilot's upload alone and during it. */
  flood_ms: number;
  other_alone_ms: number;
  other_during_flood_ms: number;
  rounds: number;
}

/** Tasks queued (for a thread or their copilot's turn), read from /metrics. */
async function queuedTasks(url: string): Promise<number> {
  const res = await send('GET', `${url}/metrics`, {});
  const match = /^task_threads\{state="queued"\} (\d+)$/m.exec(res.body.toString('utf8'));
  return match ? Number(match[1]) : 0;
}

export async function benchFairTurns(
  host: ServiceHost,
  service: { url: string; key: string },
  specs: { large: SpecFile; small: SpecFile },
  opts: { rounds: number; log: (line: string) => void },
): Promise<FairTurnsResult> {
  const headers = { authorization: `Bearer ${service.key}` };
  const read = (spec: SpecFile) => ({ bytes: readFileSync(spec.file), type: spec.format === 'json' ? 'application/json' : 'application/yaml' });
  const large = read(specs.large);
  const small = read(specs.small);
  const put = async (id: string, doc: { bytes: Buffer; type: string }) => {
    const started = performance.now();
    const res = await send('PUT', `${service.url}/backend/api/copilot/${id}/swagger`, { headers: { ...headers, 'content-type': doc.type }, body: doc.bytes });
    if (res.status !== 200) throw new Error(`An upload answered ${res.status}`);
    return performance.now() - started;
  };
  const create = async (name: string) => (await json<{ id: string }>('POST', `${service.url}/backend/api/copilots`, service.key, { name })).id;
  const flooding = await create('bench flooding copilot');
  const other = await create('bench other copilot');
  await put(flooding, large);
  // Each upload a description not validated yet (one more trailing space each time): it is validated, not answered from the cache.
  let uploads = 0;
  const upload = () => put(other, { ...small, bytes: Buffer.concat([small.bytes, Buffer.from(' '.repeat(++uploads))]) });
  // The flooding copilot's description validated into the cache first: each of its requests is then its fixes alone.
  await host.call('clearCache');
  await send('GET', `${service.url}/backend/api/copilot/${flooding}/validator`, { headers });

  const requests = TASKS_WAITING_PER_TENANT + 2;
  const statuses: Record<string, number> = {};
  const alone: number[] = [];
  const during: number[] = [];
  const floods: number[] = [];
  for (let r = 0; r < opts.rounds; r++) {
    alone.push(await upload());
    const started = performance.now();
    const flood = Promise.all(Array.from({ length: requests }, () => send('GET', `${service.url}/backend/api/copilot/${flooding}/fixes`, { headers })));
    // Once its tasks wait (for their turn, or before the turns for the thread), the other copilot uploads.
    for (let i = 0; i < 200 && (await queuedTasks(service.url)) < TASKS_WAITING_PER_TENANT; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    during.push(await upload());
    for (const a of await flood) statuses[a.status] = (statuses[a.status] ?? 0) + 1;
    floods.push(performance.now() - started);
    opts.log(
      `    round ${r + 1}/${opts.rounds}: the other copilot's upload ${round(alone.at(-1)!, 1)} ms alone, ${round(during.at(-1)!, 1)} ms during the flood`,
    );
  }
  return {
    large: specs.large.id,
    small: specs.small.id,
    flood_requests: requests,
    flood_statuses: statuses,
    flood_ms: round(median(floods), 1),
    other_alone_ms: round(median(alone), 1),
    other_during_flood_ms: round(median(during), 1),
    rounds: opts.rounds,
  };
}
