import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const CACHE = path.join(tmpdir(), 'cms-test-builds');

function sourceHash(): string {
  const hash = createHash('sha256');
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else {
        hash.update(path.relative(REPO_ROOT, full));
        hash.update(readFileSync(full));
      }
    }
  };
  walk(path.join(REPO_ROOT, 'src'));
  for (const file of ['tsconfig.json', 'tsconfig.build.json', 'package.json']) hash.update(readFileSync(path.join(REPO_ROOT, file)));
  hash.update(REPO_ROOT);
  return hash.digest('hex').slice(0, 16);
}

async function compile(into: string): Promise<string> {
  mkdirSync(into, { recursive: true });
  writeFileSync(path.join(into, 'package.json'), JSON.stringify({ type: 'module' }));
  symlinkSync(path.join(REPO_ROOT, 'node_modules'), path.join(into, 'node_modules'), 'dir');
  // The built dashboard (web/dist, from `npm run build`) where the server looks for it, beside dist/.
  symlinkSync(path.join(REPO_ROOT, 'web'), path.join(into, 'web'), 'dir');
  const tsc = path.join(REPO_ROOT, 'node_modules', '.bin', 'tsc');
  return new Promise<string>((resolve) => {
    execFile(tsc, ['-p', 'tsconfig.build.json', '--outDir', path.join(into, 'dist'), '--sourceMap', 'false'], { cwd: REPO_ROOT }, (_err, stdout, stderr) =>
      resolve(`${stdout}${stderr}`),
    );
  });
}

/**
 * Compiles src/ with the project's build configuration (what `npm run build` does) and
 * returns the path of `cli/index.js`. The output goes to a temporary directory keyed by the
 * sources' content, never to dist/: test files that run at once share one build and never
 * race each other (or a developer) on dist/. Type errors elsewhere in src/ do not stop the
 * emit (tsc emits anyway); only a missing entry point fails here — type checking is
 * `npm run typecheck`.
 */
export async function buildCli(): Promise<string> {
  const key = sourceHash();
  const dir = path.join(CACHE, key);
  const cli = path.join(dir, 'dist', 'cli', 'index.js');
  mkdirSync(CACHE, { recursive: true });
  // Builds of older sources are dropped after a while.
  for (const name of readdirSync(CACHE)) {
    const other = path.join(CACHE, name);
    if (name !== key && !name.startsWith(`${key}.`) && Date.now() - statSync(other).mtimeMs > 3_600_000) rmSync(other, { recursive: true, force: true });
  }
  const deadline = Date.now() + 120_000;
  while (!existsSync(cli)) {
    const lock = `${dir}.lock`;
    try {
      mkdirSync(lock); // atomic: one builder at a time
    } catch {
      if (Date.now() > deadline) throw new Error(`Timed out waiting for the build in ${dir}`);
      const held = statSync(lock, { throwIfNoEntry: false });
      if (held && Date.now() - held.mtimeMs > 120_000) rmSync(lock, { recursive: true, force: true }); // a crashed builder
      await new Promise((resolve) => setTimeout(resolve, 100));
      continue;
    }
    try {
      if (existsSync(cli)) break;
      const work = `${dir}.${process.pid}`;
      rmSync(work, { recursive: true, force: true });
      const output = await compile(work);
      if (!existsSync(path.join(work, 'dist', 'cli', 'index.js'))) {
        rmSync(work, { recursive: true, force: true });
        throw new Error(`The build produced no cli/index.js:\n${output}`);
      }
      renameSync(work, dir);
    } finally {
      rmSync(lock, { recursive: true, force: true });
    }
  }
  return cli;
}
