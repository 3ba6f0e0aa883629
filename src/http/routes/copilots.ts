import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import * as copilots from '../../domain/copilots/copilot.service.js';
import { SizedLru } from '../../domain/sized-lru.js';
import type { Storage } from '../../storage/database.js';
import { botLimit, visibleCopilot, type AccessHook } from '../auth.js';
import { Copilot, CopilotCreate, CopilotIdParams, CopilotPatch, errorResponses, ListCopilotsQuery } from '../schemas.js';

const CopilotRef = Type.Ref(Copilot);

/** Memory for cached list answers per app (bytes of JSON). */
const LIST_CACHE_CHARS = 16 * 1024 * 1024;

export function copilotRoutes(app: FastifyInstance, deps: { storage: Storage; access: AccessHook }): void {
  const { storage, access } = deps;
  // List answers keyed by the copilots table's change token and the query: a write anywhere
  // (any instance) changes the token, so a cached answer is never stale.
  const listCache = new SizedLru<{ body: Buffer; link: string | null }>(LIST_CACHE_CHARS);

  app.get(
    '/backend/api/copilots',
    {
      onRequest: access({ scope: 'copilots:read', anonymousReadable: true }),
      schema: {
        summary: 'List copilots, newest first',
        description:
          'A plain JSON array. When more copilots remain, the `Link` header carries the next page (rel="next"). A key limited to some bots sees only those.',
        tags: ['copilots'],
        querystring: ListCopilotsQuery,
        response: { 200: Type.Array(CopilotRef), ...errorResponses('invalid_cursor', 'unauthorized', 'forbidden') },
      },
    },
    async (request, reply) => {
      const query = request.query as { limit?: number; cursor?: string; status?: 'draft' | 'live'; q?: string; include_deleted?: boolean };
      const limit = query.limit ?? 100;
      const onlyIds = botLimit(request.principal);
      // The copilots' change token, read after the request arrived: whatever the list
      // query then sees is at least that new. No token: no caching.
      const token = (await request.changeCounters).copilots;
      const key = token === null ? null : JSON.stringify([token, limit, query.cursor, query.status, query.q, query.include_deleted === true, onlyIds]);
      let answer = key === null ? undefined : listCache.get(key);
      if (!answer) {
        const page = await copilots.listCopilots(storage, { limit, cursor: query.cursor, status: query.status, q: query.q, includeDeleted: query.include_deleted, onlyIds });
        let link: string | null = null;
        if (page.nextCursor) {
          const next = new URLSearchParams();
          next.set('limit', String(limit));
          next.set('cursor', page.nextCursor);
          if (query.status) next.set('status', query.status);
          if (query.q) next.set('q', query.q);
          if (query.include_deleted) next.set('include_deleted', 'true');
          link = `</backend/api/copilots?${next.toString()}>; rel="next"`;
        }
        // Copilot objects carry exactly the schema's keys in its order: JSON.stringify
        // writes the same bytes as the schema serialiser would.
        answer = { body: Buffer.from(JSON.stringify(page.items)), link };
        if (key !== null) listCache.set(key, answer, answer.body.length + key.length);
      }
      if (answer.link) reply.header('link', answer.link);
      return reply.type('application/json; charset=utf-8').send(answer.body);
    },
  );

  app.post(
    '/backend/api/copilots',
    {
      onRequest: access({ scope: 'copilots:write', createsBot: true }),
      schema: {
        summary: 'Create a copilot',
        tags: ['copilots'],
        body: CopilotCreate,
        response: { 201: CopilotRef, ...errorResponses('invalid_json', 'unauthorized', 'forbidden', 'payload_too_large', 'unsupported_media_type') },
      },
    },
    async (request, reply) => {
      const created = await copilots.createCopilot(storage, request.body as copilots.CopilotInput & { name: string }, { actor: request.principal });
      reply.code(201).header('location', `/backend/api/copilot/${created.id}`);
      return visibleCopilot(request.principal, created);
    },
  );

  app.get(
    '/backend/api/copilot/:id',
    {
      onRequest: access({ scope: 'copilots:read', botParam: 'id' }),
      schema: {
        summary: 'Get one copilot',
        tags: ['copilots'],
        params: CopilotIdParams,
        response: { 200: CopilotRef, ...errorResponses('unauthorized', 'forbidden', 'copilot_not_found') },
      },
    },
    async (request) => copilots.getCopilot(storage, (request.params as { id: string }).id),
  );

  app.patch(
    '/backend/api/copilot/:id',
    {
      onRequest: access({ scope: 'copilots:write', botParam: 'id' }),
      schema: {
        summary: 'Update a copilot (any subset of its fields; status moves between draft and live)',
        tags: ['copilots'],
        params: CopilotIdParams,
        body: CopilotPatch,
        response: {
          200: CopilotRef,
          ...errorResponses('invalid_json', 'unauthorized', 'forbidden', 'copilot_not_found', 'payload_too_large', 'unsupported_media_type'),
        },
      },
    },
    async (request) =>
      visibleCopilot(request.principal, await copilots.updateCopilot(storage, (request.params as { id: string }).id, request.body as copilots.CopilotInput, request.principal)),
  );

  app.delete(
    '/backend/api/copilot/:id',
    {
      onRequest: access({ scope: 'copilots:write', botParam: 'id' }),
      schema: {
        summary: 'Soft-delete a copilot (it keeps its row with deleted_at set; its queued knowledge-base jobs are cancelled)',
        tags: ['copilots'],
        params: CopilotIdParams,
        response: { 200: CopilotRef, ...errorResponses('unauthorized', 'forbidden', 'copilot_not_found') },
      },
    },
    async (request) => visibleCopilot(request.principal, await copilots.deleteCopilot(storage, (request.params as { id: string }).id, request.principal)),
  );

  app.post(
    '/backend/api/copilot/:id/purge',
    {
      onRequest: access({ scope: 'admin', botParam: 'id' }),
      schema: {
        summary: 'Purge a deleted copilot for good: its row, API description documents, knowledge base, links and passages, in one transaction',
        description: 'Only a soft-deleted copilot can be purged (409 otherwise). Cannot be undone; written to the audit log.',
        tags: ['copilots'],
        params: CopilotIdParams,
        response: {
          200: Type.Object({ id: Type.String(), documents: Type.Integer(), links: Type.Integer(), passages: Type.Integer() }),
          ...errorResponses('unauthorized', 'forbidden', 'copilot_not_found', 'conflict'),
        },
      },
    },
    async (request) => copilots.purgeCopilot(storage, (request.params as { id: string }).id, request.principal),
  );
}
