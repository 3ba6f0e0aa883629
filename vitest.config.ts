import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

// A file per core, and two at least: vitest's default leaves a core idle (one file at a time on
// two cores), while most files wait on a database, a child process or a timer. On the
// two-core CI machine: 691 s with one file at a time (the browser tests skipped), 473 s with
// two (all of them run).
const maxWorkers = Math.max(2, availableParallelism());

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // expect.poll waits for a browser or a job: 1 s (vitest's default) is too short on a busy two-core machine.
    expect: { poll: { timeout: 10_000 } },
    pool: 'forks',
    globalSetup: ['test/support/global-setup.ts'],
    // The browser tests run after the rest, two files at a time: beside the bench's quick run
    // and the tests that start processes by the dozen, a cold Chromium page on two cores once
    // took more than 15 s to show a form (CI at d2e4adf). Their waits stay as they are.
    projects: [
      { extends: true, test: { name: 'service', include: ['test/**/*.test.ts'], exclude: ['test/e2e/**'], maxWorkers, sequence: { groupOrder: 0 } } },
      { extends: true, test: { name: 'browser', include: ['test/e2e/**/*.test.ts'], maxWorkers, sequence: { groupOrder: 1 } } },
    ],
  },
});
