/**
 * Issue 17 §1: the npm package as a user gets it. The package is packed from a build of these
 * sources (never the checkout's dist/, which may be stale or rebuilt by another test), then
 * installed from the tarball into an empty folder — production dependencies only, no build at
 * install — where `npx copilot-service serve` answers on loopback on SQLite and
 * `npx copilot-service validate FILE` works; `npm start` stops with the signal its supervisor
 * sends. Slow (better-sqlite3 compiles from source when no prebuilt binary can be downloaded).
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildCli, REPO_ROOT } from './support/build.js';
import { freePort } from './support/http.js';

const PACKAGE = JSON.parse(readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as { name: string; version: string; files: string[] };

/** The environment of npm commands here: this run's npm settings (set when run by `npm test`) left out. */
function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (/^npm_/i.test(key) && !/^npm_config_(registry|cache|userconfig|nodedir)$/i.test(key)) continue;
    env[key] = value;
  }
  return { ...env, ...extra };
}

function run(command: string, args: string[], cwd: string, env = cleanEnv()): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(command, args, { cwd, env, maxBuffer: 64 * 1024 * 1024, timeout: 540_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

/** Resolves with the first complete line of `child`'s stdout that `test` accepts. */
function lineOf(child: ChildProcess, test: (line: string) => boolean, what: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    let errors = '';
    child.stderr!.setEncoding('utf8').on('data', (c: string) => (errors += c));
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      text += chunk;
      const found = text.split('\n').slice(0, -1).find(test);
      if (found) resolve(found);
    });
    child.once('exit', (code) => reject(new Error(`exited (${code}) before ${what}:\n${text}\n${errors}`)));
  });
}

const exited = (child: ChildProcess): Promise<number | null> =>
  child.exitCode !== null || child.signalCode !== null
    ? Promise.resolve(child.exitCode)
    : new Promise((resolve) => child.once('exit', (code) => resolve(code)));

const portIsClosed = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => resolve(true));
  });

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

const DOCUMENT = `openapi: 3.0.3
info: { title: Pets, version: '1' }
servers: [{ url: 'https://api.example.com' }]
paths:
  /pets:
    get:
      operationId: listPets
      summary: List pets
      description: Lists every pet in the shop.
      responses: { '200': { description: ok } }
`;

describe('the npm package, installed from its tarball', () => {
  let work: string;
  let app: string;
  let tarballFiles: string[];
  const children: ChildProcess[] = [];

  beforeAll(async () => {
    work = mkdtempSync(path.join(tmpdir(), 'cms-package-'));
    // The package's tree as `npm run build` leaves it: compiled sources, the bundled command, the dashboard.
    const staging = path.join(work, 'staging');
    mkdirSync(staging);
    for (const file of ['package.json', 'README.md', 'LICENSE', 'CHANGELOG.md']) cpSync(path.join(REPO_ROOT, file), path.join(staging, file));
    cpSync(path.join(REPO_ROOT, 'docs'), path.join(staging, 'docs'), { recursive: true });
    cpSync(path.dirname(path.dirname(await buildCli())), path.join(staging, 'dist'), { recursive: true });
    if (existsSync(path.join(REPO_ROOT, 'web', 'dist'))) cpSync(path.join(REPO_ROOT, 'web', 'dist'), path.join(staging, 'web', 'dist'), { recursive: true });
    // What must never ship, there to prove the files list leaves it out.
    cpSync(path.join(REPO_ROOT, 'src', 'config.ts'), path.join(staging, 'src', 'config.ts'));
    writeFileSync(path.join(staging, 'dist', 'config.js.map'), '{}');
    symlinkSync(path.join(REPO_ROOT, 'node_modules'), path.join(staging, 'node_modules'), 'dir');
    const bundle = await run(path.join(REPO_ROOT, 'node_modules', '.bin', 'rolldown'), ['-c', path.join(REPO_ROOT, 'rolldown.config.mjs')], staging);
    expect(bundle.code, bundle.stderr).toBe(0);
    const codeCache = await run(process.execPath, [path.join(REPO_ROOT, 'scripts', 'build-cli-code-cache.mjs')], staging);
    expect(codeCache.code, codeCache.stderr).toBe(0);
    const apiDocs = await run(process.execPath, [path.join(REPO_ROOT, 'scripts', 'copy-api-docs.mjs')], staging);
    expect(apiDocs.code, apiDocs.stderr).toBe(0);

    const pack = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', work], staging);
    expect(pack.code, pack.stderr).toBe(0);
    const [packed] = JSON.parse(pack.stdout) as Array<{ filename: string; files: Array<{ path: string }> }>;
    tarballFiles = packed!.files.map((f) => f.path);

    app = path.join(work, 'app');
    mkdirSync(app);
    writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'empty-folder', private: true, allowScripts: { 'better-sqlite3': true } }));
    const install = await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', path.join(work, packed!.filename)], app);
    expect(install.code, `${install.stdout}\n${install.stderr}`).toBe(0);
  }, 600_000);

  afterAll(async () => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('holds the built service, the dashboard and the documents, never sources, tests or source maps', () => {
    for (const file of [
      'package.json',
      'README.md',
      'LICENSE',
      'CHANGELOG.md',
      'dist/cli/copilot-service.cjs',
      'dist/cli/copilot-service.bundle.cjs',
      'dist/cli/copilot-service.bundle.cjs.cache',
      'dist/server.js',
      'dist/threads/worker.js',
      'dist/api-docs/swagger-ui-bundle.js',
      'dist/api-docs/swagger-ui.css',
      'dist/api-docs/LICENSE',
    ]) {
      expect(tarballFiles, file).toContain(file);
    }
    if (existsSync(path.join(REPO_ROOT, 'web', 'dist'))) expect(tarballFiles).toContain('web/dist/index.html');
    expect(tarballFiles.filter((f) => /^(src|test|bench)\/|\.map$|^node_modules\//.test(f))).toEqual([]);
    const installed = JSON.parse(readFileSync(path.join(app, 'node_modules', PACKAGE.name, 'package.json'), 'utf8'));
    expect(installed.private).toBeUndefined();
    // No build at install: the package's own devDependencies are not there.
    expect(existsSync(path.join(app, 'node_modules', 'typescript'))).toBe(false);
    expect(existsSync(path.join(app, 'node_modules', 'vitest'))).toBe(false);
  });

  it('npx copilot-service serve: SQLite under DATA_DIR, on loopback by default, answers /healthz and /readyz; SIGTERM stops it', async () => {
    const port = await freePort();
    const dataDir = path.join(work, 'data-npx');
    const child = spawn('npx', ['--no-install', 'copilot-service', 'serve'], {
      cwd: app,
      env: cleanEnv({ PORT: String(port), DATA_DIR: dataDir, LOG_LEVEL: 'info' }),
      stdio: ['ignore', 'pipe', 'pipe'],
      // npx runs the command under a shell of its own: the whole group is stopped at the end.
      detached: true,
    });
    children.push(child);
    const listening = JSON.parse(await lineOf(child, (l) => /is listening/.test(l), 'listening'));
    expect(listening).toMatchObject({ address: `http://127.0.0.1:${port}` });
    expect(listening.database).toMatch(/^the SQLite database in /);
    for (const [url, status] of [
      ['/healthz', 'ok'],
      ['/readyz', 'ready'],
    ]) {
      const res = await fetch(`http://127.0.0.1:${port}${url}`);
      expect(res.status, url).toBe(200);
      expect(await res.json()).toEqual({ status });
    }
    expect(existsSync(path.join(dataDir, 'copilot-service.sqlite'))).toBe(true);
    const key = readFileSync(path.join(dataDir, 'bootstrap-admin-key'), 'utf8').trim();
    expect((await fetch(`http://127.0.0.1:${port}/backend/api/copilots`, { headers: { authorization: `Bearer ${key}` } })).status).toBe(200);
    if (existsSync(path.join(REPO_ROOT, 'web', 'dist'))) expect((await fetch(`http://127.0.0.1:${port}/`)).status).toBe(200);
    // The API reference, from the package's own copy of its renderer (swagger-ui-dist is a dev dependency, not installed here).
    expect(existsSync(path.join(app, 'node_modules', 'swagger-ui-dist'))).toBe(false);
    const docs = await fetch(`http://127.0.0.1:${port}/docs`);
    expect(docs.status).toBe(200);
    const scripts = [...(await docs.text()).matchAll(/src="(docs\/assets\/[^"]+)"/g)].map((m) => m[1]!);
    expect(scripts.some((s) => s.includes('swagger-ui-bundle'))).toBe(true);
    for (const script of scripts) expect((await fetch(`http://127.0.0.1:${port}/${script}`)).status, script).toBe(200);

    process.kill(-child.pid!, 'SIGTERM');
    await exited(child);
    expect(await portIsClosed(port)).toBe(true);
  });

  it('npx copilot-service validate FILE: the answer on stdout, exit 0 with nothing to fix, 1 with findings', async () => {
    const good = path.join(work, 'pets.yaml');
    writeFileSync(good, DOCUMENT);
    const ok = await run('npx', ['--no-install', 'copilot-service', 'validate', good], app);
    expect(ok.code, ok.stderr).toBe(0);
    expect(JSON.parse(ok.stdout).all_endpoints).toHaveLength(1);

    const bad = path.join(work, 'no-ids.yaml');
    writeFileSync(bad, DOCUMENT.replace('      operationId: listPets\n', ''));
    const findings = await run('npx', ['--no-install', 'copilot-service', 'validate', bad, '--format', 'text'], app);
    expect(findings.code, findings.stderr).toBe(1);
    expect(findings.stdout).toMatch(/operationId/);
  });

  it('npm start hands the signal to the service: SIGTERM to npm stops the server and frees the port', async () => {
    const port = await freePort();
    const child = spawn('npm', ['start'], {
      cwd: path.join(app, 'node_modules', PACKAGE.name),
      env: cleanEnv({ PORT: String(port), DATA_DIR: path.join(work, 'data-npm-start'), LOG_LEVEL: 'info' }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    const listening = JSON.parse(await lineOf(child, (l) => /is listening/.test(l), 'listening')) as { pid: number };
    expect(listening.pid).not.toBe(child.pid);
    child.kill('SIGTERM');
    await exited(child);
    // npm has exited; the service it ran must not outlive it.
    for (let i = 0; i < 100 && isAlive(listening.pid); i++) await new Promise((resolve) => setTimeout(resolve, 100));
    expect(isAlive(listening.pid)).toBe(false);
    expect(await portIsClosed(port)).toBe(true);
  });
});
