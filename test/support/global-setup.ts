import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { TestProject } from 'vitest/node';
import { buildCli } from './build.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** file: URL of the compiled task-thread program of the sources under test. */
    taskWorker: string;
  }
}

/**
 * Worker threads run JavaScript, and the tests run the TypeScript sources: the task threads
 * (src/threads) run a build of these very sources (content-keyed, shared with the CLI tests;
 * never dist/, which may be stale under `npx vitest`). setup-threads.ts points the pool at it.
 */
export default async function setup(project: TestProject): Promise<void> {
  const cli = await buildCli();
  project.provide('taskWorker', pathToFileURL(path.join(path.dirname(path.dirname(cli)), 'threads', 'worker.js')).href);
}
