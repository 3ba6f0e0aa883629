import type { ValidationCache } from '../../domain/validator/index.js';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type, type Static } from 'typebox';
import type { FastifyInstance } from 'fastify';
import * as historyService from '../../domain/copilots/api-description-history.service.js';
import { MAX_POSITION } from '../../domain/cursor.js';
import { clockNow } from '../../domain/ids.js';
import { ApiDescriptionChange, ApiDescriptionSync, ApiDescriptionVersion, ChangeCounts, oneOf, SYNC_OUTCOMES } from '../../domain/wire.js';
import { AppError } from '../../errors.js';
import type { Storage } from '../../storage/database.js';
import type { AccessHook } from '../auth.js';
import { CopilotIdParams, errorResponses, jsonAnswer, LINK_HEADER, nextLink, PageQuery, ref } from '../schemas.js';

const VersionParams = Type.Object({
  id: Type.String({ description: 'The copilot id (a UUID)' }),
  version: Type.Integer({ minimum: 1, maximum: MAX_POSITION, description: 'The version number' }),
});

const SyncResult = Type.Object(
  {
    status: oneOf(SYNC_OUTCOMES, { description: 'unchanged: 304 or the same content; changed: a new version; failed: see error' }),
    version: Type.Union([Type.Integer(), Type.Null()], { description: 'The new version, when one was recorded' }),
    changes: Type.Union([ref(ChangeCounts), Type.Null()]),
    error: Type.Union([Type.String(), Type.Null()], { description: 'Why the fetch or the document failed' }),
    next_sync_at: Type.String({ description: 'When the copilot is synced next (with smart_sync = 1)' }),
  },
  { additionalProperties: false },
);

/**
 * The versions of a copilot's API description, the changes between them, and its sync from
 * swagger_url (issue 16 §1): domain in api-description-history.service.ts, storage in
 * api-description-history.repository.ts.
 */
export function apiDescriptionHistoryRoutes(
  instance: FastifyInstance,
  deps: { storage: Storage; access: AccessHook; sync: historyService.SyncDeps; cache: ValidationCache },
): void {
  const app = instance.withTypeProvider<TypeBoxTypeProvider>();
  const { storage, access } = deps;
  const base = (id: string) => `/backend/api/copilot/${encodeURIComponent(id)}/swagger`;

  app.get(
    '/backend/api/copilot/:id/swagger/versions',
    {
      onRequest: access({ scope: 'copilots:read', botParam: 'id' }),
      schema: {
        operationId: 'listApiDescriptionVersions',
        summary: 'The accepted versions of the API description, newest first',
        description:
          'Every uploaded or synced document whose content differed from the one before, with its SHA-256, size, source and the count of changes from the previous version. The newest API_DESCRIPTION_VERSIONS_KEPT are kept. When more remain, the `Link` header carries the next page.',
        tags: ['api descriptions'],
        params: CopilotIdParams,
        querystring: PageQuery,
        response: {
          200: jsonAnswer('The versions of this page', Type.Array(ref(ApiDescriptionVersion)), LINK_HEADER),
          ...errorResponses('invalid_cursor', 'unauthorized', 'forbidden', 'copilot_not_found'),
        },
      },
    },
    async (request, reply) => {
      const { limit, cursor } = request.query;
      const page = await historyService.listVersions(storage.readDb, request.params.id, { limit, cursor });
      const link = nextLink(`${base(request.params.id)}/versions`, limit, page.nextCursor);
      if (link) reply.header('link', link);
      return page.items;
    },
  );

  // The stored bytes as accepted (a Buffer, never serialised).
  app.get<{ Params: Static<typeof VersionParams>; Reply: Buffer }>(
    '/backend/api/copilot/:id/swagger/versions/:version',
    {
      onRequest: access({ scope: 'copilots:read', botParam: 'id' }),
      schema: {
        operationId: 'getApiDescriptionVersion',
        summary: 'One version of the API description, as it was accepted',
        description:
          'The bytes as uploaded or fetched, with the media type of the format they were read as. 404 not_found for a version this copilot never had or no longer keeps.',
        tags: ['api descriptions'],
        params: VersionParams,
        response: {
          200: {
            description: 'The document, in the format it was read as',
            content: {
              'application/json': { schema: Type.Object({}, { additionalProperties: true }) },
              'application/yaml': { schema: Type.String() },
            },
          },
          ...errorResponses('unauthorized', 'forbidden', 'copilot_not_found', 'version_not_found'),
        },
      },
    },
    async (request, reply) => {
      const doc = await historyService.getVersionDocument(storage.readDb, deps.cache, request.params.id, request.params.version);
      return reply.type(`${doc.mediaType}; charset=utf-8`).send(doc.bytes);
    },
  );

  app.get(
    '/backend/api/copilot/:id/swagger/changes',
    {
      onRequest: access({ scope: 'copilots:read', botParam: 'id' }),
      schema: {
        operationId: 'listApiDescriptionChanges',
        summary: 'What changed between consecutive versions, newest version first',
        description:
          'Endpoints, operationIds, parameters, request bodies, responses, auth type and server changes, each marked breaking when it breaks a copilot calling the API. When more remain, the `Link` header carries the next page.',
        tags: ['api descriptions'],
        params: CopilotIdParams,
        querystring: PageQuery,
        response: {
          200: jsonAnswer('The changes of this page', Type.Array(ref(ApiDescriptionChange)), LINK_HEADER),
          ...errorResponses('invalid_cursor', 'unauthorized', 'forbidden', 'copilot_not_found'),
        },
      },
    },
    async (request, reply) => {
      const { limit, cursor } = request.query;
      const page = await historyService.listChanges(storage.readDb, request.params.id, { limit, cursor });
      const link = nextLink(`${base(request.params.id)}/changes`, limit, page.nextCursor);
      if (link) reply.header('link', link);
      return page.items;
    },
  );

  app.get(
    '/backend/api/copilot/:id/swagger/sync',
    {
      onRequest: access({ scope: 'copilots:read', botParam: 'id' }),
      schema: {
        operationId: 'getApiDescriptionSync',
        summary: 'The sync from swagger_url: setting, last outcome, next time',
        description:
          'With smart_sync = 1 and an http(s) swagger_url, the service fetches the URL every SYNC_INTERVAL_MS (±10%), conditionally, and records a new version when its content changed.',
        tags: ['api descriptions'],
        params: CopilotIdParams,
        response: { 200: jsonAnswer('The sync state', ref(ApiDescriptionSync)), ...errorResponses('unauthorized', 'forbidden', 'copilot_not_found') },
      },
    },
    async (request) => historyService.getSyncState(storage.readDb, request.params.id),
  );

  app.post(
    '/backend/api/copilot/:id/swagger/sync',
    {
      onRequest: access({ scope: 'copilots:write', botParam: 'id' }),
      schema: {
        operationId: 'syncApiDescription',
        summary: 'Fetch swagger_url now and record a new version if its content changed',
        description:
          'A conditional GET through the guarded fetcher, whatever smart_sync says. 409 while another sync of this copilot runs (in this or another instance).',
        tags: ['api descriptions'],
        params: CopilotIdParams,
        response: {
          200: jsonAnswer('What the sync found', SyncResult),
          ...errorResponses('unauthorized', 'forbidden', 'copilot_not_found', 'swagger_missing', 'conflict', 'quota_exceeded', 'service_unavailable'),
        },
      },
    },
    async (request, reply) => {
      const outcome = await historyService.syncApiDescription(storage.db, deps.sync, request.params.id, { force: true, actor: request.principal });
      if (outcome.status === 'busy') {
        // Until its lease ends: a sync under way ends sooner; one whose instance stopped, then.
        const until = outcome.lease_expires_at;
        if (until !== null) reply.header('retry-after', String(Math.max(1, Math.ceil((Date.parse(until) - clockNow()) / 1000))));
        throw new AppError(
          'conflict',
          'A sync of this copilot’s API description is under way (or its instance stopped during it); try again when it ends, at the latest when its lease does.',
          { lease_expires_at: until },
        );
      }
      return {
        status: outcome.status,
        version: outcome.version?.version ?? null,
        changes: outcome.version ? { breaking: outcome.version.breaking, other: outcome.version.other } : null,
        error: outcome.error,
        next_sync_at: outcome.next_sync_at,
      };
    },
  );
}
