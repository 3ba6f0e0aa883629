import { spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { BENCH_DIST } from './paths.js';

export interface ProcessRun {
  wallMs: number;
  /** Peak resident set size of the process, KiB (from the preloaded maxrss module). */
  maxRssKb: number;
  exitCode: number | null;
  stdoutFile: string;
  stderrFile: string;
}

/**
 * Runs `node ARGS…` with stdout and stderr sent to files (as a user's `> out.json` does),
 * timing it from spawn to exit and reading its peak memory from the preloaded module.
 */
export async function runNode(args: readonly string[], opts: { cwd: string; outBase: string; env?: Record<string, string> }): Promise<ProcessRun> {
  const stdoutFile = `${opts.outBase}.stdout`;
  const stderrFile = `${opts.outBase}.stderr`;
  const rssFile = `${opts.outBase}.maxrss`;
  rmSync(rssFile, { force: true });
  const out = openSync(stdoutFile, 'w');
  const err = openSync(stderrFile, 'w');
  const preload = path.join(BENCH_DIST, 'maxrss.cjs');
  const env: Record<string, string> = {
    ...(process.env as Record<string, string>),
    ...opts.env,
    NODE_OPTIONS: `--require=${preload}`,
    BENCH_MAXRSS_FILE: rssFile,
  };
  try {
    const started = performance.now();
    const exitCode = await new Promise<number | null>((resolve, reject) => {
      const child = spawn(process.execPath, args, { cwd: opts.cwd, env, stdio: ['ignore', out, err] });
      child.once('error', reject);
      child.once('exit', (code) => resolve(code));
    });
    const wallMs = performance.now() - started;
    return { wallMs, maxRssKb: readMaxRss(rssFile), exitCode, stdoutFile, stderrFile };
  } finally {
    closeSync(out);
    closeSync(err);
  }
}

/** The largest figure any process of the tree wrote (a tool that forks would write several). */
function readMaxRss(file: string): number {
  if (!existsSync(file)) return Number.NaN;
  const values = readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((line) => Number(line.split(' ')[1]));
  return Math.max(...values);
}
