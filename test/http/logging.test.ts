/**
 * Issue 14 §5 (logs): outcomes a client caused are not logged as the service's errors — a
 * 502 for a user's unfetchable swagger_url is a warning without a stack, and a client that
 * aborts its body is not a 500.
 */
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, listenOnLoopback, type TestApp } from '../support/app.js';
import { DIALECTS } from '../support/databases.js';
import { COPILOTS_PATH, validatorPath } from '../support/http.js';
import { waitUntil } from '../support/knowledge-base.js';

interface LogLine {
  level: number;
  req?: { url?: string; method?: string; remoteAddress?: string };
  msg?: string;
  err?: { stack?: string };
  res?: { statusCode?: number };
}

for (const dialect of DIALECTS) {
  describe(`what the service logs (${dialect})`, () => {
    const lines: LogLine[] = [];
    let t: TestApp;
    let port: number;
    let upstream: http.Server;
    let upstreamUrl: string;
    beforeAll(async () => {
      t = await buildTestApp(dialect, {
        env: { FETCH_ALLOW_NETWORKS: '127.0.0.0/8' },
        logger: { level: 'info', stream: { write: (line: string) => void lines.push(JSON.parse(line) as LogLine) } },
      });
      port = await listenOnLoopback(t);
      upstream = http.createServer((_req, res) => res.writeHead(500).end('down'));
      await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', () => resolve()));
      upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/openapi.json`;
    });
    afterAll(async () => {
      upstream.close();
      await t.close();
    });

    it('a swagger_url that cannot be fetched: 502, logged as a warning without a stack', async () => {
      const headers = { authorization: t.admin, 'content-type': 'application/json' };
      const created = await t.app.inject({ method: 'POST', url: COPILOTS_PATH, headers, payload: JSON.stringify({ name: 'x', swagger_url: upstreamUrl }) });
      const res = await t.app.inject({ method: 'GET', url: validatorPath(created.json().id), headers });
      expect(res.statusCode).toBe(502);
      const entry = lines.find((l) => /could not be fetched/.test(l.msg ?? ''));
      expect(entry?.level).toBe(40);
      expect(entry?.err).toBeUndefined();
      expect(lines.filter((l) => l.level >= 50)).toEqual([]);
    });

    it("logs a request's URL without its query values: a search's words and a secret a client put there stay out", async () => {
      const headers = { authorization: t.admin };
      const search = `/backend/knowledgebase/b/${crypto.randomUUID()}/search?q=alice.private%40example.com&limit=5`;
      expect((await t.app.inject({ method: 'GET', url: search, headers })).statusCode).toBe(404);
      expect((await t.app.inject({ method: 'GET', url: `${COPILOTS_PATH}?api_key=QSKEYSECRET2`, headers })).statusCode).toBe(400);
      const logged = JSON.stringify(lines);
      expect(logged).not.toMatch(/alice|QSKEYSECRET2/);
      expect(lines.map((l) => l.req?.url)).toEqual(expect.arrayContaining([`${search.split('?')[0]}?q=…&limit=…`, `${COPILOTS_PATH}?api_key=…`]));
      expect(lines.find((l) => l.req?.url?.includes('api_key'))?.req).toMatchObject({ method: 'GET', remoteAddress: '127.0.0.1' });
    });

    it('a key pasted into a path instead of its id is neither logged nor answered back whole: its secret is cut (operator sweep)', async () => {
      const headers = { authorization: t.admin };
      const key = t.admin.replace(/^Bearer /, '');
      const secret = key.split('_')[2]!;
      for (const url of [`/backend/api/keys/${key}`, `/backend/api/copilot/${key}`, `/backend/api/copilot/${key}/validator`]) {
        const method = url.startsWith('/backend/api/keys') ? 'DELETE' : 'GET';
        const res = await t.app.inject({ method, url, headers });
        expect(res.statusCode, url).toBeGreaterThanOrEqual(400);
        expect(res.statusCode, url).toBeLessThan(500);
        expect(res.body, url).not.toContain(secret);
      }
      expect(JSON.stringify(lines)).not.toContain(secret);
      expect(lines.map((l) => l.req?.url)).toContain(`/backend/api/keys/${key.split('_').slice(0, 2).join('_')}_…`);
    });

    it('a client that aborts its body: no 500 and no error logged', async () => {
      const socket = net.connect(port, '127.0.0.1');
      await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
      socket.write(
        `POST /backend/api/copilots HTTP/1.1\r\nHost: x\r\nAuthorization: ${t.admin}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"name":"ab`,
      );
      await new Promise((resolve) => setTimeout(resolve, 200));
      socket.destroy();
      await waitUntil(
        () => lines.some((l) => l.msg === 'the client aborted its request' || l.res?.statusCode !== undefined),
        'the aborted request to be logged',
      );
      expect(lines.filter((l) => l.level >= 50)).toEqual([]);
      expect(lines.filter((l) => l.res?.statusCode === 500)).toEqual([]);
    });
  });
}
