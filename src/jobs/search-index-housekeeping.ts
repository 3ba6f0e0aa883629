import type { FastifyBaseLogger } from 'fastify';
import { mergeSegments } from '../domain/knowledgebase/search-index.js';
import type { Storage } from '../storage/database.js';
import { deleteRetiredPassages } from '../storage/knowledge-base.repository.js';
import { mergeSegmentsStep, type SegmentMerger } from '../storage/search-index.repository.js';
import { jobFailed } from './rounds.js';

/** Passages of retired sets deleted per step (in bounded statements). */
const RETIRED_BUDGET = 2000;

export interface Housekeeping {
  stop(): Promise<void>;
}

/**
 * Background upkeep of the knowledge base's search data, in every instance whatever
 * KB_WORKERS says:
 * - passages of retired sets (replaced by a newer version of their page, or left half stored
 *   by a process that stopped; never searched) are deleted, a bounded batch per step;
 * - the search index's segments are merged, one merge per step (eight of a tier into one of the
 *   next, or a segment rewritten without the deleted passages it holds: search-index.repository.ts),
 *   the merge itself computed by `merge` (the service's task threads; in this thread unless given).
 * Steps run with a turn of the event loop between them while there is work; then one per interval.
 */
export function startSearchIndexHousekeeping(
  storage: Storage,
  options: { intervalMs: number; merge?: SegmentMerger; logger?: Pick<FastifyBaseLogger, 'error' | 'warn'> },
): Housekeeping {
  const merge: SegmentMerger = options.merge ?? (async (inputs, excluded) => mergeSegments(inputs, excluded));
  let stopped = false;
  let timer: NodeJS.Timeout | null = null;
  let wake: (() => void) | null = null;
  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      wake = resolve;
      timer = setTimeout(resolve, ms);
      timer.unref();
    });
  const loop = async () => {
    while (!stopped) {
      try {
        const retired = await deleteRetiredPassages(storage.db, storage.dialect, { budget: RETIRED_BUDGET });
        const merged = !stopped && (await mergeSegmentsStep(storage.db, storage.dialect, merge));
        if (retired > 0 || merged) {
          await new Promise<void>((resolve) => setImmediate(resolve));
          continue;
        }
      } catch (err) {
        if (options.logger) jobFailed(options.logger, err, {}, 'search index housekeeping failed');
      }
      if (!stopped) await pause(options.intervalMs);
    }
  };
  const running = loop();
  return {
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      wake?.();
      await running;
    },
  };
}
