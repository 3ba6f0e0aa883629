import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import * as copilots from '../../domain/copilots/copilot.service.js';
import type { Storage } from '../../storage/database.js';
import { botLimit, visibleCopilot, type AccessHook } from '../auth.js';
import { Copilot, CopilotCreate, CopilotIdParams, CopilotPatch, errorResponses, ListCopilotsQuery } from '../schemas.js';

const CopilotRef = Type.Ref(Copilot);

export function copilotRoutes(app: FastifyInstance, deps: { storage: Storage; access: AccessHook }): void {
  const { storage, access } = deps;

  app.get(
    '/backend/api/copilots',
    {
      onRequest: access({ scope: 'copilots:read', anonymousReadable: true }),
      // The list's copilots are built key by key in the wire order (copilot.service toCopilot),
      // so JSON.stringify writes the schema serialiser's bytes, and on these many escaped
      // strings (the prompt messages) it is the faster of the two (bench section 3).
      serializerCompiler: () => (data) => JSON.stringify(data),
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
      const page = await copilots.listCopilots(storage, { limit, cursor: query.cursor, status: query.status, q: query.q, includeDeleted: query.include_deleted, onlyIds: botLimit(request.principal) });
      if (page.nextCursor) {
        const next = new URLSearchParams();
        next.set('limit', String(limit));
        next.set('cursor', page.nextCursor);
        if (query.status) next.set('status', query.status);
        if (query.q) next.set('q', query.q);
        if (query.include_deleted) next.set('include_deleted', 'true');
        reply.header('link', `</backend/api/copilots?${next.toString()}>; rel="next"`);
      }
      return page.items;
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
