import { execFile } from 'node:child_process';
import { inject } from 'vitest';

/** The file: URL of a module of the compiled sources under test (global-setup.ts), e.g. `threads/worker.js`. */
export function builtModule(relative: string): URL {
  return new URL(relative, inject('builtSources'));
}

/** Runs `node file` to its end: its exit code and output. */
export function runNodeScript(file: string, env: NodeJS.ProcessEnv = process.env): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [file], { env }, (err, stdout, stderr) =>
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}
