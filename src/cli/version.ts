/**
 * The package's version, printed by `copilot-service --version`. A constant rather than a
 * read of package.json at start (the command's start-up is measured, and the test build has
 * no package.json of its own); test/cli/cli.test.ts checks it equals package.json's.
 */
export const VERSION = '0.1.0';
