import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root, found from this file whether it runs compiled (dist-bench/bench/lib) or not. */
export const REPO_ROOT = (() => {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const pkg = path.join(dir, 'package.json');
    if (existsSync(pkg) && (JSON.parse(readFileSync(pkg, 'utf8')) as { name?: string }).name === 'copilot-management-service') return dir;
    const up = path.dirname(dir);
    if (up === dir) throw new Error('The repository root (package.json of copilot-management-service) was not found.');
    dir = up;
  }
})();

/** The compiled benchmark's own folder (dist-bench/bench), where floor.js, maxrss.cjs and service-host.js live. */
export const BENCH_DIST = path.join(REPO_ROOT, 'dist-bench', 'bench');
/** Generated inputs and tool configs; git-ignored, made at bench time. */
export const WORK_DIR = path.join(REPO_ROOT, 'bench', '.work');
export const NODE_MODULES = path.join(REPO_ROOT, 'node_modules');

/** The command as installed: package.json's bin (the bundled build `npm run build` makes). */
export function installedCli(): string {
  const pkg = JSON.parse(readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as { bin: Record<string, string> };
  return path.join(REPO_ROOT, pkg.bin['copilot-service']!);
}
