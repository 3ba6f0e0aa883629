/**
 * Issue 13 §5: a client that sends its headers and a few body bytes, then stalls, is answered
 * 408 in the contract's shape (Connection: close) and disconnected after REQUEST_TIMEOUT_MS,
 * instead of holding its connection forever.
 */
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, listenOnLoopback, type TestApp } from '../support/app.js';
import { DIALECTS } from '../support/databases.js';

for (const dialect of DIALECTS) {
  describe(`request timeout (${dialect})`, () => {
    let t: TestApp;
    let port: number;
    beforeAll(async () => {
      t = await buildTestApp(dialect, { env: { REQUEST_TIMEOUT_MS: '1000' } });
      port = await listenOnLoopback(t);
    });
    afterAll(async () => t.close());

    it('answers 408 request_timeout and closes a connection whose body never completes', async () => {
      const socket = net.connect(port, '127.0.0.1');
      let received = '';
      socket.setEncoding('utf8');
      socket.on('data', (chunk: string) => (received += chunk));
      const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
      socket.write(
        `POST /backend/api/copilots HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${t.admin}\r\n` +
          'Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"name":',
      );
      await closed; // the test's own timeout (30 s) fails it if the server never lets go
      const [head, body] = received.split('\r\n\r\n');
      expect(head).toMatch(/^HTTP\/1\.1 408 /);
      expect(head).toMatch(/\r\nConnection: close/i);
      expect(JSON.parse(body!)).toEqual({ error: 'request_timeout', message: expect.any(String) });
    });
  });
}
