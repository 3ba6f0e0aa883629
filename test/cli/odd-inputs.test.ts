import { spawn, spawnSync } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildCli } from '../support/build.js';
import { startServer, type LocalServer } from '../net/local-server.js';

// What a black-box sweep of the CLI found (inputs a person gives by accident or on purpose): the
// built CLI in a process of its own, each case with a deadline, since a hang was one of them.

const SPECS = fileURLToPath(new URL('../fixtures/specs/', import.meta.url));
const PETSTORE = `${SPECS}petstore3.yaml`;

let cli: string;
let dir: string;
beforeAll(async () => {
  cli = await buildCli();
  dir = mkdtempSync(join(tmpdir(), 'cli-odd-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  /** Killed at the deadline. */
  hung: boolean;
}

/**
 * `stdin`: bytes to send, or a path opened as the descriptor itself (a device, a directory);
 * `closedStderr`: standard error a pipe whose reader has gone. The deadline is under the test
 * timeout (30 s): a run that hangs is killed, not left behind.
 */
function run(
  args: string[],
  opts: { cwd?: string; env?: Record<string, string>; stdin?: Buffer | { path: string }; deadlineMs?: number; closedStderr?: boolean } = {},
): Promise<Run> {
  return new Promise((resolve) => {
    const fd = opts.stdin && !Buffer.isBuffer(opts.stdin) ? openSync(opts.stdin.path, 'r') : null;
    const child = spawn(process.execPath, [cli, ...args], {
      cwd: opts.cwd ?? dir,
      env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'silent', ...opts.env },
      stdio: [fd ?? 'pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    let hung = false;
    child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    if (opts.closedStderr) child.stderr!.destroy();
    else child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    if (child.stdin) child.stdin.end(Buffer.isBuffer(opts.stdin) ? opts.stdin : undefined);
    const deadline = setTimeout(() => {
      hung = true;
      child.kill('SIGKILL');
    }, opts.deadlineMs ?? 20_000);
    child.on('close', (code) => {
      clearTimeout(deadline);
      if (fd !== null) closeSync(fd);
      resolve({ code, stdout, stderr, hung });
    });
  });
}

describe('copilot-service tools and fix: inputs as validate reads them', () => {
  it('a FIFO or a device is refused at once, not read for ever', async () => {
    const fifo = join(dir, 'fifo');
    expect(spawnSync('mkfifo', [fifo]).status).toBe(0);
    for (const args of [
      ['tools', fifo, '--platform', 'openai'],
      ['fix', fifo],
      ['tools', '/dev/zero', '--platform', 'mcp'],
      ['fix', '/dev/urandom'],
    ]) {
      const result = await run(args);
      expect(result.hung, args.join(' ')).toBe(false);
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stderr, args.join(' ')).toBe(`${args[1]} is not a file.\n`);
    }
  });

  it('- reads standard input; a missing file is said in words, not as an error code', async () => {
    const tools = await run(['tools', '-', '--platform', 'openai'], { stdin: readFileSync(PETSTORE) });
    expect(tools.code, tools.stderr).toBe(0);
    expect(JSON.parse(tools.stdout)).toMatchObject({ platform: 'openai', tools: expect.arrayContaining([expect.objectContaining({ name: 'addPet' })]) });
    const fix = await run(['fix', '-'], { stdin: readFileSync(PETSTORE) });
    expect(fix.code, fix.stderr).toBe(0);
    expect(fix.stdout.startsWith('overlay: 1.0.0\n')).toBe(true);
    const missing = await run(['fix', join(dir, 'missing.json')]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toBe(`${join(dir, 'missing.json')}: no such file.\n`);
  });
});

describe('copilot-service validate: standard input', () => {
  it('an endless standard input ends, refused past the largest text Node can hold', async () => {
    const result = await run(['validate', '-'], { stdin: { path: '/dev/zero' }, deadlineMs: 25_000 });
    expect(result.hung).toBe(false);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^Standard input is larger than \d+ bytes, the most text Node can hold: no document can be that large\.\n$/);
  });

  it('- given twice is read once; a directory is not an empty document', async () => {
    const twice = await run(['validate', '-', '-'], { stdin: readFileSync(PETSTORE) });
    expect(twice.stderr).toBe('');
    expect(twice.code).toBe(1);
    expect(twice.stdout.trimEnd().split('\n')).toHaveLength(1);
    const directory = await run(['validate', '-'], { stdin: { path: dir } });
    expect(directory.code).toBe(2);
    expect(directory.stderr).toBe('Standard input is a directory, not a document.\n');
  });
});

describe('copilot-service validate: arguments', () => {
  it('--platform given twice keeps both, as a comma-separated list does', async () => {
    const platformsOf = (r: Run) => Object.keys(JSON.parse(r.stdout).validations.readiness.platforms);
    const repeated = await run(['validate', PETSTORE, '--platform', 'openai', '--platform', 'mcp']);
    expect(platformsOf(repeated)).toEqual(platformsOf(await run(['validate', PETSTORE, '--platform', 'openai,mcp'])));
    expect(platformsOf(repeated).sort()).toEqual(['mcp', 'openai']);
  });

  it('an absolute glob names its files as the pattern did: absolutely', async () => {
    const result = await run(['validate', `${SPECS}petstore3.*`]);
    const files = result.stdout
      .trimEnd()
      .split('\n')
      .map((line) => (JSON.parse(line) as { file: string }).file);
    expect(files).toEqual([`${SPECS}petstore3.json`, `${SPECS}petstore3.yaml`]);
  });

  it('a standard error whose reader has gone changes no exit code: a usage error and an unreadable input are still 2', async () => {
    const unreadable = join(dir, 'truncated.json');
    writeFileSync(unreadable, '{"openapi": "3.0.3", "paths": {');
    for (const args of [
      ['valdate', 'x.json'],
      ['validate', unreadable],
    ]) {
      const result = await run(args, { closedStderr: true });
      expect(result.code, args.join(' ')).toBe(2);
    }
  });

  it('an empty input name is said to be one', async () => {
    const result = await run(['validate', '']);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe('An input is an empty name: give a file, a glob, a URL or -.\n');
  });
});

describe("copilot-service validate URL: only the fetch's settings are read", () => {
  let server: LocalServer;
  beforeAll(async () => {
    server = await startServer('127.0.0.1', (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/yaml' });
      res.end(readFileSync(PETSTORE));
    });
  });
  afterAll(() => server.close());

  it('a .env with settings of the server (or of other software) does not stop it', async () => {
    const project = join(dir, 'project');
    mkdirSync(project);
    writeFileSync(join(project, '.env'), 'DATABASE_URL=mysql://x\nPORT=99999\n');
    const result = await run(['validate', `${server.origin}/openapi.yaml`], { cwd: project });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(1);
    expect(JSON.parse(result.stdout)).toHaveProperty('all_endpoints');
    // A bad fetch setting still counts: it is the fetch's.
    writeFileSync(join(project, '.env'), 'FETCH_TIMEOUT_MS=soon\n');
    const bad = await run(['validate', `${server.origin}/openapi.yaml`], { cwd: project });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('FETCH_TIMEOUT_MS');
  });
});

describe('copilot-service with a DATA_DIR that cannot be made', () => {
  it('under /proc: refused at once, not a loop for ever', async () => {
    for (const args of [['migrate'], ['keys', 'list']]) {
      const result = await run(args, { env: { DATA_DIR: '/proc/self/nope' } });
      expect(result.hung, args.join(' ')).toBe(false);
      expect(result.code, args.join(' ')).toBe(2);
      // migrate makes the database, and says the directory cannot be made; keys needs one there.
      expect(result.stderr, args.join(' ')).toContain(
        args[0] === 'migrate' ? 'DATA_DIR /proc/self/nope cannot be used' : 'There is no SQLite database at /proc/self/nope/copilot-service.sqlite',
      );
    }
  });
});
