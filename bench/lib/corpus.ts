/**
 * A corpus of real public API descriptions: an npm package fetched once with `npm pack`
 * into the git-ignored bench/.work/corpus/ and reused; never a dependency of package.json.
 * The conformance run reads all of it; section 1 of the bench times a few of its largest.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { WORK_DIR } from './paths.js';

const MiB = 1024 * 1024;

/** Fetches the package into bench/.work/corpus/<name>/ unless the same package is already there. */
export function obtainCorpus(pkg: string, log: (line: string) => void): { dir: string; id: string } {
  const corpusRoot = path.join(WORK_DIR, 'corpus');
  const name = pkg.replace(/(.)@[^@/]*$/, '$1');
  const dir = path.join(corpusRoot, name.replace(/[/@]/g, '_'));
  const marker = path.join(dir, '.package');
  if (existsSync(marker)) {
    const id = readFileSync(marker, 'utf8').trim();
    if (pkg === name || id === pkg) {
      log(`Corpus: ${id} (reused, ${path.relative(process.cwd(), dir)})`);
      return { dir, id };
    }
  }
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  log(`Corpus: fetching ${pkg} with npm pack …`);
  const packed = spawnSync('npm', ['pack', pkg, '--json', '--pack-destination', dir], { encoding: 'utf8', maxBuffer: 64 * MiB });
  if (packed.status !== 0) throw new Error(`npm pack ${pkg} failed: ${packed.stderr.trim().split('\n').slice(-3).join(' ')}`);
  const info = JSON.parse(packed.stdout) as { name: string; version: string; filename: string }[];
  const tgz = path.join(dir, info[0]!.filename.replace(/^@/, '').replace(/\//, '-'));
  const untar = spawnSync('tar', ['xzf', tgz, '-C', dir], { encoding: 'utf8' });
  if (untar.status !== 0) throw new Error(`tar xzf ${tgz} failed: ${untar.stderr.trim()}`);
  rmSync(tgz, { force: true });
  const id = `${info[0]!.name}@${info[0]!.version}`;
  writeFileSync(marker, `${id}\n`);
  log(`Corpus: ${id} (fetched into ${path.relative(process.cwd(), dir)})`);
  return { dir, id };
}
