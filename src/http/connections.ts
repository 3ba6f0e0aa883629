import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../errors.js';

/**
 * How requests are taken from their connections (DESIGN §8 and §9: every bad input a clear 4xx
 * in the contract's body, malformed requests close their connection, no client delays another,
 * shutdown drains):
 *
 * - **One request of a connection at a time.** Node parses every request a client pipelines on
 *   one connection at once, and each then took a database connection for its key: 20,000
 *   requests in one write held the PostgreSQL pool, so that other clients waited seconds and
 *   thousands were answered 503. A connection's requests now wait for the one before to be
 *   answered, which HTTP/1.1 makes them do anyway (answers go in order).
 * - **An answer sent before the request's body has arrived closes the connection** (a 401
 *   before an upload, a 413, a 429): otherwise Node reads the rest of the body, gigabytes for up
 *   to REQUEST_TIMEOUT_MS, to reach the next request, and answered the same request a second
 *   time (408) when that ran out.
 * - **HTTP/1.1 without Host** is 400 in the contract's body (Node's own answer had none), and
 *   **a query string that is not percent-encoded UTF-8** (`%zz`, an encoded surrogate) is 400, as
 *   such a path is; both close the connection.
 */
export function registerConnectionRules(app: FastifyInstance): void {
  const turns = new WeakMap<Socket, { running: boolean; waiting: Array<() => void> }>();
  // Set when the service begins to shut down (SIGTERM): a request met then, on a connection kept
  // alive, is refused in the contract's body, with Retry-After, and its connection closed.
  // Fastify's own refusal (return503OnClosing) had a body of its own and kept the connection.
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });

  app.addHook('onRequest', async (request, reply) => {
    commonHeaders(request, reply);
    const socket = request.raw.socket;
    let turn = turns.get(socket);
    if (turn === undefined) {
      turn = { running: false, waiting: [] };
      turns.set(socket, turn);
    }
    // The turn is handed from one request to the next (never free in between), or taken.
    if (turn.running) await new Promise<void>((resolve) => turn.waiting.push(resolve));
    else turn.running = true;
    const done = () => {
      const next = turn.waiting.shift();
      if (next) next();
      else turn.running = false;
    };
    // The client went away while this request waited: nothing to answer, the next one's turn.
    if (socket.destroyed) {
      done();
      return reply.hijack();
    }
    reply.raw.once('close', done);
    if (closing) {
      reply.header('connection', 'close');
      throw new AppError('service_unavailable', 'This instance is shutting down; send the request again (another instance, or this one once it is back).');
    }
    refuseMalformed(request, reply);
  });

  app.addHook('onSend', async (request, reply, payload) => {
    if (request.raw.complete === false) reply.header('connection', 'close');
    return payload;
  });
}

/**
 * 400 (the connection closed) for what no route should see: HTTP/1.1 without Host, the
 * asterisk request target (`*`) on any method but OPTIONS (RFC 9112 §3.2.4; `GET *` was served
 * the dashboard), a query string that is not percent-encoded UTF-8.
 */
function refuseMalformed(request: FastifyRequest, reply: FastifyReply): void {
  if (request.raw.httpVersion === '1.1' && request.headers.host === undefined) {
    reply.header('connection', 'close');
    throw new AppError('invalid_request', 'An HTTP/1.1 request must carry a Host header.');
  }
  const url = request.raw.url ?? '';
  if (url === '*' && request.method !== 'OPTIONS') {
    reply.header('connection', 'close');
    throw new AppError('invalid_request', 'The request target * is for OPTIONS only; send a path.');
  }
  const at = url.indexOf('?');
  if (at === -1) return;
  for (const part of url.slice(at + 1).split('&')) {
    try {
      decodeURIComponent(part.replace(/\+/g, ' '));
    } catch {
      reply.header('connection', 'close');
      throw new AppError('invalid_request', 'The URL is not valid: a percent-escape in its query string cannot be decoded as UTF-8.');
    }
  }
}

/** Headers every answer carries: its request id, and no sniffing of its type (the onRequest hook's; the framework's own refusals add them too). */
export function commonHeaders(request: FastifyRequest, reply: FastifyReply): void {
  reply.header('x-request-id', request.id);
  // Every answer is the type it says (JSON, YAML, the dashboard's files): never sniffed as another.
  reply.header('x-content-type-options', 'nosniff');
  // The API's answers hold tokens, new keys' secrets and tenants' data: never kept by a browser
  // or a proxy (every request reads the database anyway). The dashboard and /docs set their own.
  if (request.url.startsWith('/backend/')) reply.header('cache-control', 'no-store');
}

/**
 * At most `max` connections open at once from one address: one client opening thousands
 * (sending nothing, or a header now and then, within the timeouts) took every file descriptor
 * the process may have, and every other client's connection was refused. One more is answered
 * 429 in the contract's body and closed. A loopback address is this machine (a proxy in front
 * of the service, a load test) and is not bounded; behind a proxy (TRUST_PROXY) every connection
 * comes from the proxy, which is then the one to bound them: not applied at all (app.ts).
 */
export function limitConnectionsPerAddress(server: Server, max: number, exempt: (address: string) => boolean = isLoopback): void {
  const open = new Map<string, number>();
  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress ?? '';
    if (exempt(address)) return;
    const count = (open.get(address) ?? 0) + 1;
    if (count > max) {
      const body = JSON.stringify({
        error: 'quota_exceeded',
        message: `This address has ${max} connections open to the service already, the most one address may have; close some and try again.`,
        details: { limit: max },
      });
      socket.on('error', () => {});
      socket.end(
        `HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
      socket.destroySoon();
      return;
    }
    open.set(address, count);
    socket.once('close', () => {
      const left = (open.get(address) ?? 1) - 1;
      if (left > 0) open.set(address, left);
      else open.delete(address);
    });
  });
}

/** 127.0.0.0/8, ::1, and IPv4 loopback written as IPv6. */
export function isLoopback(address: string): boolean {
  return address === '::1' || /^(::ffff:)?127\./.test(address);
}
