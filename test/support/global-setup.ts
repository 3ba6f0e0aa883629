import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { TestProject } from 'vitest/node';
import { buildCli } from './build.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** file: URL (with a trailing slash) of the compiled sources under test: `dist/`. */
    builtSources: string;
  }
}

/**
 * Worker threads and child processes run JavaScript, and the tests run the TypeScript
 * sources: what must run as JavaScript runs a build of these very sources (content-keyed,
 * shared with the CLI tests; never dist/, which may be stale under `npx vitest`).
 * built-sources.ts resolves modules in it; task-threads.ts builds task threads that run it.
 */
export default async function setup(project: TestProject): Promise<void> {
  const cli = await buildCli();
  project.provide('builtSources', pathToFileURL(`${path.dirname(path.dirname(cli))}${path.sep}`).href);
}
