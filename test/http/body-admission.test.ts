/**
 * Request bodies being received are bounded (REQUEST_BODIES_MAX_BYTES; a quarter for one key).
 * Each body is held in memory until its answer is sent, and nothing bounded how many were
 * received at once: 40 connections of one key sending 26 MB uploads took the process from 270 MB
 * to 1.25 GB, so a few hundred would take the machine's memory. Here the connections declare
 * their Content-Length and send nothing more: what a request would hold is reserved before its
 * body is read, so no byte needs to be sent to fill the bounds.
 */
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, listenOnLoopback, type TestApp } from '../support/app.js';
import { DIALECTS } from '../support/databases.js';
import { createCopilot, swaggerPath } from '../support/http.js';
import { waitUntil } from '../support/knowledge-base.js';

const MiB = 1024 * 1024;

for (const dialect of DIALECTS) {
  describe(`request bodies being received (${dialect})`, () => {
    let t: TestApp;
    let port: number;
    let bot: string;
    const open: net.Socket[] = [];
    beforeAll(async () => {
      // The instance holds 32 MiB of bodies at once, one key 8 MiB (larger than any route's limit:
      // 4 MiB documents, and the knowledge base's link lists, about 6 MB).
      t = await buildTestApp(dialect, { env: { REQUEST_BODIES_MAX_BYTES: String(32 * MiB), MAX_DOCUMENT_BYTES: String(4 * MiB) } });
      port = await listenOnLoopback(t);
      bot = (await createCopilot(t)).id;
    });
    afterAll(async () => {
      for (const socket of open) socket.destroy();
      await t?.close();
    });

    /** The `request_bodies` series of /metrics. */
    const reserved = async () => {
      const text = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
      const value = (measure: string) => Number(new RegExp(`^request_bodies\\{measure="${measure}"\\} (\\d+)$`, 'm').exec(text)?.[1]);
      return { bytes: value('bytes'), senders: value('senders'), refusedSender: value('refused_sender'), refusedInstance: value('refused_instance') };
    };

    /** A PUT of the bot's API description that declares `length` bytes and sends `body` of them; its answer, once one comes. */
    const upload = (key: string, length: number, body = '') => {
      const socket = net.connect(port, '127.0.0.1');
      open.push(socket);
      let received = '';
      socket.setEncoding('utf8');
      socket.on('data', (chunk: string) => (received += chunk));
      socket.on('error', () => {});
      socket.write(
        `PUT ${swaggerPath(bot)} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${key}\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n${body}`,
      );
      const answer = waitUntil(() => received.includes('\r\n\r\n') && received, 'an answer').then((text) => {
        const [head, rest] = text.split('\r\n\r\n');
        return { status: Number(head!.split(' ')[1]), head: head!, body: rest! };
      });
      return { socket, answer };
    };
    /** An upload that holds its reservation: its headers sent, its body never. */
    const held = async (key: string, length: number) => {
      const before = (await reserved()).bytes;
      const { socket } = upload(key, length);
      await waitUntil(async () => (await reserved()).bytes === before + length, 'the body to be reserved');
      return socket;
    };
    const answerOf = async (key: string, length: number) => {
      const { answer } = upload(key, length, 'x'.repeat(length));
      return answer;
    };

    it("one key's bodies at once are bounded (429), the instance's (503); a body's bytes come back when its connection ends", async () => {
      const keys = await Promise.all([1, 2, 3, 4, 5].map(() => t.key(['copilots:write'])));
      const [a, b, c, d, e] = keys as [string, string, string, string, string];
      const first = await held(a, 4 * MiB);
      await held(a, 4 * MiB);
      // A third body of the same key, however small: over its 8 MiB.
      const refused = await answerOf(a, 100);
      expect(refused.status).toBe(429);
      expect(refused.head).toMatch(/\r\nConnection: close/i);
      expect(JSON.parse(refused.body)).toEqual({
        error: 'quota_exceeded',
        message: expect.stringMatching(/API key is sending as many request bodies/),
        details: { limit_bytes: 8 * MiB, body_bytes: 100 },
      });
      // Another key is not held by it.
      expect((await answerOf(b, 100)).status).toBe(400);
      // Four keys fill the instance's 32 MiB: a fifth is refused for now, 503 with Retry-After.
      for (const key of [b, b, c, c, d, d]) await held(key, 4 * MiB);
      expect(await reserved()).toMatchObject({ bytes: 32 * MiB, senders: 4 });
      const busy = await answerOf(e, 100);
      expect(busy.status).toBe(503);
      expect(busy.head).toMatch(/\r\nRetry-After: \d+/i);
      expect(JSON.parse(busy.body)).toMatchObject({ error: 'service_unavailable', message: expect.stringMatching(/receiving as many request bodies/) });
      expect(await reserved()).toMatchObject({ refusedSender: 1, refusedInstance: 1 });
      // A client that goes away gives its reservation back; the next body is read (and is no API description: 400).
      first.destroy();
      await waitUntil(async () => (await reserved()).bytes === 28 * MiB, 'the reservation to be given back');
      expect((await answerOf(e, 100)).status).toBe(400);
      // Answered bodies gave theirs back too.
      for (const socket of open) socket.destroy();
      await waitUntil(async () => (await reserved()).bytes === 0, 'every reservation to be given back');
      expect((await reserved()).senders).toBe(0);
    });

    it("a body sent in chunks reserves its route's limit; a request without a body reserves nothing", async () => {
      const key = await t.key(['copilots:write']);
      const socket = net.connect(port, '127.0.0.1');
      open.push(socket);
      socket.write(
        `PUT ${swaggerPath(bot)} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${key}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`,
      );
      await waitUntil(async () => (await reserved()).bytes === 4 * MiB + 64 * 1024, 'the route limit to be reserved');
      socket.destroy();
      await waitUntil(async () => (await reserved()).bytes === 0, 'the reservation to be given back');
      expect((await t.app.inject({ method: 'GET', url: `/backend/api/copilot/${bot}`, headers: { authorization: t.admin } })).statusCode).toBe(200);
      expect((await reserved()).bytes).toBe(0);
    });
  });
}
