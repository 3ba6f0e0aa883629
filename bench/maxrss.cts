/**
 * Preloaded into every measured node process (NODE_OPTIONS=--require=…): on exit, appends
 * "pid maxRSS-in-KiB" to the file named by BENCH_MAXRSS_FILE. The same for all four tools,
 * whatever they do at exit (process.exit() still runs 'exit' listeners). CommonJS, given with
 * `--require`: a preload given with `--import` makes Node load every entry through its ES module
 * loader, which costs a CommonJS entry (ours) a few milliseconds a run does not cost without the
 * probe (bench/README.md, "the CLI runs from V8's code cache").
 */
import { appendFileSync } from 'node:fs';

const file = process.env.BENCH_MAXRSS_FILE;
if (file) {
  process.on('exit', () => {
    try {
      appendFileSync(file, `${process.pid} ${process.resourceUsage().maxRSS}\n`);
    } catch {
      // nothing to report to
    }
  });
}
