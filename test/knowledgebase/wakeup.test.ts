/**
 * The worker's idle waits: a long idle period (a poll every KB_POLL_INTERVAL_MS for hours)
 * must leave nothing behind. It once chained a closure per poll, and the notification of the
 * next POST of links overflowed the stack: the POST answered 500 (seen in the bench).
 */
import { describe, expect, it } from 'vitest';
import { Wakeup } from '../../src/jobs/ingestion-worker.js';

describe('the worker idle waits', () => {
  it('a wake-up after a hundred thousand finished waits neither throws nor keeps them', async () => {
    const idle = new Wakeup();
    for (let i = 0; i < 100_000; i++) {
      const waiting = idle.wait(60_000);
      idle.wakeAll();
      await waiting;
    }
    expect(idle.size).toBe(0);
    const last = idle.wait(60_000);
    expect(() => idle.wakeAll()).not.toThrow();
    await last;
  });

  it('a wait that times out leaves the set', async () => {
    const idle = new Wakeup();
    for (let i = 0; i < 1000; i++) await idle.wait(0);
    expect(idle.size).toBe(0);
  });

  it('wakes every wait in progress at once', async () => {
    const idle = new Wakeup();
    const waits = Array.from({ length: 5 }, () => idle.wait(60_000));
    expect(idle.size).toBe(5);
    idle.wakeAll();
    await Promise.all(waits);
    expect(idle.size).toBe(0);
  });
});

describe('the ingestion worker after a long idle period', () => {
  it('is still notified of new links without error (POST links stays 202)', async () => {
    const { IngestionWorker } = await import('../../src/jobs/ingestion-worker.js');
    const worker = new IngestionWorker({} as never, {
      concurrency: 0,
      pollIntervalMs: 1,
      fetchPolicy: { timeoutMs: 1000, maxBytes: 1024, maxRedirects: 0, allowNetworks: [] },
      taskThreads: {} as never, // fetches nothing
    });
    // What its idle loop does between polls, 50,000 times (hours at the default interval);
    // started together here, which builds the same structure as one after another.
    const idlePoll = (worker as unknown as { sleep(ms: number): Promise<void> }).sleep.bind(worker);
    const polls = Array.from({ length: 50_000 }, () => idlePoll(60_000));
    expect(() => worker.notify()).not.toThrow();
    await Promise.all(polls);
  });
});
