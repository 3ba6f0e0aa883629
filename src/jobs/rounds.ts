import type { FastifyBaseLogger } from 'fastify';
import { isDatabaseUnavailable } from '../storage/unavailable.js';

/**
 * Runs `round` every `intervalMs`, one round at a time: a tick that comes while a round still
 * runs is absorbed by it. `round` is told `stopped()` so it can leave between items; `stop()`
 * ends the timer and waits for the round in progress. The timer does not keep the process alive.
 */
export function everyInterval(
  intervalMs: number,
  round: (stopped: () => boolean) => Promise<void>,
  onError: (err: unknown) => void,
): { stop(): Promise<void> } {
  let stopped = false;
  let running: Promise<void> | null = null;
  const timer = setInterval(() => {
    running ??= round(() => stopped)
      .catch(onError)
      .finally(() => {
        running = null;
      });
  }, intervalMs);
  timer.unref();
  return {
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}

/**
 * Logs a job's failure: at warn when the database was out of reach or busy (every connection
 * in use, say, while clients flood the service), which the job's next round tries again and
 * which is not the service's fault (DESIGN §9: client-caused outcomes are not errors); else at error.
 */
export function jobFailed(logger: Pick<FastifyBaseLogger, 'error' | 'warn'>, err: unknown, fields: Record<string, unknown>, message: string): void {
  if (isDatabaseUnavailable(err)) logger.warn({ err, ...fields }, `${message}: the database is out of reach or busy; tried again later`);
  else logger.error({ err, ...fields }, message);
}
