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
