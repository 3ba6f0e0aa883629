import { jobFailed } from './rounds.js';
import type { FastifyBaseLogger } from 'fastify';
import { purgeDeletedBefore } from '../domain/copilots/copilot.service.js';
import { daysAgo } from '../domain/ids.js';
import { deleteAuditEntriesBefore } from '../storage/audit.repository.js';
import type { Storage } from '../storage/database.js';
import { deleteDeliveriesBefore } from '../storage/webhook.repository.js';

const HOUR_MS = 60 * 60 * 1000;
/** Rows deleted by one statement: each is a short transaction, so other writes go between them. */
const BATCH = 1000;

export interface RetentionSettings {
  /** PURGE_DELETED_AFTER_DAYS; 0: never. */
  purgeDeletedAfterDays: number;
  /** WEBHOOK_DELIVERIES_KEPT_DAYS; 0: kept. */
  webhookDeliveriesKeptDays: number;
  /** AUDIT_LOG_KEPT_DAYS; 0: kept. */
  auditLogKeptDays: number;
}

/** Whether any of the settings asks the retention job for work. */
export function retentionWanted(settings: RetentionSettings): boolean {
  return settings.purgeDeletedAfterDays > 0 || settings.webhookDeliveriesKeptDays > 0 || settings.auditLogKeptDays > 0;
}

/** Deletes with `batch` until a batch comes back short; how many in all. */
async function inBatches(batch: () => Promise<number>): Promise<number> {
  let total = 0;
  for (let n = BATCH; n === BATCH; total += n) n = await batch();
  return total;
}

/**
 * At start and then every hour: purges copilots deleted longer ago than PURGE_DELETED_AFTER_DAYS,
 * and deletes webhook deliveries queued and audit entries written longer ago than
 * WEBHOOK_DELIVERIES_KEPT_DAYS and AUDIT_LOG_KEPT_DAYS (a setting of 0 skips its part). Several
 * instances may run it at once: each purge is one transaction, and a copilot another instance
 * purged first is skipped; the rows are deleted a batch per statement.
 */
export function startRetention(
  storage: Storage,
  options: RetentionSettings & { logger: Pick<FastifyBaseLogger, 'info' | 'error' | 'warn'>; intervalMs?: number },
): { stop(): Promise<void> } {
  const { logger } = options;
  const rowRetention = [
    { rows: 'webhook deliveries', days: options.webhookDeliveriesKeptDays, deleteBefore: deleteDeliveriesBefore },
    { rows: 'audit entries', days: options.auditLogKeptDays, deleteBefore: deleteAuditEntriesBefore },
  ];
  const round = async () => {
    if (options.purgeDeletedAfterDays > 0) {
      await purgeDeletedBefore(storage, daysAgo(options.purgeDeletedAfterDays)).then(
        (ids) => {
          if (ids.length > 0) logger.info({ purged: ids.length, first: ids.slice(0, 10) }, 'Purged deleted copilots past their retention');
        },
        (err: unknown) => jobFailed(logger, err, {}, 'Purging deleted copilots failed'),
      );
    }
    for (const part of rowRetention) {
      if (part.days <= 0) continue;
      const cutoff = daysAgo(part.days);
      await inBatches(() => part.deleteBefore(storage.db, cutoff, BATCH)).then(
        (deleted) => {
          if (deleted > 0) logger.info({ deleted }, `Deleted ${part.rows} past their retention`);
        },
        (err: unknown) => jobFailed(logger, err, {}, `Deleting old ${part.rows} failed`),
      );
    }
  };
  let running: Promise<void> | null = null;
  // A tick that comes while a round still runs is absorbed by it.
  const run = () => {
    running ??= round().finally(() => {
      running = null;
    });
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
