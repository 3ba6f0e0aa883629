/**
 * Section 2, fifth table — the service's memory. A fresh service process per scenario (its
 * peak RSS is the process's): at rest, and after one copilot uploads a large description, or
 * two copilots upload one each at once (two task threads validate them together). The
 * documents: a realistic generated description and a container-dense one, each about
 * MAX_DOCUMENT_BYTES. No target: docs/deployment.md sizes a machine from it.
 */
import { withHost } from '../lib/host.js';
import { json, send } from '../lib/http.js';
import { round } from '../lib/stats.js';
import type { Doc } from './hostile-documents.js';

export interface MemoryRow {
  scenario: string;
  /** The uploads' status codes. */
  statuses: number[];
  /** Peak resident set size of the service process over its whole life, and its RSS SETTLE_MS after the last answer. */
  peak_rss_mib: number;
  rss_after_mib: number;
}

export interface MemorySection {
  task_threads: number;
  validation_cache_mib: number;
  rows: MemoryRow[];
}

const MiB = 1024 * 1024;
const SETTLE_MS = 5000;

export async function benchServiceMemory(
  env: Record<string, string>,
  docs: Doc[],
  opts: { taskThreads: number; validationCacheBytes: number; log: (line: string) => void },
): Promise<MemorySection> {
  const scenario = (name: string, uploads: Doc[]) =>
    withHost('sqlite', env, async (host, service) => {
      const statuses = await Promise.all(
        uploads.map(async (doc, i) => {
          const copilot = await json<{ id: string }>('POST', `${service.url}/backend/api/copilots`, service.key, { name: `bench memory ${i}` });
          // Each copilot's bytes its own (a trailing space more), so neither is answered from the other's validation.
          const bytes = Buffer.concat([doc.bytes, Buffer.from(' '.repeat(i))]);
          const res = await send('PUT', `${service.url}/backend/api/copilot/${copilot.id}/swagger`, {
            headers: { authorization: `Bearer ${service.key}`, 'content-type': doc.type },
            body: bytes,
          });
          return res.status;
        }),
      );
      // What it keeps once idle: the answers in the validation cache, and what no collection gave back.
      await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
      const memory = await host.call<{ rss: number; maxRssKb: number }>('memory');
      const row = { scenario: name, statuses, peak_rss_mib: round((memory.maxRssKb * 1024) / MiB, 1), rss_after_mib: round(memory.rss / MiB, 1) };
      opts.log(
        `    ${row.scenario}: peak RSS ${row.peak_rss_mib} MiB, ${row.rss_after_mib} MiB ${SETTLE_MS / 1000} s after (${statuses.join(', ') || 'no upload'})`,
      );
      return row;
    });
  const rows: MemoryRow[] = [await scenario('at rest', [])];
  for (const doc of docs) {
    const size = `${(doc.bytes.length / MiB).toFixed(1)} MiB`;
    rows.push(await scenario(`one copilot uploads ${doc.id}, ${size}`, [doc]));
    rows.push(await scenario(`two copilots upload ${doc.id}, ${size}, at once`, [doc, doc]));
  }
  return { task_threads: opts.taskThreads, validation_cache_mib: round(opts.validationCacheBytes / MiB, 1), rows };
}
