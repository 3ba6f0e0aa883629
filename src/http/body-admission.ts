import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../errors.js';
import { payloadTooLarge } from './errors.js';

/**
 * Request bodies being received. A body is held in memory from its first byte until its answer
 * is sent (an API description: up to MAX_DOCUMENT_BYTES, then parsed), and each connection may
 * send one: without a bound, a few hundred connections of one key sending large uploads at
 * once took the process's memory by gigabytes. So every request with a body reserves, before
 * it is read, the most it may hold (its Content-Length, or its route's body limit when it is
 * sent in chunks) against two bounds, and gives it back when its answer is sent or its
 * connection closes:
 *
 * - the instance's, REQUEST_BODIES_MAX_BYTES: past it, 503 service_unavailable with
 *   Retry-After, the body unread;
 * - a sender's (its API key, or its address without one): a quarter of that, so that one key's
 *   uploads never fill the instance's bound for the others; past it, 429 quota_exceeded.
 *
 * Both are at least the largest body a route takes (its body limit), so that one body alone is
 * never refused. A refused request's connection is closed rather than read to its end.
 */
export class BodyBudget {
  private used = 0;
  private readonly bySender = new Map<string, number>();
  private largest = 0;
  private readonly refused = { sender: 0, instance: 0 };

  constructor(private readonly configured: number) {}

  /** A route takes bodies of up to this many bytes (its body limit). */
  takes(bodyLimit: number): void {
    this.largest = Math.max(this.largest, bodyLimit);
  }

  get maxBytes(): number {
    return Math.max(this.configured, this.largest);
  }

  get perSenderBytes(): number {
    return Math.max(Math.floor(this.configured / 4), this.largest);
  }

  /** Reserves `bytes` for `sender`: true, or which bound refused them. */
  reserve(sender: string, bytes: number): true | 'sender' | 'instance' {
    const held = this.bySender.get(sender) ?? 0;
    const refusedBy = held + bytes > this.perSenderBytes ? 'sender' : this.used + bytes > this.maxBytes ? 'instance' : null;
    if (refusedBy !== null) {
      this.refused[refusedBy]++;
      return refusedBy;
    }
    this.used += bytes;
    this.bySender.set(sender, held + bytes);
    return true;
  }

  release(sender: string, bytes: number): void {
    this.used -= bytes;
    const held = (this.bySender.get(sender) ?? 0) - bytes;
    if (held > 0) this.bySender.set(sender, held);
    else this.bySender.delete(sender);
  }

  /** The bytes reserved now and by how many senders; since the start, the bodies each bound refused. */
  stats(): { bytes: number; senders: number; refusedSender: number; refusedInstance: number } {
    return { bytes: this.used, senders: this.bySender.size, refusedSender: this.refused.sender, refusedInstance: this.refused.instance };
  }
}

/**
 * The most a request's body may hold: its Content-Length, its route's limit when it is sent in
 * chunks, 0 without a body. A Content-Length over the limit is 413 before a byte is read (the
 * multipart uploads' parser would read it all first), and a Content-Encoding other than
 * identity is 415: no coding is decoded here, and a gzip body read as JSON was "not valid JSON".
 */
function reservedBytes(request: FastifyRequest): number {
  const limit = request.routeOptions.bodyLimit ?? 0;
  const declared = request.headers['content-length'];
  const length = declared !== undefined ? Number(declared) || 0 : request.headers['transfer-encoding'] === undefined ? 0 : limit;
  if (length === 0) return 0;
  const coding = request.headers['content-encoding']?.trim().toLowerCase();
  if (coding !== undefined && coding !== '' && coding !== 'identity') {
    throw new AppError('unsupported_media_type', `This service reads request bodies as sent: a Content-Encoding (${coding.slice(0, 40)}) is not decoded.`);
  }
  if (length > limit) throw payloadTooLarge(request) ?? new AppError('payload_too_large', 'The request body is larger than this service accepts here.');
  return length;
}

/** `Expect: 100-continue`: the client waits for this before it sends its body (answerInRoutes leaves it to here). */
function continueIfAsked(request: FastifyRequest, reply: FastifyReply): void {
  if (request.headers.expect?.toLowerCase() === '100-continue' && !reply.raw.headersSent) reply.raw.writeContinue();
}

/** Admits the bodies of the routes registered after it (call before them); `defaultBodyLimit`: the bodyLimit of a route that sets none. */
export function registerBodyAdmission(app: FastifyInstance, budget: BodyBudget, defaultBodyLimit: number): void {
  budget.takes(defaultBodyLimit);
  app.addHook('onRoute', (route) => budget.takes(route.bodyLimit ?? defaultBodyLimit));
  // After the route's onRequest hooks: the key is known.
  app.addHook('preParsing', async (request, reply, payload) => {
    const bytes = reservedBytes(request);
    if (bytes === 0) {
      continueIfAsked(request, reply);
      return payload;
    }
    const principal = request.principal;
    const sender = principal?.kind === 'key' ? `key:${principal.keyId}` : `address:${request.ip}`;
    const reserved = budget.reserve(sender, bytes);
    if (reserved !== true) {
      reply.header('connection', 'close');
      if (reserved === 'sender') {
        throw new AppError(
          'quota_exceeded',
          `This ${principal?.kind === 'key' ? 'API key' : 'address'} is sending as many request bodies at once as one sender may (${budget.perSenderBytes} bytes); try again when they have been answered.`,
          { limit_bytes: budget.perSenderBytes, body_bytes: bytes },
        );
      }
      throw new AppError('service_unavailable', 'The service is receiving as many request bodies at once as it holds; try again shortly.');
    }
    reply.raw.once('close', () => budget.release(sender, bytes));
    continueIfAsked(request, reply);
    return payload;
  });
}
