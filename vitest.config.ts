import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // expect.poll waits for a browser or a job: 1 s (vitest's default) is too short on a busy two-core machine.
    expect: { poll: { timeout: 10_000 } },
    pool: 'forks',
    // A file per core, and two at least: vitest's default leaves a core idle (one file at a time on
    // two cores), while most files wait on a database, a child process or a timer. On the
    // two-core CI machine: 691 s with one file at a time (the browser tests skipped), 473 s with
    // two (all of them run).
    maxWorkers: Math.max(2, availableParallelism()),
    globalSetup: ['test/support/global-setup.ts'],
  },
});
