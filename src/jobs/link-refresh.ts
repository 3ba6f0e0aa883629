import type { FastifyBaseLogger } from 'fastify';
import { timestampIn } from '../domain/ids.js';
import type { Storage } from '../storage/database.js';
import { scheduleChecks } from '../storage/link-refresh.repository.js';
import { everyInterval, jobFailed } from './rounds.js';

/**
 * Keeps the knowledge bases of copilots with smart_sync = 1 current: each round gives every
 * such link that has no check scheduled (indexed since the last round, or its copilot's
 * smart_sync just turned on) a check one SYNC_INTERVAL_MS (±10%) away. The ingestion worker
 * runs the checks (link-check.ts) and schedules each link's next one as it claims it. Rounds
 * run every quarter of the interval, at most every minute; a round is one statement, so two
 * instances running it at once write the same thing.
 */
export function startLinkRefreshSchedule(
  storage: Storage,
  options: { intervalMs: number; logger: Pick<FastifyBaseLogger, 'error' | 'warn'> },
): { stop(): Promise<void> } {
  return everyInterval(
    Math.min(60_000, Math.max(250, Math.floor(options.intervalMs / 4))),
    async () => {
      await scheduleChecks(storage.db, timestampIn(options.intervalMs * (0.9 + Math.random() * 0.2)));
    },
    (err) => jobFailed(options.logger, err, {}, 'Scheduling knowledge-base link checks failed'),
  );
}
