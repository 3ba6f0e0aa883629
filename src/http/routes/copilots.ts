import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { FastifyInstance } from 'fastify';
import * as copilots from '../../domain/copilots/copilot.service.js';
import { AppError } from '../../errors.js';
import { Copilot, CopilotCreate, CopilotPatch, PurgeResult } from '../../domain/wire.js';
import type { Storage } from '../../storage/database.js';
import { botLimit, visibleCopilot, type AccessHook } from '../auth.js';
import { CopilotIdParams, errorResponses, jsonAnswer, LINK_HEADER, ListCopilotsQuery, LOCATION_HEADER, ref } from '../schemas.js';

const CopilotRef = ref(Copilot);

/** The `Link` header of the list's next page: the same filters, the next cursor. */
function nextPage(query: ListCopilotsQuery, cursor: string): string {
  const next = new URLSearchParams();
  next.set('limit', String(query.limit));
  next.set('cursor', cursor);
  if (query.status) next.set('status', query.status);
  if (query.q) next.set('q', query.q);
  if (query.include_deleted) next.set('include_deleted', 'true');
  return `</backend/api/copilots?${next.toString()}>; rel="next"`;
}

export function copilotRoutes(instance: FastifyInstance, deps: { storage: Storage; access: AccessHook }): void {
  const app = instance.withTypeProvider<TypeBoxTypeProvider>();
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
        operationId: 'listCopilots',
        summary: 'List copilots, newest first',
        description:
          'A plain JSON array. When more copilots remain, the `Link` header carries the next page (rel="next"). A key limited to some bots sees only those.',
        tags: ['copilots'],
        querystring: ListCopilotsQuery,
        response: {
          200: jsonAnswer('The copilots of this page', Type.Array(CopilotRef), LINK_HEADER),
          ...errorResponses('invalid_cursor', 'unauthorized', 'forbidden'),
        },
      },
    },
    async (request, reply) => {
      const query = request.query;
      // Open reads (ALLOW_ANONYMOUS_READ) are of live copilots: deleted ones, their tokens
      // included, are listed to a key that may read copilots.
      if (query.include_deleted && request.principal.kind === 'anonymous') {
        const message = 'include_deleted lists deleted copilots to an API key with the copilots:read scope only.';
        throw request.headers.authorization === undefined ? new AppError('unauthorized', message) : new AppError('forbidden', message);
      }
      const page = await copilots.listCopilots(storage.readDb, {
        limit: query.limit,
        cursor: query.cursor,
        status: query.status,
        q: query.q,
        includeDeleted: query.include_deleted,
        onlyIds: botLimit(request.principal),
      });
      if (page.nextCursor) reply.header('link', nextPage(query, page.nextCursor));
      return page.items;
    },
  );

  app.post(
    '/backend/api/copilots',
    {
      onRequest: access({ scope: 'copilots:write', createsBot: true }),
      schema: {
        operationId: 'createCopilot',
        summary: 'Create a copilot',
        description: 'Starts as a draft with a default prompt message unless told otherwise; written to the audit log.',
        tags: ['copilots'],
        body: ref(CopilotCreate),
        response: {
          201: jsonAnswer('The created copilot', CopilotRef, LOCATION_HEADER),
          ...errorResponses('invalid_json', 'unauthorized', 'forbidden', 'payload_too_large', 'unsupported_media_type'),
        },
      },
    },
    async (request, reply) => {
      const created = await copilots.createCopilot(storage.db, request.body, request.principal);
      reply.code(201).header('location', `/backend/api/copilot/${created.id}`);
      return visibleCopilot(request.principal, created);
    },
  );

  app.get(
    '/backend/api/copilot/:id',
    {
      onRequest: access({ scope: 'copilots:read', botParam: 'id' }),
      schema: {
        operationId: 'getCopilot',
        summary: 'Get one copilot',
        description: 'A deleted copilot answers 404.',
        tags: ['copilots'],
        params: CopilotIdParams,
        response: { 200: jsonAnswer('The copilot', CopilotRef), ...errorResponses('unauthorized', 'forbidden', 'copilot_not_found') },
      },
    },
    async (request) => copilots.getCopilot(storage.readDb, request.params.id),
  );

  app.patch(
    '/backend/api/copilot/:id',
    {
      onRequest: access({ scope: 'copilots:write', botParam: 'id' }),
      schema: {
        operationId: 'updateCopilot',
        summary: 'Update a copilot',
        description: 'Any subset of its fields; status moves between draft and live. Written to the audit log.',
        tags: ['copilots'],
        params: CopilotIdParams,
        body: ref(CopilotPatch),
        response: {
          200: jsonAnswer('The updated copilot', CopilotRef),
          ...errorResponses('invalid_json', 'unauthorized', 'forbidden', 'copilot_not_found', 'payload_too_large', 'unsupported_media_type'),
        },
      },
    },
    async (request) => visibleCopilot(request.principal, await copilots.updateCopilot(storage.db, request.params.id, request.body, request.principal)),
  );

  app.delete(
    '/backend/api/copilot/:id',
    {
      onRequest: access({ scope: 'copilots:write', botParam: 'id' }),
      schema: {
        operationId: 'deleteCopilot',
        summary: 'Soft-delete a copilot',
        description: 'The copilot keeps its row with deleted_at set; its queued knowledge-base jobs are cancelled. Written to the audit log.',
        tags: ['copilots'],
        params: CopilotIdParams,
        response: { 200: jsonAnswer('The deleted copilot', CopilotRef), ...errorResponses('unauthorized', 'forbidden', 'copilot_not_found') },
      },
    },
    async (request) => visibleCopilot(request.principal, await copilots.deleteCopilot(storage.db, request.params.id, request.principal)),
  );

  app.post(
    '/backend/api/copilot/:id/purge',
    {
      onRequest: access({ scope: 'admin', botParam: 'id' }),
      schema: {
        operationId: 'purgeCopilot',
        summary: 'Purge a deleted copilot for good',
        description:
          'Removes its row, API description documents, knowledge base, links and passages, in one transaction. Only a soft-deleted copilot can be purged (409 otherwise). Cannot be undone; written to the audit log.',
        tags: ['copilots'],
        params: CopilotIdParams,
        response: {
          200: jsonAnswer('What was removed', ref(PurgeResult)),
          ...errorResponses('unauthorized', 'forbidden', 'copilot_not_found', 'conflict'),
        },
      },
    },
    async (request) => copilots.purgeCopilot(storage.db, storage.dialect, request.params.id, request.principal),
  );
}
