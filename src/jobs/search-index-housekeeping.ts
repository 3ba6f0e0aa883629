import type { FastifyBaseLogger } from 'fastify';
import type { Storage } from '../storage/database.js';
import { mergeSearchIndexStep, sweepSearchIndex } from '../storage/knowledge-base.repository.js';

/** Stale index entries removed per step: a short piece of synchronous SQLite work. */
const SWEEP_BATCH = 50;

export interface Housekeeping {
  stop(): Promise<void>;
}

/**
 * SQLite's full-text index keeps the entries of deleted passages until they are swept:
 * removing them with their passages would make a large deletion several times slower, so a
 * trigger notes them in kb_fts_garbage instead, and searches never return them. This job
 * sweeps them a small batch per step with a turn of the event loop between steps, and while
 * nothing is left to sweep, merges the index's segments one bounded step per interval. It
 * runs in every instance whatever KB_WORKERS says. PostgreSQL's index needs none of this.
 */
export function startSearchIndexHousekeeping(storage: Storage, options: { intervalMs: number; logger?: Pick<FastifyBaseLogger, 'error'> }): Housekeeping {
  if (storage.dialect !== 'sqlite') return { stop: async () => undefined };
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
        if ((await sweepSearchIndex(storage.db, storage.dialect, SWEEP_BATCH)) > 0) {
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
