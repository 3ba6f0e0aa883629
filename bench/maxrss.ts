/**
 * Preloaded into every measured node process (NODE_OPTIONS=--import=…): on exit, appends
 * "pid maxRSS-in-KiB" to the file named by BENCH_MAXRSS_FILE. The same for all four tools,
 * whatever they do at exit (process.exit() still runs 'exit' listeners).
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
