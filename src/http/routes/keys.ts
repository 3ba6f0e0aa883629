import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import * as keys from '../../domain/auth/api-keys.js';
import type { Storage } from '../../storage/database.js';
import type { AccessHook } from '../auth.js';
import { ApiKey, ApiKeyCreate, ApiKeyCreated, errorResponses } from '../schemas.js';

export function keyRoutes(app: FastifyInstance, deps: { storage: Storage; access: AccessHook }): void {
  const { storage, access } = deps;
  const admin = access({ scope: 'admin' });

  app.post(
    '/backend/api/keys',
    {
      onRequest: admin,
      schema: {
        summary: 'Create an API key (the key itself is shown only in this response)',
        tags: ['keys'],
        body: ApiKeyCreate,
        description: 'A key creates only keys whose scopes it holds and whose bots lie within its own; `bots` (when given) names 1 to 1000 existing copilots.',
        response: { 201: ApiKeyCreated, ...errorResponses('invalid_json', 'unauthorized', 'forbidden', 'payload_too_large', 'unsupported_media_type') },
      },
    },
    async (request, reply) => {
      const created = await keys.createApiKey(storage, request.body as { scopes: string[]; bots?: string[] | null; name?: string }, { creator: request.principal });
      reply.code(201);
      return { id: created.id, key: created.key, scopes: created.scopes, bots: created.bots, name: created.name, created_at: created.created_at };
    },
  );

  app.get(
    '/backend/api/keys',
    {
      onRequest: admin,
      schema: {
        summary: 'List API keys (never their secrets); a key limited to bots lists only keys within its bots',
        tags: ['keys'],
        response: { 200: Type.Array(Type.Ref(ApiKey)), ...errorResponses('unauthorized', 'forbidden') },
      },
    },
    async (request) => keys.listApiKeys(storage, request.principal),
  );

  app.delete(
    '/backend/api/keys/:id',
    {
      onRequest: admin,
      schema: {
        summary: 'Revoke an API key; it stops working at once on every instance',
        tags: ['keys'],
        params: Type.Object({ id: Type.String() }),
        response: { 204: Type.Null(), ...errorResponses('unauthorized', 'forbidden', 'key_not_found') },
      },
    },
    async (request, reply) => {
      await keys.revokeApiKey(storage, (request.params as { id: string }).id, request.principal);
      return reply.code(204).send();
    },
  );
}
