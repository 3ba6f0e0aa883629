import type { FastifyBaseLogger } from 'fastify';
import { purgeDeletedBefore } from '../domain/copilots/copilot.service.js';
import { daysAgo } from '../domain/ids.js';
import type { Storage } from '../storage/database.js';

const HOUR_MS = 60 * 60 * 1000;

/**
 * PURGE_DELETED_AFTER_DAYS: purges copilots deleted longer ago than that, at start and then
 * every hour. Several instances may run it at once: each purge is one transaction, and a
 * copilot another instance purged first is skipped.
 */
export function startRetention(
  storage: Storage,
  options: { purgeDeletedAfterDays: number; logger: Pick<FastifyBaseLogger, 'info' | 'error'>; intervalMs?: number },
): { stop(): Promise<void> } {
  let running: Promise<void> = Promise.resolve();
  const run = () => {
    running = purgeDeletedBefore(storage, daysAgo(options.purgeDeletedAfterDays)).then(
      (ids) => {
        if (ids.length > 0) options.logger.info({ purged: ids }, 'Purged deleted copilots past their retention');
      },
      (err: unknown) => options.logger.error({ err }, 'Purging deleted copilots failed'),
    );
  };
  run();
  const timer = setInterval(run, options.intervalMs ?? HOUR_MS);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
