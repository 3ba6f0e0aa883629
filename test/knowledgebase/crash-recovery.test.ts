/**
 * Jobs survive a crash: the built service is killed with SIGKILL while its worker is
 * fetching a page, then started again on the same data. The job's lease
 * (2 × FETCH_TIMEOUT_MS + 5 s) runs out and the restarted worker takes the job again.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BOOTSTRAP_KEY_FILE } from '../../src/domain/auth/api-keys.js';
import { ALLOW_NETWORKS } from '../support/app.js';
import { buildCli } from '../support/build.js';
import { createTestDatabase, DIALECTS, type TestDatabase } from '../support/databases.js';
import { freePort } from '../support/http.js';
import { waitUntil, type WireLink } from '../support/knowledge-base.js';
import { PageServer } from '../support/pages.js';

interface Service {
  child: ChildProcess;
  origin: string;
  output: () => string;
}

let cli: string;
beforeAll(async () => {
  cli = await buildCli();
}, 180_000);

for (const dialect of DIALECTS) {
  describe.concurrent(`kill -9 mid-fetch, then restart (${dialect})`, () => {
    let database: TestDatabase;
    let pages: PageServer;
    const children: ChildProcess[] = [];

    beforeAll(async () => {
      database = await createTestDatabase(dialect);
      pages = await PageServer.start();
    });
    afterAll(async () => {
      for (const child of children) {
        if (child.exitCode === null && child.signalCode === null) {
          const exited = new Promise((resolve) => child.once('exit', resolve));
          child.kill('SIGTERM');
          await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 10_000))]);
          if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
        }
      }
      await pages?.close();
      await database?.drop();
    });

    async function start(): Promise<Service> {
      const port = await freePort();
      const child = spawn(process.execPath, [cli, 'serve'], {
        // The data directory as working directory: no .env of the repository is read.
        cwd: database.dataDir,
        env: {
          PATH: process.env.PATH,
          DATA_DIR: database.dataDir,
          ...(database.databaseUrl && { DATABASE_URL: database.databaseUrl }),
          PORT: String(port),
          HOST: '127.0.0.1',
          FETCH_ALLOW_NETWORKS: ALLOW_NETWORKS,
          FETCH_TIMEOUT_MS: '1500',
          KB_POLL_INTERVAL_MS: '50',
          LOG_LEVEL: 'warn',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      children.push(child);
      let text = '';
      child.stdout!.setEncoding('utf8').on('data', (c: string) => (text += c));
      child.stderr!.setEncoding('utf8').on('data', (c: string) => (text += c));
      const origin = `http://127.0.0.1:${port}`;
      await waitUntil(
        async () => {
          if (child.exitCode !== null) throw new Error(`The service exited (${child.exitCode}):\n${text}`);
          return fetch(`${origin}/readyz`).then(
            (r) => r.ok,
            () => false,
          );
        },
        'the service to be ready',
        // A guard against a hang, not a measure: a start took 20 s on a 2-core machine at load 10.
        { timeoutMs: 60_000, intervalMs: 50 },
      );
      return { child, origin, output: () => text };
    }

    it('the link becomes indexed after the restart, fetched once more', async () => {
      let arrived!: () => void;
      const firstArrived = new Promise<void>((resolve) => (arrived = resolve));
      pages.set('/stalls-once', async (req, res) => {
        if (pages.count('/stalls-once') === 1) {
          // Stall: no answer until the client goes away.
          arrived();
          await new Promise((resolve) => req.socket.once('close', resolve));
          res.destroy();
          return;
        }
        res.writeHead(200, { 'content-type': 'text/plain' }).end('After the crash the page speaks of the phoenixcrashword again.');
      });
      const url = pages.url('/stalls-once');

      const first = await start();
      const key = readFileSync(path.join(database.dataDir, BOOTSTRAP_KEY_FILE), 'utf8').trim();
      const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
      const created = await fetch(`${first.origin}/backend/api/copilots`, { method: 'POST', headers, body: JSON.stringify({ name: 'Crash bot' }) });
      expect(created.status).toBe(201);
      const bot = ((await created.json()) as { id: string }).id;
      const posted = await fetch(`${first.origin}/backend/knowledgebase/b/${bot}`, { method: 'POST', headers, body: JSON.stringify({ links: [url] }) });
      expect(posted.status).toBe(202);

      await firstArrived;
      const exited = new Promise<NodeJS.Signals | null>((resolve) => first.child.once('exit', (_code, signal) => resolve(signal)));
      first.child.kill('SIGKILL');
      expect(await exited).toBe('SIGKILL');

      const second = await start();
      const link = await waitUntil(
        async () => {
          const res = await fetch(`${second.origin}/backend/knowledgebase/b/${bot}`, { headers });
          expect(res.status).toBe(200);
          const found = ((await res.json()) as { links: WireLink[] }).links.find((l) => l.url === url)!;
          return found.status === 'pending' ? null : found;
        },
        'the link to leave pending after the restart',
        { timeoutMs: 45_000, intervalMs: 100 },
      ).catch((err: Error) => {
        throw new Error(`${err.message}\nservice output:\n${second.output()}`);
      });
      expect(link, second.output()).toMatchObject({ status: 'indexed', error: null });
      expect(link.passages).toBeGreaterThan(0);
      expect(pages.count('/stalls-once')).toBe(2);

      const search = await fetch(`${second.origin}/backend/knowledgebase/b/${bot}/search?q=phoenixcrashword`, { headers });
      expect(((await search.json()) as { results: Array<{ url: string }> }).results.map((r) => r.url)).toEqual([url]);
    }, 90_000);
  });
}
