/**
 * Issue 17 §1: the container. No Docker engine runs here, so what can run does: the Dockerfile
 * is read for what it promises (multi-stage, CI's own `npm ci`, a non-root user, the data
 * directory as a volume, HOST=0.0.0.0, a health check on /readyz), then its entry point runs
 * with its settings and ADMIN_API_KEY, and its health check command is run against it.
 * compose.yaml is read for PostgreSQL and its named volumes.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { buildCli, REPO_ROOT } from './support/build.js';
import { freePort } from './support/http.js';

interface Instruction {
  op: string;
  args: string;
}

/** The Dockerfile's stages, each a list of instructions (continuation lines joined, comments dropped). */
function dockerfileStages(text: string): Instruction[][] {
  const logical = text
    .split('\n')
    .filter((line) => !/^\s*#/.test(line))
    .join('\n')
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '');
  const stages: Instruction[][] = [];
  for (const line of logical) {
    const [, op, args] = /^(\w+)\s+(.*)$/.exec(line)!;
    if (op!.toUpperCase() === 'FROM') stages.push([]);
    stages.at(-1)!.push({ op: op!.toUpperCase(), args: args! });
  }
  return stages;
}

/** `ENV A=1 B=2` pairs of a stage. */
function envOf(stage: Instruction[]): Record<string, string> {
  const env: Record<string, string> = {};
  for (const { args } of stage.filter((i) => i.op === 'ENV')) for (const [, k, v] of args.matchAll(/(\w+)=(\S+)/g)) env[k!] = v!;
  return env;
}

const KEY = `cms_${'Container0Key000'}_${'c0ntainer'.repeat(3)}abcde`;

describe('the container image (Dockerfile)', () => {
  const stages = dockerfileStages(readFileSync(path.join(REPO_ROOT, 'Dockerfile'), 'utf8'));
  const runtime = stages.at(-1)!;
  const one = (op: string) => runtime.filter((i) => i.op === op).at(-1)?.args;
  const env = envOf(runtime);
  const pkg = JSON.parse(readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as { bin: Record<string, string> };

  it('builds with the commands CI runs and ships production dependencies only', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    const build = stages[0]!.filter((i) => i.op === 'RUN').map((i) => i.args);
    expect(build.join(' ')).toMatch(/\bnpm ci\b/);
    expect(build.join(' ')).toMatch(/npm prune --omit=dev/);
    // The runtime stage builds nothing and installs nothing.
    expect(
      runtime
        .filter((i) => i.op === 'RUN')
        .map((i) => i.args)
        .join(' '),
    ).not.toMatch(/npm|tsc|vite/);
  });

  it('runs as an unprivileged user, keeps DATA_DIR in a volume, listens on every interface and checks /readyz', () => {
    expect(one('USER')).toBeDefined();
    expect(one('USER')).not.toMatch(/^(root|0)(:|$)/);
    expect(env.DATA_DIR).toBe('/data');
    expect(one('VOLUME')).toContain('"/data"');
    expect(env.HOST).toBe('0.0.0.0');
    expect(one('HEALTHCHECK')).toMatch(/\/readyz/);
    expect(JSON.parse(one('ENTRYPOINT')!)).toEqual(['node', pkg.bin['copilot-service']]);
    expect(JSON.parse(one('CMD')!)).toEqual(['serve']);
  });

  describe('its entry point, with its settings and ADMIN_API_KEY', () => {
    let dataDir: string;
    let port: number;
    let child: ChildProcess;
    let output = '';
    beforeAll(async () => {
      // The bundled entry point and the compiled one are the same program (test/cli/bundle.test.ts).
      const cli = await buildCli();
      dataDir = mkdtempSync(path.join(tmpdir(), 'cms-container-'));
      port = await freePort();
      child = spawn(process.execPath, [cli, ...(JSON.parse(one('CMD')!) as string[])], {
        cwd: dataDir,
        env: { PATH: process.env.PATH, ...env, PORT: String(port), DATA_DIR: dataDir, LOG_LEVEL: 'info', ADMIN_API_KEY: KEY },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      child.stdout!.setEncoding('utf8');
      child.stderr!.setEncoding('utf8').on('data', (c: string) => (output += c));
      await new Promise<void>((resolve, reject) => {
        child.stdout!.on('data', (c: string) => {
          output += c;
          if (/is listening/.test(output)) resolve();
        });
        child.once('exit', (code) => reject(new Error(`exited (${code}):\n${output}`)));
      });
    });
    afterAll(() => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      rmSync(dataDir, { recursive: true, force: true });
    });

    it('listens on every interface, answers the health check, and ADMIN_API_KEY is the admin key (no key file)', async () => {
      expect(output).toMatch(new RegExp(`"address":"http://[^"]+:${port}"`));
      const check = JSON.parse(one('HEALTHCHECK')!.replace(/^.*?CMD\s+/, '')) as string[];
      const code = await new Promise<number>((resolve) =>
        execFile(check[0] === 'node' ? process.execPath : check[0]!, check.slice(1), { env: { ...process.env, PORT: String(port) } }, (err) =>
          resolve(err ? Number((err as { code?: number }).code ?? 1) : 0),
        ),
      );
      expect(code).toBe(0);
      const keys = await fetch(`http://127.0.0.1:${port}/backend/api/keys`, { headers: { authorization: `Bearer ${KEY}` } });
      expect(keys.status).toBe(200);
      expect(await keys.json()).toMatchObject([{ id: 'Container0Key000', scopes: ['admin'] }]);
      expect(existsSync(path.join(dataDir, 'bootstrap-admin-key'))).toBe(false);
      expect(output).not.toContain(KEY.split('_')[2]);
    });

    it('stops on SIGTERM, as `docker stop` sends it, with exit code 0', async () => {
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    });
  });
});

describe('compose.yaml', () => {
  const compose = parseYaml(readFileSync(path.join(REPO_ROOT, 'compose.yaml'), 'utf8')) as {
    services: Record<string, { image?: string; build?: unknown; environment?: Record<string, string>; volumes?: string[]; depends_on?: unknown }>;
    volumes: Record<string, unknown>;
  };

  it('runs the service on PostgreSQL, with named volumes for the database and DATA_DIR', () => {
    const db = compose.services.db!;
    const service = compose.services.service!;
    expect(db.image).toMatch(/^postgres:\d+/);
    expect(service.build).toBeDefined();
    expect(service.depends_on).toMatchObject({ db: { condition: 'service_healthy' } });
    expect(service.environment!.DATABASE_URL).toMatch(/^postgres:\/\/[^@]+@db:5432\//);
    expect(service.environment!.ADMIN_API_KEY).toMatch(/ADMIN_API_KEY/);
    for (const [volumes, target] of [
      [service.volumes!, '/data'],
      [db.volumes!, '/var/lib/postgresql/data'],
    ] as const) {
      const [name, mount] = volumes[0]!.split(':');
      expect(mount).toBe(target);
      expect(Object.keys(compose.volumes)).toContain(name);
    }
  });
});
