/**
 * Answers a client is slow to take (resource sweep): a connection that takes no byte of its
 * answer for 1.5 × REQUEST_TIMEOUT_MS is closed (one never read held a 25 MB document for ever), and a
 * stored document or version is read once for many downloads and sent to each from one Buffer
 * (each request read and copied its own: 19 MB of memory per slow reader).
 */
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, listenOnLoopback, openConnections, type TestApp } from '../support/app.js';
import { DIALECTS } from '../support/databases.js';
import { putRaw } from '../support/documents.js';
import { call, createCopilot, swaggerPath } from '../support/http.js';
import { waitUntil } from '../support/knowledge-base.js';

/** A valid OpenAPI document of about `bytes` bytes (one long description). */
const largeDocument = (bytes: number, title = 'Large') =>
  JSON.stringify({
    openapi: '3.0.3',
    info: { title, version: '1', description: 'x'.repeat(bytes) },
    servers: [{ url: 'https://api.example.com' }],
    paths: { '/a': { get: { operationId: 'getA', summary: 'A', description: 'Gets A.', responses: { 200: { description: 'ok' } } } } },
  });

for (const dialect of DIALECTS) {
  describe(`slow readers and downloads (${dialect})`, () => {
    let t: TestApp;
    let port: number;
    beforeAll(async () => {
      t = await buildTestApp(dialect, { env: { REQUEST_TIMEOUT_MS: '1000' } });
      port = await listenOnLoopback(t);
    });
    afterAll(async () => t?.close());

    it('a client that takes no byte of its answer for 1.5 × REQUEST_TIMEOUT_MS is disconnected', async () => {
      const bot = await createCopilot(t);
      const doc = largeDocument(16 * 1024 * 1024);
      expect((await putRaw(t, bot.id, doc, 'application/json')).statusCode).toBe(200);
      const socket = net.connect(port, '127.0.0.1');
      let closed = false;
      socket.on('close', () => (closed = true));
      socket.on('error', () => {});
      socket.write(`GET ${swaggerPath(bot.id)} HTTP/1.1\r\nHost: x\r\nAuthorization: ${t.admin}\r\n\r\n`);
      socket.pause(); // never reads: the answer fills the sockets' buffers, then nothing moves
      await waitUntil(async () => (await openConnections(t)) === 1, 'the connection');
      await waitUntil(async () => (await openConnections(t)) === 0, 'the server to close the connection');
      // What the buffers held, then the end: not the whole answer.
      socket.resume();
      await waitUntil(() => closed, 'the client to see the end');
      expect(socket.bytesRead).toBeLessThan(doc.length);
    });

    it('a stored document and a version are read once for many downloads, by content; new bytes are read anew', async () => {
      const bot = await createCopilot(t);
      const first = largeDocument(1024, 'First');
      expect((await putRaw(t, bot.id, first, 'application/json')).statusCode).toBe(200);
      t.validationCache.clear();
      expect((await call(t, 'GET', swaggerPath(bot.id))).body).toBe(first);
      const read = t.validationCache.stats();
      expect(read.entries).toBe(1);
      // Asked again, and as its version (the same bytes): found, not read again.
      expect((await call(t, 'GET', swaggerPath(bot.id))).body).toBe(first);
      expect((await call(t, 'GET', `${swaggerPath(bot.id)}/versions/1`)).body).toBe(first);
      expect(t.validationCache.stats()).toMatchObject({ entries: 1, misses: read.misses, hits: read.hits + 2 });
      const second = largeDocument(2048, 'Second');
      expect((await putRaw(t, bot.id, second, 'application/json')).statusCode).toBe(200);
      expect((await call(t, 'GET', swaggerPath(bot.id))).body).toBe(second);
      expect((await call(t, 'GET', `${swaggerPath(bot.id)}/versions/1`)).body).toBe(first);
      expect((await call(t, 'GET', `${swaggerPath(bot.id)}/versions/2`)).body).toBe(second);
    });
  });
}
