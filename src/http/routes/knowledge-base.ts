import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../../config.js';
import * as knowledgeBase from '../../domain/knowledgebase/knowledge-base.service.js';
import { MAX_LINK_LENGTH, MAX_LINKS_PER_REQUEST } from '../../domain/knowledgebase/links.js';
import type { Storage } from '../../storage/database.js';
import type { AccessHook } from '../auth.js';
import { AUDIT_ACTIONS, listAudit } from '../../domain/audit.js';
import { errorResponses, Timestamp } from '../schemas.js';

const BotParams = Type.Object({ bot_id: Type.String() });

const AuditQuery = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100 })),
    cursor: Type.Optional(Type.String({ maxLength: 20 })),
    bot_id: Type.Optional(Type.String({ maxLength: 100 })),
    action: Type.Optional(Type.String({ enum: [...AUDIT_ACTIONS] })),
    since: Type.Optional(Type.String({ maxLength: 40 })),
    until: Type.Optional(Type.String({ maxLength: 40 })),
  },
  { additionalProperties: false },
);

const Link = Type.Object({
  url: Type.String(),
  status: Type.String({ enum: ['pending', 'indexed', 'failed'] }),
  error: Type.Union([Type.String(), Type.Null()]),
  passages: Type.Integer(),
  created_at: Timestamp,
  updated_at: Timestamp,
});
const LinksBody = Type.Object({ bot_id: Type.String(), links: Type.Array(Link) });
// The links are checked by the service (checkLinks) so that 400 names each offending index.
const LinksRequest = Type.Object({ links: Type.Unknown() }, { additionalProperties: false, description: '{"links": [1 to 1000 absolute http(s) URLs, each at most 2048 characters]}' });

// A body within the links' own bounds (1000 URLs of 2048 characters, each at most 3 bytes in
// UTF-8, plus JSON punctuation and spacing) is always read, so that it is answered by those
// bounds (400) and never 413 by the general body limit.
const LINKS_BODY_BYTES = MAX_LINKS_PER_REQUEST * (MAX_LINK_LENGTH * 3 + 16) + 1024;

const PageQuery = Type.Object(
  { limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100 })), cursor: Type.Optional(Type.String({ maxLength: 400 })) },
  { additionalProperties: false },
);

function nextLink(path: string, limit: number, cursor: string | null, extra: Record<string, string> = {}): string | null {
  if (!cursor) return null;
  const query = new URLSearchParams({ ...extra, limit: String(limit), cursor });
  return `<${path}?${query.toString()}>; rel="next"`;
}

export function knowledgeBaseRoutes(
  app: FastifyInstance,
  deps: { storage: Storage; access: AccessHook; config: Pick<Config, 'bodyLimitBytes' | 'kbMaxPendingLinksPerBot'>; onLinksQueued?: () => void },
): void {
  const { storage, access } = deps;
  const linksBodyLimit = Math.max(deps.config.bodyLimitBytes, LINKS_BODY_BYTES);
  const path = '/backend/knowledgebase/b/:bot_id';

  app.post(
    path,
    {
      onRequest: access({ scope: 'knowledgebase:write', botParam: 'bot_id' }),
      bodyLimit: linksBodyLimit,
      schema: {
        summary: "Add links to the bot's knowledge base (queued for ingestion; a link already there is refreshed)",
        tags: ['knowledge base'],
        params: BotParams,
        body: LinksRequest,
        response: {
          202: LinksBody,
          ...errorResponses('invalid_json', 'unauthorized', 'forbidden', 'copilot_not_found', 'payload_too_large', 'unsupported_media_type', 'quota_exceeded'),
        },
      },
    },
    async (request, reply) => {
      const links = knowledgeBase.requireLinks(request.body);
      const result = await knowledgeBase.addLinks(
        storage,
        (request.params as { bot_id: string }).bot_id,
        links,
        { maxPendingLinks: deps.config.kbMaxPendingLinksPerBot },
        request.principal,
      );
      deps.onLinksQueued?.();
      reply.code(202);
      return result;
    },
  );

  app.get(
    path,
    {
      onRequest: access({ scope: 'knowledgebase:read', botParam: 'bot_id' }),
      schema: {
        summary: 'The links of a knowledge base with their ingestion status (oldest first, paged with a Link header)',
        tags: ['knowledge base'],
        params: BotParams,
        querystring: PageQuery,
        response: { 200: LinksBody, ...errorResponses('invalid_cursor', 'unauthorized', 'forbidden', 'knowledge_base_not_found') },
      },
    },
    async (request, reply) => {
      const { bot_id: botId } = request.params as { bot_id: string };
      const { limit = 100, cursor } = request.query as { limit?: number; cursor?: string };
      const page = await knowledgeBase.listLinks(storage, botId, { limit, cursor });
      const link = nextLink(`/backend/knowledgebase/b/${encodeURIComponent(page.body.bot_id)}`, limit, page.nextCursor);
      if (link) reply.header('link', link);
      return page.body;
    },
  );

  app.get(
    `${path}/search`,
    {
      onRequest: access({ scope: 'knowledgebase:read', botParam: 'bot_id' }),
      schema: {
        summary: "Full-text search of the knowledge base's passages, best first",
        tags: ['knowledge base'],
        params: BotParams,
        querystring: Type.Object(
          { q: Type.String({ maxLength: 1000 }), limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 10 })) },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object({
            bot_id: Type.String(),
            query: Type.String(),
            results: Type.Array(Type.Object({ url: Type.String(), passage: Type.Integer(), content: Type.String(), score: Type.Number() })),
          }),
          ...errorResponses('unauthorized', 'forbidden', 'knowledge_base_not_found'),
        },
      },
    },
    async (request) => {
      const { q, limit = 10 } = request.query as { q: string; limit?: number };
      return knowledgeBase.searchKnowledgeBase(storage, (request.params as { bot_id: string }).bot_id, q, limit);
    },
  );

  app.delete(
    path,
    {
      onRequest: access({ scope: 'knowledgebase:delete', botParam: 'bot_id' }),
      bodyLimit: linksBodyLimit,
      schema: {
        summary: 'Delete links and their passages from the knowledge base (the knowledge base goes with its last link)',
        description: 'Checks in this order: 401, 403, 400, 404, then 200. Cannot be undone; every deletion is written to the audit log.',
        tags: ['knowledge base'],
        params: BotParams,
        body: LinksRequest,
        response: {
          200: Type.Object({ message: Type.String(), deleted_links: Type.Array(Type.String()), not_found_links: Type.Array(Type.String()) }),
          ...errorResponses('invalid_json', 'unauthorized', 'forbidden', 'knowledge_base_not_found', 'payload_too_large', 'unsupported_media_type'),
        },
      },
    },
    async (request) => {
      const links = knowledgeBase.requireLinks(request.body);
      return knowledgeBase.deleteLinks(storage, (request.params as { bot_id: string }).bot_id, links, request.principal);
    },
  );

  app.get(
    '/backend/api/audit',
    {
      onRequest: access({ scope: 'admin' }),
      schema: {
        summary: 'The audit log of sensitive actions, newest first (paged with a Link header)',
        description:
          `Actions: ${AUDIT_ACTIONS.join(', ')}. Filters: bot_id, action, since (inclusive) and until (exclusive), ISO 8601 date-times. ` +
          "A key limited to bots reads only its bots' entries.",
        tags: ['audit'],
        querystring: AuditQuery,
        response: {
          200: Type.Array(
            Type.Object({
              id: Type.Integer(),
              at: Timestamp,
              actor_key_id: Type.Union([Type.String(), Type.Null()]),
              action: Type.String(),
              bot_id: Type.Union([Type.String(), Type.Null()]),
              details: Type.Unknown(),
            }),
          ),
          ...errorResponses('invalid_cursor', 'unauthorized', 'forbidden'),
        },
      },
    },
    async (request, reply) => {
      const { limit = 100, cursor, bot_id: botId, action, since, until } = request.query as {
        limit?: number;
        cursor?: string;
        bot_id?: string;
        action?: string;
        since?: string;
        until?: string;
      };
      const page = await listAudit(storage, { limit, cursor, botId, action, since, until }, request.principal);
      const filters = Object.fromEntries(Object.entries({ bot_id: botId, action, since, until }).filter((e): e is [string, string] => e[1] !== undefined));
      const link = nextLink('/backend/api/audit', limit, page.nextCursor, filters);
      if (link) reply.header('link', link);
      return page.items;
    },
  );
}
