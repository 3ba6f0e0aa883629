import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // expect.poll waits for a browser or a job: 1 s (vitest's default) is too short on a busy two-core machine.
    expect: { poll: { timeout: 10_000 } },
    pool: 'forks',
    globalSetup: ['test/support/global-setup.ts'],
  },
});
