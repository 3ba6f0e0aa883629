#!/usr/bin/env node
/**
 * The `copilot-service` command. It runs the bundled CLI (copilot-service.bundle.cjs, made by
 * rolldown) from V8's code cache of it (copilot-service.bundle.cjs.cache, written by
 * `npm run build`: scripts/build-cli-code-cache.mjs), so that a command starts without parsing
 * and compiling the bundle's code again: that was the largest part of what a small document's
 * `validate` cost above reading, parsing and printing it (bench/README.md, "the CLI runs from V8's code cache").
 * Node 20 has no compile cache of its own for modules (`module.enableCompileCache` is Node 22's).
 *
 * A cache V8 rejects (built by another Node.js version or under other V8 flags) or a missing one
 * costs only that compilation: V8 checks the cache against the source and its own version.
 */
import { readFileSync } from 'node:fs';
import Module from 'node:module';
import path from 'node:path';
import vm from 'node:vm';

export const BUNDLE = path.join(__dirname, 'copilot-service.bundle.cjs');
export const CODE_CACHE = `${BUNDLE}.cache`;

/** The bundle compiled as Node compiles a CommonJS module, from `cachedData` when V8 accepts it. */
export function compileBundle(cachedData?: Buffer): vm.Script {
  return new vm.Script(Module.wrap(readFileSync(BUNDLE, 'utf8')), { filename: BUNDLE, cachedData });
}

/** Runs the compiled bundle as a module; `done` settles when its command has ended. */
export function runBundle(script: vm.Script): { done: Promise<unknown> } {
  const bundle = { exports: {} as { done: Promise<unknown> } };
  script.runInThisContext()(bundle.exports, Module.createRequire(BUNDLE), bundle, BUNDLE, path.dirname(BUNDLE));
  return bundle.exports;
}

if (require.main === module) {
  let cache: Buffer | undefined;
  try {
    cache = readFileSync(CODE_CACHE);
  } catch {
    // Built without one: the bundle is compiled as usual.
  }
  runBundle(compileBundle(cache));
}
