import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { BOOTSTRAP_KEY_FILE } from '../src/domain/auth/api-keys.js';
import type { RunningService } from '../src/server.js';
import { SQLITE_FILE_NAME } from '../src/storage/database.js';
import { buildCli } from './support/build.js';
import { builtModule } from './support/built-sources.js';
import { createTestDatabase, DIALECTS, type TestDatabase } from './support/databases.js';
import { API_KEY, freePort } from './support/http.js';

// In process, the service runs the build of these sources (global-setup.ts): its task threads need JavaScript.
const { startService } = (await import(builtModule('server.js').href)) as typeof import('../src/server.js');

const KEY_LINE = new RegExp(`${API_KEY.source.slice(0, -1)}\\n$`);

function serviceConfig(database: TestDatabase, dataDir = database.dataDir, env: Record<string, string> = {}) {
  return loadConfig({
    PORT: '0',
    HOST: '127.0.0.1',
    DATA_DIR: dataDir,
    ...(database.databaseUrl && { DATABASE_URL: database.databaseUrl }),
    LOG_LEVEL: 'silent',
    ...env,
  });
}

/**
 * Starts services at once: on PostgreSQL all serve; on one SQLite DATA_DIR one does, and the
 * others stop, saying another process serves that database. Returns those that serve.
 */
async function startAtOnce(dialect: string, configs: ReturnType<typeof serviceConfig>[]): Promise<RunningService[]> {
  const outcomes = await Promise.allSettled(configs.map((config) => startService(config)));
  const serving = outcomes.flatMap((o) => (o.status === 'fulfilled' ? [o.value] : []));
  const refused = outcomes.flatMap((o) => (o.status === 'rejected' ? [o.reason as Error] : []));
  if (dialect === 'sqlite') {
    expect(serving).toHaveLength(1);
    for (const err of refused) expect(err.message).toMatch(/^Another service process is serving the SQLite database in /);
  } else expect(refused).toEqual([]);
  return serving;
}

async function json(response: Response): Promise<any> {
  const text = await response.text();
  return JSON.parse(text);
}

for (const dialect of DIALECTS) {
  describe(`startService on a real port (${dialect})`, () => {
    let database: TestDatabase;
    const running: RunningService[] = [];
    const extraDirs: string[] = [];
    beforeAll(async () => {
      database = await createTestDatabase(dialect);
    });
    afterAll(async () => {
      for (const service of running.splice(0)) await service.close().catch(() => undefined);
      for (const dir of extraDirs) rmSync(dir, { recursive: true, force: true });
      await database.drop();
    });

    async function start(dataDir?: string): Promise<RunningService> {
      const service = await startService(serviceConfig(database, dataDir));
      running.push(service);
      return service;
    }
    async function stop(service: RunningService): Promise<void> {
      running.splice(running.indexOf(service), 1);
      await service.close();
    }

    it.runIf(dialect === 'sqlite')(
      'a second service on the same SQLite DATA_DIR stops at once, saying why; once the first has stopped, one starts',
      async () => {
        const dataDir = mkdtempSync(path.join(tmpdir(), 'cms-lock-'));
        extraDirs.push(dataDir);
        const first = await start(dataDir);
        await expect(startService(serviceConfig(database, dataDir))).rejects.toThrow(`Another service process is serving the SQLite database in ${dataDir}`);
        // The first still serves.
        expect((await fetch(`${first.address}/readyz`)).status).toBe(200);
        await stop(first);
        const again = await start(dataDir);
        expect((await fetch(`${again.address}/readyz`)).status).toBe(200);
        await stop(again);
      },
    );

    it('first start writes one admin key to DATA_DIR/bootstrap-admin-key with mode 0600, and it works over HTTP', async () => {
      const service = await start();
      expect(service.address).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      const file = path.join(database.dataDir, BOOTSTRAP_KEY_FILE);
      expect(existsSync(file)).toBe(true);
      expect(statSync(file).mode & 0o777).toBe(0o600);
      const content = readFileSync(file, 'utf8');
      expect(content).toMatch(KEY_LINE);
      const authorization = `Bearer ${content.trim()}`;

      const keys = await fetch(`${service.address}/backend/api/keys`, { headers: { authorization } });
      expect(keys.status).toBe(200);
      const listed = await json(keys);
      expect(listed).toHaveLength(1);
      expect(listed[0]).toMatchObject({ scopes: ['admin'], bots: null, revoked_at: null });

      const created = await fetch(`${service.address}/backend/api/copilots`, {
        method: 'POST',
        headers: { authorization, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'Over the wire' }),
      });
      expect(created.status).toBe(201);
      expect(created.headers.get('x-request-id')).toBeTruthy();
      const list = await fetch(`${service.address}/backend/api/copilots`, { headers: { authorization, accept: 'application/json' } });
      expect(list.status).toBe(200);
      expect(list.headers.get('content-type')).toMatch(/^application\/json/);
      const body = await json(list);
      expect(body.map((c: { name: string }) => c.name)).toEqual(['Over the wire']);

      const anonymous = await fetch(`${service.address}/backend/api/copilots`);
      expect(anonymous.status).toBe(401);
      expect(await json(anonymous)).toMatchObject({ error: 'unauthorized' });
      expect((await fetch(`${service.address}/healthz`)).status).toBe(200);
      expect((await fetch(`${service.address}/readyz`)).status).toBe(200);
      await stop(service);
    });

    it('a second start on the same database creates no other key (nor a new file)', async () => {
      const file = path.join(database.dataDir, BOOTSTRAP_KEY_FILE);
      const before = readFileSync(file, 'utf8');
      const service = await start();
      expect(readFileSync(file, 'utf8')).toBe(before);
      const listed = await json(await fetch(`${service.address}/backend/api/keys`, { headers: { authorization: `Bearer ${before.trim()}` } }));
      expect(listed).toHaveLength(1);
      await stop(service);

      // Even with the file gone, the database has a key: nothing is written again.
      unlinkSync(file);
      const again = await start();
      expect(existsSync(file)).toBe(false);
      const still = await json(await fetch(`${again.address}/backend/api/keys`, { headers: { authorization: `Bearer ${before.trim()}` } }));
      expect(still).toHaveLength(1);
      await stop(again);
    });

    it('two instances starting at once on one fresh database: both serve, one bootstrap key', async () => {
      const fresh = await createTestDatabase(dialect);
      try {
        // On PostgreSQL each instance has its own data directory (other machines); on SQLite they share the file, which one serves.
        const dirA = fresh.dataDir;
        const dirB = dialect === 'postgres' ? mkdtempSync(path.join(tmpdir(), 'cms-test-b-')) : fresh.dataDir;
        if (dirB !== dirA) extraDirs.push(dirB);
        const serving = await startAtOnce(dialect, [serviceConfig(fresh, dirA), serviceConfig(fresh, dirB)]);
        running.push(...serving);
        const files = [...new Set([dirA, dirB])].map((d) => path.join(d, BOOTSTRAP_KEY_FILE)).filter((f) => existsSync(f));
        expect(files).toHaveLength(1);
        const authorization = `Bearer ${readFileSync(files[0]!, 'utf8').trim()}`;
        for (const service of serving) {
          const res = await fetch(`${service.address}/backend/api/keys`, { headers: { authorization } });
          expect(res.status).toBe(200);
          expect(await json(res)).toHaveLength(1);
        }
        for (const service of serving) await stop(service);
      } finally {
        await fresh.drop();
      }
    });

    // Issue 17 §1: a container start yields a usable admin key without reading a file inside it.
    it('ADMIN_API_KEY on a fresh database: that key is the first admin key, no file is written; later starts add no key', async () => {
      const fresh = await createTestDatabase(dialect);
      const adminKey = `cms_${'Env0Admin0Key000'}_${'s3cr3t'.repeat(5)}zz`;
      try {
        // Two instances at once, as a compose file with replicas would start them.
        const serving = await startAtOnce(dialect, [
          serviceConfig(fresh, fresh.dataDir, { ADMIN_API_KEY: adminKey }),
          serviceConfig(fresh, fresh.dataDir, { ADMIN_API_KEY: adminKey }),
        ]);
        running.push(...serving);
        expect(existsSync(path.join(fresh.dataDir, BOOTSTRAP_KEY_FILE))).toBe(false);
        const authorization = `Bearer ${adminKey}`;
        for (const service of serving) {
          const keys = await fetch(`${service.address}/backend/api/keys`, { headers: { authorization } });
          expect(keys.status).toBe(200);
          const listed = await json(keys);
          expect(listed).toHaveLength(1);
          expect(listed[0]).toMatchObject({ id: 'Env0Admin0Key000', name: 'ADMIN_API_KEY', scopes: ['admin'], bots: null, revoked_at: null });
        }
        const created = await fetch(`${serving[0]!.address}/backend/api/copilots`, {
          method: 'POST',
          headers: { authorization, 'content-type': 'application/json' },
          body: JSON.stringify({ name: 'Seeded' }),
        });
        expect(created.status).toBe(201);
        for (const service of serving) await stop(service);

        // Once a key exists, another ADMIN_API_KEY adds nothing (rotate keys through the API or the CLI).
        const other = `cms_${'Another0Key00000'}_${'x'.repeat(32)}`;
        const again = await startService(serviceConfig(fresh, fresh.dataDir, { ADMIN_API_KEY: other }));
        running.push(again);
        expect((await fetch(`${again.address}/backend/api/keys`, { headers: { authorization: `Bearer ${other}` } })).status).toBe(401);
        expect(await json(await fetch(`${again.address}/backend/api/keys`, { headers: { authorization } }))).toHaveLength(1);
        await stop(again);
      } finally {
        await fresh.drop();
      }
    });
  });
}

// ---------------------------------------------------------------------------
// The built program, as `npm start` runs it.

class Output {
  text = '';
  private waiters: Array<() => void> = [];
  constructor(stream: NodeJS.ReadableStream) {
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      this.text += chunk;
      for (const wake of this.waiters.splice(0)) wake();
    });
  }
  lines(): string[] {
    return this.text.split('\n').filter((l) => l.trim() !== '');
  }
  /** Resolves when a complete line satisfies `test`. */
  async waitFor(test: (line: string) => boolean, what: string, child: ChildProcess): Promise<string> {
    for (;;) {
      const found = this.text.split('\n').slice(0, -1).find(test);
      if (found) return found;
      if (child.exitCode !== null) throw new Error(`The service exited (${child.exitCode}) before ${what}:\n${this.text}`);
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve);
        child.once('exit', () => resolve());
      });
    }
  }
}

const parsed = (line: string): Record<string, any> | null => {
  try {
    return JSON.parse(line);
  } catch {
    return null;
  }
};

describe('the built service process', () => {
  let cli: string;
  let dataDir: string;
  let child: ChildProcess;
  let stdout: Output;
  let stderr: Output;
  let port: number;

  beforeAll(async () => {
    cli = await buildCli();
    dataDir = mkdtempSync(path.join(tmpdir(), 'cms-serve-'));
    port = await freePort();
    child = spawn(process.execPath, [cli, 'serve'], {
      cwd: dataDir,
      env: { PATH: process.env.PATH, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'info', DATA_DIR: dataDir },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    stdout = new Output(child.stdout!);
    stderr = new Output(child.stderr!);
    await stdout.waitFor((l) => /listening/i.test(l), 'listening', child);
  });

  afterAll(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('on SIGTERM finishes the in-flight request, then exits 0; logs are JSON lines with request ids and never the key', async () => {
    const keyFile = path.join(dataDir, BOOTSTRAP_KEY_FILE);
    const key = readFileSync(keyFile, 'utf8').trim();
    expect(key).toMatch(API_KEY);

    // A request whose body is still on its way when SIGTERM arrives.
    const body = Buffer.from(JSON.stringify({ name: 'In flight', prompt_message: 'x'.repeat(2000) }));
    const half = Math.floor(body.length / 2);
    const request = http.request({
      host: '127.0.0.1',
      port,
      method: 'POST',
      path: '/backend/api/copilots',
      agent: false,
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': 'application/json',
        'content-length': String(body.length),
        'x-request-id': 'in-flight-1',
      },
    });
    const answered = new Promise<{ status: number; body: string }>((resolve, reject) => {
      request.on('response', (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode!, body: text }));
      });
      request.on('error', reject);
    });
    request.write(body.subarray(0, half));
    // The service has the request once it logs it.
    await stdout.waitFor((l) => parsed(l)?.reqId === 'in-flight-1', 'the request was logged', child);

    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    await stdout.waitFor((l) => /shutting down/i.test(parsed(l)?.msg ?? ''), 'the shutdown was logged', child);
    expect(child.exitCode).toBeNull(); // still draining

    request.end(body.subarray(half));
    const response = await answered;
    expect(response.status, response.body).toBe(201);
    expect(JSON.parse(response.body)).toMatchObject({ name: 'In flight', status: 'draft' });

    expect(await exited).toBe(0);

    // Logs: JSON lines; requests carry their id; the key file's path, never the key.
    const lines = stdout.lines();
    expect(lines.length).toBeGreaterThan(2);
    for (const line of lines) expect(parsed(line), line).not.toBeNull();
    const entries = lines.map((l) => parsed(l)!);
    expect(entries.filter((e) => e.reqId === 'in-flight-1').length).toBeGreaterThanOrEqual(2); // incoming and completed
    expect(entries.some((e) => e.reqId === 'in-flight-1' && e.res?.statusCode === 201)).toBe(true);
    expect(entries.some((e) => JSON.stringify(e).includes(keyFile))).toBe(true);
    // The start-up line says where it listens, on which database, and where the first key is.
    expect(entries.find((e) => /is listening/.test(String(e.msg)))).toMatchObject({
      address: `http://127.0.0.1:${port}`,
      database: `the SQLite database in ${dataDir}`,
      first_key: keyFile,
    });
    const everything = stdout.text + stderr.text;
    expect(everything).not.toContain(key);
    expect(everything).not.toContain(key.split('_')[2]);
    expect(stderr.text).toBe('');
  });
});

/** Runs the built CLI to its end (30 s at most) and returns what it printed. */
function runToExit(cli: string, args: string[], env: Record<string, string>, cwd: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [cli, ...args], {
      cwd,
      env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'info', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout!.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    child.stderr!.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

// Issue 14 §5: every start-up failure says what and where, and exits non-zero.
describe('start-up failures an operator can see', () => {
  let cli: string;
  const dirs: string[] = [];
  const dir = () => {
    const d = mkdtempSync(path.join(tmpdir(), 'cms-fail-'));
    dirs.push(d);
    return d;
  };
  beforeAll(async () => {
    cli = await buildCli();
  });
  afterAll(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it('a port already taken: a message naming it and a non-zero exit, every time (20 starts)', async () => {
    const holder = net.createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', () => resolve()));
    const port = (holder.address() as net.AddressInfo).port;
    try {
      for (let batch = 0; batch < 5; batch++) {
        // A DATA_DIR each: one SQLite database is one service's (a second stops before listening).
        const runs = await Promise.all(
          Array.from({ length: 4 }, () => {
            const dataDir = dir();
            return runToExit(cli, ['serve'], { PORT: String(port), HOST: '127.0.0.1', DATA_DIR: dataDir }, dataDir);
          }),
        );
        for (const run of runs) {
          expect(run.code, run.stderr).not.toBe(0);
          expect(run.code).not.toBeNull();
          expect(run.stderr).toContain(`127.0.0.1:${port}`);
          expect(run.stderr).toMatch(/already in use/i);
        }
      }
    } finally {
      holder.close();
    }
  }, 240_000);

  it('a port already taken is said at once, before a database that does not answer is waited for', async () => {
    const holder = net.createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', () => resolve()));
    const port = (holder.address() as net.AddressInfo).port;
    const sockets: net.Socket[] = [];
    const silent = net.createServer((socket) => sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', () => resolve()));
    const dbPort = (silent.address() as net.AddressInfo).port;
    try {
      const env = {
        PORT: String(port),
        HOST: '127.0.0.1',
        DATA_DIR: dir(),
        DATABASE_URL: `postgres://someone@127.0.0.1:${dbPort}/copilots`,
        DATABASE_CONNECT_TIMEOUT_MS: '300',
        // Waited for, the start would outlast the test.
        DATABASE_STARTUP_TIMEOUT_MS: '600000',
      };
      const run = await runToExit(cli, ['serve'], env, dir());
      expect(run.code, run.stderr).not.toBe(0);
      expect(run.stderr).toContain(`127.0.0.1:${port} is already in use`);
      expect(run.stderr).not.toMatch(/retrying/i);
    } finally {
      for (const s of sockets) s.destroy();
      silent.close();
      holder.close();
    }
  }, 60_000);

  it('DATA_DIR that is a file, or cannot be created: a message naming the path and the user', async () => {
    const file = path.join(dir(), 'a-file');
    await import('node:fs').then((fs) => fs.writeFileSync(file, 'x'));
    const user = (await import('node:os')).userInfo().username;
    for (const dataDir of [file, path.join(file, 'below'), '/sys/cms-no-such-place/data']) {
      const run = await runToExit(cli, ['serve'], { PORT: '0', HOST: '127.0.0.1', DATA_DIR: dataDir }, dir());
      expect(run.code, run.stderr).not.toBe(0);
      expect(run.stderr).toContain(dataDir);
      expect(run.stderr).toContain(user);
      expect(run.stderr).not.toMatch(/\n\s+at /);
    }
  }, 120_000);

  it('a HOST that is not an address of this machine: a message naming HOST', async () => {
    // 192.0.2.1 is TEST-NET-1 (RFC 5737): never this machine's, and binding sends nothing to it
    // (a name that resolves nowhere takes the same path, but would ask a DNS server).
    for (const host of ['192.0.2.1']) {
      const run = await runToExit(cli, ['serve'], { PORT: '0', HOST: host, DATA_DIR: dir() }, dir());
      expect(run.code, run.stderr).not.toBe(0);
      expect(run.stderr).toContain(`Could not start: HOST ${host} is not an address of this machine`);
    }
  }, 60_000);

  it('ADMIN_API_KEY on a database that holds other keys: a warning says it does not open it, and the start-up line does not name it', async () => {
    const dataDir = dir();
    // The admin commands need the service's database: migrate makes it.
    expect((await runToExit(cli, ['migrate'], { DATA_DIR: dataDir }, dir())).code).toBe(0);
    const made = await runToExit(cli, ['keys', 'create', '--scopes', 'admin'], { DATA_DIR: dataDir }, dir());
    expect(made.code, made.stderr).toBe(0);
    const unknown = `cms_${'Not0This0Db0Key0'}_${'x'.repeat(32)}`;
    for (const [adminKey, opens] of [
      [unknown, false],
      [made.stdout.trim(), true],
    ] as const) {
      const child = spawn(process.execPath, [cli, 'serve'], {
        cwd: dataDir,
        env: { PATH: process.env.PATH, PORT: '0', HOST: '127.0.0.1', DATA_DIR: dataDir, LOG_FORMAT: 'json', ADMIN_API_KEY: adminKey },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const out = new Output(child.stdout!);
      try {
        const listening = await out.waitFor((l) => /is listening/.test(l), 'listening', child);
        const warning = out.lines().find((l) => /ADMIN_API_KEY does not open this database/.test(l));
        if (opens) {
          expect(warning).toBeUndefined();
          expect(parsed(listening)?.first_key).toBe('ADMIN_API_KEY');
        } else {
          expect(parsed(warning ?? '')?.level, out.text).toBe(40);
          expect(parsed(listening)?.first_key).not.toBe('ADMIN_API_KEY');
          expect(parsed(listening)?.first_key).toMatch(/keys create/);
        }
        expect(out.text).not.toContain(adminKey.split('_')[2]!);
      } finally {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        await exited;
      }
    }
  }, 60_000);

  it('SIGTERM while it waits for the database: exits 143 at once, saying it stopped while starting', async () => {
    const sockets: net.Socket[] = [];
    const silent = net.createServer((socket) => sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', () => resolve()));
    const dbPort = (silent.address() as net.AddressInfo).port;
    const dataDir = dir();
    const child = spawn(process.execPath, [cli, 'serve'], {
      cwd: dataDir,
      env: {
        PATH: process.env.PATH,
        PORT: '0',
        HOST: '127.0.0.1',
        DATA_DIR: dataDir,
        DATABASE_URL: `postgres://someone@127.0.0.1:${dbPort}/copilots`,
        DATABASE_CONNECT_TIMEOUT_MS: '300',
        DATABASE_STARTUP_TIMEOUT_MS: '600000',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const stderr = new Output(child.stderr!);
    try {
      await stderr.waitFor((l) => /not reachable yet/.test(l), 'a retry', child);
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      child.kill('SIGTERM');
      expect(await exited).toBe(143);
      expect(stderr.text).toContain('Stopped by SIGTERM while starting: nothing was served.');
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
      for (const s of sockets) s.destroy();
      silent.close();
    }
  }, 60_000);

  it('SIGTERM at the end of the start (its first key written, not yet listening) stops it too (clock sweep: the signal was lost and it served on)', async () => {
    for (let run = 0; run < 3; run++) {
      const dataDir = dir();
      const child = spawn(process.execPath, [cli, 'serve'], {
        cwd: dataDir,
        env: { PATH: process.env.PATH, PORT: '0', HOST: '127.0.0.1', DATA_DIR: dataDir },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      try {
        const keyFile = path.join(dataDir, BOOTSTRAP_KEY_FILE);
        while (!existsSync(keyFile) && child.exitCode === null) await new Promise((resolve) => setTimeout(resolve, 5));
        child.kill('SIGTERM');
        const code = await Promise.race([exited, new Promise((resolve) => setTimeout(() => resolve('still running 20 s after SIGTERM'), 20_000))]);
        // 143: stopped while starting; 0: drained after it began to serve.
        expect([0, 143], `run ${run}`).toContain(code);
      } finally {
        if (child.exitCode === null) child.kill('SIGKILL');
      }
    }
  }, 120_000);

  it('a file in place of the SQLite database that is not one: stops at once, naming it, rather than retrying as "not reachable yet"', async () => {
    const dataDir = dir();
    writeFileSync(path.join(dataDir, SQLITE_FILE_NAME), Buffer.alloc(8192, 0x5a));
    // Retried, the start would wait out this timeout and the test's own.
    const run = await runToExit(cli, ['serve'], { PORT: '0', HOST: '127.0.0.1', DATA_DIR: dataDir, DATABASE_STARTUP_TIMEOUT_MS: '600000' }, dir());
    expect(run.code, run.stderr).not.toBe(0);
    expect(run.stderr).toContain(dataDir);
    expect(run.stderr).toContain('file is not a database');
    expect(run.stderr).not.toMatch(/retrying/i);
  }, 60_000);

  it('a damaged SQLite database: a message naming the database and what failed, with no blank migration name', async () => {
    const dataDir = dir();
    const migrated = await runToExit(cli, ['migrate'], { DATA_DIR: dataDir }, dir());
    expect(migrated.code, migrated.stderr).toBe(0);
    // The header stays (the file opens), the pages after it do not.
    const file = path.join(dataDir, SQLITE_FILE_NAME);
    const bytes = readFileSync(file);
    bytes.fill(0x5a, 4096);
    writeFileSync(file, bytes);
    const run = await runToExit(cli, ['serve'], { PORT: '0', HOST: '127.0.0.1', DATA_DIR: dataDir }, dir());
    expect(run.code, run.stderr).not.toBe(0);
    expect(run.stderr).toContain(`the SQLite database in ${dataDir}`);
    expect(run.stderr).toMatch(/malformed|not a database/);
    expect(run.stderr).not.toMatch(/Migration {2}failed/);
  }, 60_000);

  it('PostgreSQL that accepts connections but never answers: retries, then a message naming host, port and database (never the password)', async () => {
    const sockets: net.Socket[] = [];
    const silent = net.createServer((socket) => sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', () => resolve()));
    const port = (silent.address() as net.AddressInfo).port;
    try {
      const run = await runToExit(
        cli,
        ['serve'],
        {
          PORT: '0',
          HOST: '127.0.0.1',
          DATA_DIR: dir(),
          DATABASE_URL: `postgres://someone:sekret-pw@127.0.0.1:${port}/copilots`,
          DATABASE_CONNECT_TIMEOUT_MS: '300',
          DATABASE_STARTUP_TIMEOUT_MS: '1500',
        },
        dir(),
      );
      expect(run.code, run.stderr).not.toBe(0);
      expect(run.stderr).toContain(`127.0.0.1:${port}/copilots`);
      expect(run.stderr).toMatch(/retrying/i);
      expect(run.stdout + run.stderr).not.toContain('sekret-pw');
      expect(sockets.length).toBeGreaterThan(1); // it tried again
    } finally {
      for (const s of sockets) s.destroy();
      silent.close();
    }
  });
});

describe('SIGTERM with keep-alive clients', () => {
  let cli: string;
  beforeAll(async () => {
    cli = await buildCli();
  });

  async function startServe(env: Record<string, string>) {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'cms-drain-'));
    const port = await freePort();
    const child = spawn(process.execPath, [cli, 'serve'], {
      cwd: dataDir,
      env: { PATH: process.env.PATH, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'info', DATA_DIR: dataDir, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const stdout = new Output(child.stdout!);
    new Output(child.stderr!);
    await stdout.waitFor((l) => /listening/i.test(l), 'listening', child);
    const key = readFileSync(path.join(dataDir, BOOTSTRAP_KEY_FILE), 'utf8').trim();
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    return { dataDir, port, child, stdout, key, exited };
  }

  it('answers in-flight requests with Connection: close, closes idle connections, exits 0 at once and closes storage', async () => {
    const s = await startServe({ SHUTDOWN_TIMEOUT_MS: '120000' });
    const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
    try {
      // An idle keep-alive connection…
      const idle = await new Promise<number>((resolve, reject) =>
        http
          .get({ host: '127.0.0.1', port: s.port, path: '/healthz', agent }, (res) => {
            res.resume();
            res.on('end', () => resolve(res.statusCode!));
          })
          .on('error', reject),
      );
      expect(idle).toBe(200);
      // …and one whose body is still on its way when SIGTERM arrives.
      const body = Buffer.from(JSON.stringify({ name: 'Drained' }));
      const request = http.request({
        host: '127.0.0.1',
        port: s.port,
        method: 'POST',
        path: '/backend/api/copilots',
        agent,
        headers: { authorization: `Bearer ${s.key}`, 'content-type': 'application/json', 'content-length': String(body.length), 'x-request-id': 'drain-1' },
      });
      const answered = new Promise<http.IncomingMessage>((resolve, reject) => {
        request.on('response', (res) => {
          res.resume();
          res.on('end', () => resolve(res));
        });
        request.on('error', reject);
      });
      request.write(body.subarray(0, 3));
      await s.stdout.waitFor((l) => parsed(l)?.reqId === 'drain-1', 'the request was logged', s.child);
      s.child.kill('SIGTERM');
      await s.stdout.waitFor((l) => /shutting down/i.test(parsed(l)?.msg ?? ''), 'the shutdown was logged', s.child);
      request.end(body.subarray(3));
      const response = await answered;
      expect(response.statusCode).toBe(201);
      expect(response.headers.connection).toBe('close');
      expect(await s.exited).toBe(0); // not after SHUTDOWN_TIMEOUT_MS (the test would time out first)
      expect(existsSync(path.join(s.dataDir, 'copilot-service.sqlite-wal'))).toBe(false); // closed: SQLite removes its WAL
    } finally {
      agent.destroy();
      if (s.child.exitCode === null) s.child.kill('SIGKILL');
      rmSync(s.dataDir, { recursive: true, force: true });
    }
  });

  it('when the drain times out, storage is still closed before the process exits', async () => {
    const s = await startServe({ SHUTDOWN_TIMEOUT_MS: '1000' });
    const socket = net.connect(s.port, '127.0.0.1');
    try {
      socket.write(
        `POST /backend/api/copilots HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${s.key}\r\nContent-Type: application/json\r\nContent-Length: 100\r\nX-Request-Id: stuck-1\r\n\r\n{`,
      );
      await s.stdout.waitFor((l) => parsed(l)?.reqId === 'stuck-1', 'the request was logged', s.child);
      s.child.kill('SIGTERM');
      expect(await s.exited).toBe(1);
      expect(s.stdout.text).toMatch(/took too long/i);
      expect(existsSync(path.join(s.dataDir, 'copilot-service.sqlite-wal'))).toBe(false);
    } finally {
      socket.destroy();
      if (s.child.exitCode === null) s.child.kill('SIGKILL');
      rmSync(s.dataDir, { recursive: true, force: true });
    }
  });
});

describe('LOG_FORMAT', () => {
  it('pretty: lines for a person (pino-pretty); json, and auto without a terminal: JSON lines', async () => {
    const cli = await buildCli();
    const dataDir = mkdtempSync(path.join(tmpdir(), 'cms-logs-'));
    try {
      for (const format of ['pretty', 'json', 'auto']) {
        const port = await freePort();
        const child = spawn(process.execPath, [cli, 'serve'], {
          cwd: dataDir,
          env: { PATH: process.env.PATH, PORT: String(port), HOST: '127.0.0.1', DATA_DIR: dataDir, LOG_FORMAT: format },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        const stdout = new Output(child.stdout!);
        try {
          await stdout.waitFor((l) => /is listening/.test(l), 'listening', child);
          const line = stdout.lines().find((l) => /is listening/.test(l))!;
          if (format === 'pretty') {
            expect(parsed(line), line).toBeNull();
            expect(line).toMatch(/INFO/);
            expect(line).toContain(`http://127.0.0.1:${port}`);
          } else {
            expect(parsed(line), line).not.toBeNull();
          }
        } finally {
          const exited = new Promise((resolve) => child.once('exit', resolve));
          child.kill('SIGTERM');
          await exited;
        }
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
