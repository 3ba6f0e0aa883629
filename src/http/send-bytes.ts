import { Readable } from 'node:stream';
import type { FastifyReply } from 'fastify';

/**
 * Sends an answer already written as bytes (a validation from the cache, tools or fixes from
 * a task thread): the pieces one after the other as one stream, with their total length.
 * Nothing is serialised on the event loop, and the pieces are not joined (joining would copy
 * the whole answer for each request).
 */
export function sendBytes(reply: FastifyReply, contentType: string, pieces: readonly Buffer[]): FastifyReply {
  let length = 0;
  for (const piece of pieces) length += piece.length;
  return reply.type(contentType).header('content-length', String(length)).send(Readable.from(pieces));
}
