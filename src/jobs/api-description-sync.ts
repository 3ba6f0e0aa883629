import type { FastifyBaseLogger } from 'fastify';
import { dueSyncs, syncApiDescription, type SyncDeps } from '../domain/copilots/api-description-history.service.js';
import { isAppError } from '../errors.js';
import type { Storage } from '../storage/database.js';
import { everyInterval, jobFailed } from './rounds.js';

/** Copilots looked at per round. */
const BATCH = 20;

/**
 * Syncs a round runs at once. One after another, copilots whose URLs never answer held every
 * other copilot's sync for FETCH_TIMEOUT_MS each (outbound sweep: six of them delayed another
 * copilot's by a minute); now they hold a few of these places, and the round goes on in the others.
 */
const SYNCS_AT_ONCE = 4;

/**
 * Syncs the API description of every copilot with smart_sync = 1 and an http(s) swagger_url,
 * each SYNC_INTERVAL_MS (±10%), in every instance: a copilot's lease makes one instance fetch
 * it at a time (api-description-history.service.ts). Looks for due copilots every quarter of
 * the interval, at most every minute; a round syncs SYNCS_AT_ONCE of them at a time.
 */
export function startApiDescriptionSync(
  storage: Storage,
  deps: SyncDeps,
  options: { logger: Pick<FastifyBaseLogger, 'error' | 'warn'> },
): { stop(): Promise<void> } {
  return everyInterval(
    Math.min(60_000, Math.max(250, Math.floor(deps.intervalMs / 4))),
    async (stopped) => {
      const due = await dueSyncs(storage.db, BATCH);
      const syncNext = async (): Promise<void> => {
        const copilotId = due.shift();
        if (copilotId === undefined || stopped()) return;
        // A new version is reported by the history itself (HistoryDeps.onVersion) and audited
        // there with no actor (trigger "schedule"). A copilot deleted since it was found due,
        // or whose swagger_url an upload replaced meanwhile, has nothing left to sync: not the
        // service's failure.
        await syncApiDescription(storage.db, deps, copilotId, { force: false }).catch((err: unknown) => {
          if (isAppError(err) && (err.code === 'copilot_not_found' || err.code === 'swagger_missing')) return;
          jobFailed(options.logger, err, { copilot: copilotId }, 'Syncing an API description failed');
        });
        return syncNext();
      };
      await Promise.all(Array.from({ length: SYNCS_AT_ONCE }, syncNext));
    },
    (err) => jobFailed(options.logger, err, {}, 'Looking for API descriptions to sync failed'),
  );
}
