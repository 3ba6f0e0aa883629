import { availableParallelism } from 'node:os';
import { configDefaults, defineConfig } from 'vitest/config';

/**
 * The files that keep both cores busy for minutes (the quick bench runs every tool of section 1,
 * the server and package tests start whole processes): they run after the others, together, so
 * that the browser tests (test/e2e) never share the machine with them. On the two-core CI
 * machine, browser tests timed out now and then while the quick bench ran beside them.
 */
const HEAVY = ['test/bench/bench-quick.test.ts', 'test/server.test.ts', 'test/package.test.ts'];

export default defineConfig({
  test: {
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
    projects: [
      { extends: true, test: { name: 'main', include: ['test/**/*.test.ts'], exclude: [...configDefaults.exclude, ...HEAVY], sequence: { groupOrder: 0 } } },
      { extends: true, test: { name: 'heavy', include: HEAVY, sequence: { groupOrder: 1 } } },
    ],
  },
});
