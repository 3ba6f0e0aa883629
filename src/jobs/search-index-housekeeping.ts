import type { FastifyBaseLogger } from 'fastify';
import type { Storage } from '../storage/database.js';
import { deleteRetiredPassages, mergeSearchIndexStep, sweepSearchIndex } from '../storage/knowledge-base.repository.js';

/** Stale index entries removed per step: a short hold of the write lock. */
const SWEEP_BATCH = 50;
/** Passages of retired sets deleted per step (in bounded statements). */
const RETIRED_BUDGET = 2000;

export interface Housekeeping {
  stop(): Promise<void>;
}

/**
 * Background clean-up of the knowledge base's search data, in every instance whatever
 * KB_WORKERS says:
 * - passages of retired sets (replaced by a newer version of their page, or left half stored
 *   by a process that stopped; never searched) are deleted, a bounded batch per step;
 * - SQLite: its full-text index keeps the entries of deleted passages until they are swept
 *   (removing them with their passages would make a large deletion several times slower, so a
 *   trigger notes them in kb_fts_garbage, and searches never return them): they are swept a
 *   small batch per step, and while nothing is left, the index's segments are merged one
 *   bounded step per interval.
 * Steps run with a turn of the event loop between them.
 */
export function startSearchIndexHousekeeping(storage: Storage, options: { intervalMs: number; logger?: Pick<FastifyBaseLogger, 'error'> }): Housekeeping {
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
        const retired = await deleteRetiredPassages(storage.db, { budget: RETIRED_BUDGET });
        const swept = await sweepSearchIndex(storage.db, storage.dialect, SWEEP_BATCH);
        if (retired + swept > 0) {
          await new Promise<void>((resolve) => setImmediate(resolve));
          continue;
        }
        await mergeSearchIndexStep(storage.db, storage.dialect);
      } catch (err) {
        options.logger?.error({ err }, 'search index housekeeping failed');
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
