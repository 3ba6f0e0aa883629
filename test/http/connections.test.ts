/**
 * How requests are taken from their connections (src/http/connections.ts, body-admission.ts),
 * over real sockets, on both databases; each case is one an HTTP sweep found:
 * - a connection's pipelined requests are served one at a time (20,000 in one write held the
 *   PostgreSQL pool: thousands of 503s, other clients waiting seconds);
 * - an answer sent before the body has arrived closes the connection (a 401 before a 10 GB body
 *   read it all, then answered the same request again with a 408);
 * - `Expect: 100-continue` is granted only to a request that may send its body;
 * - a multipart upload over the limit is refused before its body is read;
 * - JSON that is not UTF-8, a charset other than UTF-8, a Content-Encoding, HTTP/1.1 without Host,
 *   a query string that is not percent-encoded UTF-8: each a clear 4xx in the contract's body;
 * - the framework's own refusals close the connection and carry the request id.
 */
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { isLoopback, limitConnectionsPerAddress } from '../../src/http/connections.js';
import { jobFailed } from '../../src/jobs/rounds.js';
import { buildTestApp, listenOnLoopback, openConnections, type TestApp } from '../support/app.js';
import { DIALECTS } from '../support/databases.js';
import { multipart, uploadSpec } from '../support/documents.js';
import { COPILOTS_PATH, createCopilot, swaggerPath, validatorPath } from '../support/http.js';
import { waitUntil } from '../support/knowledge-base.js';

/** A raw connection: what it received, whether the server closed it. */
function connect(port: number) {
  const socket = net.connect(port, '127.0.0.1');
  const state = { received: '', closed: false };
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => (state.received += chunk));
  socket.on('error', () => {});
  socket.on('close', () => (state.closed = true));
  return { socket, state, statusLines: () => state.received.match(/HTTP\/1\.1 \d{3} [^\r\n]*/g) ?? [] };
}

/** The JSON body of the last answer in `text`. */
const lastBody = (text: string) => JSON.parse(text.slice(text.lastIndexOf('\r\n\r\n') + 4)) as Record<string, unknown>;

/**
 * Two copilots' validations pipelined on one new connection of `t`'s, the renders held until
 * `release`: `render` is the spied task-thread call (its calls: the validations started).
 */
async function pipelinedValidations(t: TestApp, open: () => ReturnType<typeof connect>) {
  const [a, b] = [await createCopilot(t), await createCopilot(t)];
  await uploadSpec(t, a.id, 'petstore3.json');
  await uploadSpec(t, b.id, 'uber.swagger2.json');
  t.validationCache.clear();
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const original = t.taskThreads.answerOnThreadMovingBytes.bind(t.taskThreads);
  const render = vi.spyOn(t.taskThreads, 'answerOnThreadMovingBytes').mockImplementation(async (...args) => {
    await released;
    return original(...args);
  });
  const c = open();
  const get = (id: string) => `GET ${validatorPath(id)} HTTP/1.1\r\nHost: x\r\nAuthorization: ${t.admin}\r\n\r\n`;
  c.socket.write(get(a.id) + get(b.id));
  await waitUntil(() => render.mock.calls.length === 1, 'the first validation to start');
  return { a, b, c, render, release };
}

for (const dialect of DIALECTS) {
  describe(`connections (${dialect})`, () => {
    let t: TestApp;
    let port: number;
    const opened: net.Socket[] = [];
    const open = () => {
      const c = connect(port);
      opened.push(c.socket);
      return c;
    };
    beforeAll(async () => {
      t = await buildTestApp(dialect, { env: { MAX_DOCUMENT_BYTES: String(64 * 1024) } });
      port = await listenOnLoopback(t);
    });
    afterAll(async () => {
      for (const socket of opened) socket.destroy();
      await t?.close();
    });

    it("serves a connection's pipelined requests one at a time, in order", async () => {
      const { a, b, c, render, release } = await pipelinedValidations(t, open);
      try {
        // The second request is parsed already; it waits for the first to be answered.
        await new Promise((resolve) => setTimeout(resolve, 300));
        expect(render.mock.calls.length).toBe(1);
        release();
        await waitUntil(() => c.statusLines().length === 2, 'both answers');
        expect(c.statusLines()).toEqual(['HTTP/1.1 200 OK', 'HTTP/1.1 200 OK']);
        expect(render.mock.calls.map(([tenant]) => tenant)).toEqual([a.id, b.id]);
      } finally {
        render.mockRestore();
      }
    });

    it('the requests a client pipelined and left are not served once it has gone', async () => {
      const { b, c, render, release } = await pipelinedValidations(t, open);
      try {
        const withIt = await openConnections(t);
        c.socket.destroy();
        release();
        // The first one's turn ends with its connection; the second finds it gone and is dropped.
        await waitUntil(async () => (await openConnections(t)) === withIt - 1, 'the connection to close');
        await new Promise((resolve) => setTimeout(resolve, 300));
        expect(render.mock.calls.length).toBe(1);
        // The service goes on serving.
        expect((await t.app.inject({ method: 'GET', url: validatorPath(b.id), headers: { authorization: t.admin } })).statusCode).toBe(200);
      } finally {
        render.mockRestore();
      }
    });

    it('an answer sent before the body has arrived closes the connection: no rest of the body read, no second answer', async () => {
      const c = open();
      c.socket.write(`POST ${COPILOTS_PATH} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 10000000000\r\n\r\n{"name":`);
      await waitUntil(() => c.state.closed, 'the server to close the connection');
      expect(c.statusLines()).toEqual(['HTTP/1.1 401 Unauthorized']);
      expect(c.state.received).toMatch(/\r\nconnection: close\r\n/i);
      expect(lastBody(c.state.received)).toMatchObject({ error: 'unauthorized' });
    });

    it('Expect: 100-continue is granted once the key is checked and the body admitted, never to a refused request', async () => {
      const refused = open();
      refused.socket.write(`POST ${COPILOTS_PATH} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 16\r\nExpect: 100-continue\r\n\r\n`);
      await waitUntil(() => refused.state.closed, 'the refusal');
      expect(refused.statusLines()).toEqual(['HTTP/1.1 401 Unauthorized']);
      const granted = open();
      const body = '{"name":"Sent after 100"}';
      granted.socket.write(
        `POST ${COPILOTS_PATH} HTTP/1.1\r\nHost: x\r\nAuthorization: ${t.admin}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nExpect: 100-continue\r\n\r\n`,
      );
      await waitUntil(() => granted.statusLines().length === 1, 'the 100 Continue');
      expect(granted.statusLines()).toEqual(['HTTP/1.1 100 Continue']);
      granted.socket.write(body);
      await waitUntil(() => granted.statusLines().length === 2, 'the answer');
      expect(granted.statusLines()[1]).toBe('HTTP/1.1 201 Created');
    });

    it('a multipart upload over the limit is refused before its body is read, and when its file passes the limit', async () => {
      const bot = await createCopilot(t);
      const declared = open();
      declared.socket.write(
        `PUT ${swaggerPath(bot.id)} HTTP/1.1\r\nHost: x\r\nAuthorization: ${t.admin}\r\nContent-Type: multipart/form-data; boundary=b\r\nContent-Length: 200000000\r\n\r\n`,
      );
      await waitUntil(() => declared.state.closed, 'the refusal');
      expect(declared.statusLines()).toEqual(['HTTP/1.1 413 Payload Too Large']);
      expect(lastBody(declared.state.received)).toMatchObject({ error: 'payload_too_large', details: { max_bytes: 64 * 1024 } });
      // Sent in chunks: refused once the file passes 64 KiB, while the client still sends.
      const chunked = open();
      const { payload, contentType } = multipart([{ name: 'file', filename: 'big.json', type: 'application/json', content: Buffer.alloc(1024 * 1024, 0x20) }]);
      chunked.socket.write(
        `PUT ${swaggerPath(bot.id)} HTTP/1.1\r\nHost: x\r\nAuthorization: ${t.admin}\r\nContent-Type: ${contentType}\r\nTransfer-Encoding: chunked\r\n\r\n`,
      );
      const head = payload.subarray(0, 200 * 1024);
      chunked.socket.write(`${head.length.toString(16)}\r\n`);
      chunked.socket.write(head);
      chunked.socket.write('\r\n');
      await waitUntil(() => chunked.state.closed, 'the refusal');
      expect(chunked.statusLines()).toEqual(['HTTP/1.1 413 Payload Too Large']);
      expect(lastBody(chunked.state.received)).toMatchObject({ error: 'payload_too_large', details: { max_bytes: 64 * 1024 } });
    });

    it('a JSON body that is not UTF-8 is 400, a charset other than UTF-8 415 (it was stored with U+FFFD: 201)', async () => {
      const post = (bytes: Buffer, type = 'application/json') =>
        t.app.inject({ method: 'POST', url: COPILOTS_PATH, payload: bytes, headers: { authorization: t.admin, 'content-type': type } });
      for (const bytes of [Buffer.from('{"name":"caf\xe9"}', 'latin1'), Buffer.from([...Buffer.from('{"name":"'), 0xed, 0xa0, 0x80, ...Buffer.from('"}')])]) {
        const res = await post(bytes);
        expect(res.statusCode, res.body).toBe(400);
        expect(res.json()).toMatchObject({ error: 'invalid_json', message: expect.stringMatching(/UTF-8/) });
      }
      const latin1 = await post(Buffer.from('{"name":"cafe"}'), 'application/json; charset=latin1');
      expect(latin1.statusCode).toBe(415);
      expect(latin1.json()).toMatchObject({ error: 'unsupported_media_type' });
      for (const type of ['application/json; charset=utf-8', 'application/json; charset="UTF-8"']) {
        expect((await post(Buffer.from('{"name":"café"}'), type)).json()).toMatchObject({ name: 'café' });
      }
    });

    it('a body with a Content-Encoding is 415 (a gzip body was "not valid JSON", an unknown coding ignored)', async () => {
      for (const coding of ['gzip', 'foo']) {
        const res = await t.app.inject({
          method: 'POST',
          url: COPILOTS_PATH,
          payload: '{"name":"x"}',
          headers: { authorization: t.admin, 'content-type': 'application/json', 'content-encoding': coding },
        });
        expect(res.statusCode, coding).toBe(415);
        expect(res.json()).toMatchObject({ error: 'unsupported_media_type', message: expect.stringContaining(coding) });
      }
    });

    it('HTTP/1.1 without Host is 400 in the contract body, and the connection closes', async () => {
      const c = open();
      c.socket.write('GET /healthz HTTP/1.1\r\n\r\n');
      await waitUntil(() => c.state.closed, 'the close');
      expect(c.statusLines()).toEqual(['HTTP/1.1 400 Bad Request']);
      expect(lastBody(c.state.received)).toMatchObject({ error: 'invalid_request', message: expect.stringContaining('Host') });
    });

    it('the asterisk request target on GET or HEAD is 400 in the contract body, and the connection closes (HTTP sweep: GET * was served the dashboard)', async () => {
      for (const method of ['GET', 'HEAD']) {
        const c = open();
        c.socket.write(`${method} * HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n`);
        await waitUntil(() => c.state.closed, 'the close');
        expect(c.statusLines(), method).toEqual(['HTTP/1.1 400 Bad Request']);
        if (method !== 'HEAD') expect(lastBody(c.state.received)).toMatchObject({ error: 'invalid_request', message: expect.stringContaining('OPTIONS only') });
      }
    });

    it('a query string that is not percent-encoded UTF-8 is 400, as such a path is', async () => {
      for (const query of ['q=%zz', 'q=%ED%A0%80', 'q=%C0%AF', 'limit=1&q=%']) {
        const res = await t.app.inject({ method: 'GET', url: `${COPILOTS_PATH}?${query}`, headers: { authorization: t.admin } });
        expect(res.statusCode, query).toBe(400);
        expect(res.json(), query).toMatchObject({ error: 'invalid_request', message: expect.stringContaining('query string') });
      }
      expect((await t.app.inject({ method: 'GET', url: `${COPILOTS_PATH}?q=%25zz+a%C3%A9`, headers: { authorization: t.admin } })).statusCode).toBe(200);
    });

    it("the framework's refusal of a bad path escape closes the connection and carries the request id", async () => {
      const c = open();
      c.socket.write(`GET /backend/api/copilot/%zz HTTP/1.1\r\nHost: x\r\nAuthorization: ${t.admin}\r\nX-Request-Id: bad-escape-1\r\n\r\n`);
      await waitUntil(() => c.state.closed, 'the close');
      expect(c.statusLines()).toEqual(['HTTP/1.1 400 Bad Request']);
      expect(c.state.received).toMatch(/\r\nx-request-id: bad-escape-1\r\n/i);
      expect(c.state.received).toMatch(/\r\nx-content-type-options: nosniff\r\n/i);
    });
  });
}

for (const dialect of DIALECTS) {
  describe(`connections per address (${dialect})`, () => {
    let t: TestApp;
    let port: number;
    beforeAll(async () => {
      t = await buildTestApp(dialect, { env: { MAX_CONNECTIONS_PER_ADDRESS: '3' } });
      port = await listenOnLoopback(t);
    });
    /** The app's own bound leaves loopback alone (a proxy on this machine); this one counts it, as a remote address is counted. */
    const countingLoopback = () => limitConnectionsPerAddress(t.app.server, 3, () => false);
    afterAll(async () => t?.close());

    it('loopback is not bounded by MAX_CONNECTIONS_PER_ADDRESS (a proxy or a load test on this machine)', async () => {
      const five = [1, 2, 3, 4, 5].map(() => connect(port));
      for (const c of five) c.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
      await waitUntil(() => five.every((c) => c.statusLines().length === 1), 'five answers');
      expect(five.map((c) => c.statusLines()[0])).toEqual(Array(5).fill('HTTP/1.1 200 OK'));
      for (const c of five) c.socket.destroy();
      await waitUntil(async () => (await openConnections(t)) === 0, 'the connections to close');
      expect(isLoopback('127.0.0.1') && isLoopback('::1') && isLoopback('::ffff:127.0.0.2')).toBe(true);
      expect(isLoopback('10.0.0.1') || isLoopback('::ffff:10.0.0.1') || isLoopback('1::1')).toBe(false);
    });

    it('one address holds at most MAX_CONNECTIONS_PER_ADDRESS; one more is 429 and closed; a closed one makes room (resource sweep: 20,000 idle connections refused every client)', async () => {
      countingLoopback();
      const idle = [connect(port), connect(port), connect(port)];
      await waitUntil(async () => (await openConnections(t)) === 3, 'three connections');
      const refused = connect(port);
      await waitUntil(() => refused.state.closed, 'the fourth to be closed');
      expect(refused.statusLines()).toEqual(['HTTP/1.1 429 Too Many Requests']);
      expect(lastBody(refused.state.received)).toEqual({ error: 'quota_exceeded', message: expect.stringContaining('3 connections'), details: { limit: 3 } });
      idle[0]!.socket.destroy();
      await waitUntil(async () => (await openConnections(t)) === 2, 'one to close');
      const next = connect(port);
      next.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
      await waitUntil(() => next.statusLines().length === 1, 'an answer');
      expect(next.statusLines()).toEqual(['HTTP/1.1 200 OK']);
      for (const c of [...idle, next]) c.socket.destroy();
    });
  });
}

describe('jobFailed', () => {
  it('a database out of reach or busy is a warning (the next round tries again); anything else an error', () => {
    const logger = { warn: vi.fn(), error: vi.fn() };
    jobFailed(logger, Object.assign(new Error('timeout exceeded when trying to connect'), {}), { job: 'x' }, 'The crawl job failed');
    jobFailed(logger, Object.assign(new Error('connect'), { code: 'ECONNREFUSED' }), {}, 'The crawl job failed');
    expect(logger.warn).toHaveBeenCalledTimes(2);
    expect(logger.warn.mock.calls[0]![1]).toMatch(/^The crawl job failed: the database is out of reach or busy/);
    jobFailed(logger, new TypeError('a bug'), {}, 'The crawl job failed');
    expect(logger.error).toHaveBeenCalledWith(expect.objectContaining({ err: expect.any(TypeError) }), 'The crawl job failed');
  });
});

for (const dialect of DIALECTS) {
  describe(`a request met while the service shuts down (${dialect})`, () => {
    let t: TestApp;
    let port: number;
    beforeAll(async () => {
      t = await buildTestApp(dialect);
      port = await listenOnLoopback(t);
    });
    afterAll(async () => t?.close());

    it("is 503 service_unavailable in the contract's body with Retry-After, and closes its connection (crash sweep: the framework's own body, no Retry-After)", async () => {
      const { c, render, release } = await pipelinedValidations(t, () => connect(port));
      try {
        const closed = t.app.close();
        release();
        await waitUntil(() => c.statusLines().length === 2, 'both answers');
        await waitUntil(() => c.state.closed, 'the connection to close');
        await closed;
        expect(c.statusLines()).toEqual(['HTTP/1.1 200 OK', 'HTTP/1.1 503 Service Unavailable']);
        const second = c.state.received.slice(c.state.received.lastIndexOf('HTTP/1.1 503'));
        expect(second).toMatch(/\r\nretry-after: \d+\r\n/i);
        expect(second).toMatch(/\r\nconnection: close\r\n/i);
        expect(lastBody(c.state.received)).toEqual({ error: 'service_unavailable', message: expect.stringMatching(/shutting down/) });
      } finally {
        render.mockRestore();
        c.socket.destroy();
      }
    });
  });
}
