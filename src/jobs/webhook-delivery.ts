import type { FastifyBaseLogger } from 'fastify';
import { attemptDelivery, type DeliveryDeps, dueDeliveries } from '../domain/webhooks/webhook.service.js';
import type { Storage } from '../storage/database.js';
import { everyInterval, jobFailed } from './rounds.js';

/** Deliveries attempted per round. */
const BATCH = 20;

/**
 * Sends due webhook deliveries (webhook.service.ts), in every instance, every `intervalMs`;
 * a delivery's lease makes one instance send it. One round at a time.
 */
export function startWebhookDelivery(
  storage: Storage,
  deps: DeliveryDeps,
  options: { intervalMs: number; logger: Pick<FastifyBaseLogger, 'error' | 'warn' | 'info'> },
): { stop(): Promise<void> } {
  return everyInterval(
    options.intervalMs,
    async (stopped) => {
      for (const id of await dueDeliveries(storage.db, BATCH)) {
        if (stopped()) return;
        await attemptDelivery(storage.db, { logger: options.logger, ...deps }, id).catch((err: unknown) =>
          jobFailed(options.logger, err, { delivery: id }, 'A webhook delivery failed'),
        );
      }
    },
    (err) => jobFailed(options.logger, err, {}, 'Looking for webhook deliveries failed'),
  );
}
