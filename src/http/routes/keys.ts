import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { FastifyInstance } from 'fastify';
import * as keys from '../../domain/auth/api-keys.js';
import { ApiKey, ApiKeyCreate, ApiKeyCreated, ApiKeyIdentity } from '../../domain/wire.js';
import type { Storage } from '../../storage/database.js';
import type { AccessHook } from '../auth.js';
import { errorResponses, jsonAnswer, KeyIdParams, ref } from '../schemas.js';

export function keyRoutes(instance: FastifyInstance, deps: { storage: Storage; access: AccessHook }): void {
  const app = instance.withTypeProvider<TypeBoxTypeProvider>();
  const { storage, access } = deps;
  const admin = access({ scope: 'admin' });

  app.post(
    '/backend/api/keys',
    {
      onRequest: admin,
      schema: {
        operationId: 'createApiKey',
        summary: 'Create an API key (the key itself is shown only in this answer)',
        description:
          'A key creates only keys whose scopes it holds and whose bots lie within its own; `bots` (when given) names 1 to 1000 existing copilots. ' +
          'At most 1000 active keys name one bot (429 `quota_exceeded`).',
        tags: ['keys'],
        body: ref(ApiKeyCreate),
        response: {
          201: jsonAnswer('The created key, with its secret', ref(ApiKeyCreated)),
          ...errorResponses('invalid_json', 'unauthorized', 'forbidden', 'payload_too_large', 'unsupported_media_type', 'quota_exceeded'),
        },
      },
    },
    async (request, reply) => {
      const created = await keys.createApiKey(storage.db, request.body, { creator: request.principal });
      reply.code(201);
      return created;
    },
  );

  app.get(
    '/backend/api/keys',
    {
      onRequest: admin,
      schema: {
        operationId: 'listApiKeys',
        summary: 'List API keys',
        description: 'Never their secrets. A key limited to bots lists only keys within its bots.',
        tags: ['keys'],
        response: { 200: jsonAnswer('The keys', Type.Array(ref(ApiKey))), ...errorResponses('unauthorized', 'forbidden') },
      },
    },
    async (request) => keys.listApiKeys(storage.readDb, request.principal),
  );

  app.get(
    '/backend/api/keys/me',
    {
      onRequest: access({ scope: null }),
      schema: {
        operationId: 'getOwnApiKey',
        summary: "The calling key's own identity and permissions",
        description:
          'Any valid key may ask, whatever its scopes: its id, label, scopes, bots (null: every bot), whether it holds admin ' +
          '(manages keys, reads the audit log) and the scopes it acts with. Never the secret. Clients use it to offer only what the key may do.',
        tags: ['keys'],
        response: { 200: jsonAnswer('The calling key', ref(ApiKeyIdentity)), ...errorResponses('unauthorized') },
      },
    },
    async (request) => keys.describeKey(storage.readDb, request.principal),
  );

  app.delete(
    '/backend/api/keys/:id',
    {
      onRequest: admin,
      schema: {
        operationId: 'revokeApiKey',
        summary: 'Revoke an API key',
        description:
          'It stops working at once, on every instance. Written to the audit log. The last active admin key for every bot is not revoked (409 `conflict`): create another first.',
        tags: ['keys'],
        params: KeyIdParams,
        response: { 204: Type.Null({ description: 'Revoked' }), ...errorResponses('unauthorized', 'forbidden', 'key_not_found', 'conflict') },
      },
    },
    async (request, reply) => {
      await keys.revokeApiKey(storage.db, request.params.id, request.principal);
      return reply.code(204).send(null);
    },
  );
}
