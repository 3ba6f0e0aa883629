import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../../config.js';
import { listAudit } from '../../domain/audit.js';
import * as knowledgeBase from '../../domain/knowledgebase/knowledge-base.service.js';
import { MAX_LINK_LENGTH, MAX_LINKS_PER_REQUEST } from '../../domain/knowledgebase/links.js';
import { AuditEntry, KnowledgeBaseLinks, LinksDeleted, LinksRefreshed, LinksRequest, SearchResults } from '../../domain/wire.js';
import { SCAN_WAITING_PER_TENANT, type Storage } from '../../storage/database.js';
import type { TaskThreads } from '../../threads/task-threads.js';
import type { AccessHook } from '../auth.js';
import { AuditQuery, BotParams, errorResponses, jsonAnswer, LINK_HEADER, nextLink, PageQuery, ref, SearchQuery } from '../schemas.js';

// A body within the links' own bounds (1000 URLs of 2048 characters, each at most 3 bytes in
// UTF-8, plus JSON punctuation and spacing) is always read, so that it is answered by those
// bounds (400) and never 413 by the general body limit.
const LINKS_BODY_BYTES = MAX_LINKS_PER_REQUEST * (MAX_LINK_LENGTH * 3 + 16) + 1024;

export function knowledgeBaseRoutes(
  instance: FastifyInstance,
  deps: {
    storage: Storage;
    access: AccessHook;
    config: Pick<Config, 'bodyLimitBytes' | 'kbMaxPendingLinksPerBot'>;
    onLinksQueued?: () => void;
    /** Where searches are scored (the task threads). */
    scorer: Pick<TaskThreads, 'scoreOnThread'>;
  },
): void {
  const app = instance.withTypeProvider<TypeBoxTypeProvider>();
  const { storage, access } = deps;
  const linksBodyLimit = Math.max(deps.config.bodyLimitBytes, LINKS_BODY_BYTES);
  const path = '/backend/knowledgebase/b/:bot_id';
  // The links of a body are checked by the service (requireLinks), whose 400 names each
  // offending index; the schema's own verdict (attachValidation) is used only for what that
  // check does not cover (other keys in the body).
  const linksBody = { body: ref(LinksRequest) };
  const checkedLinks = (request: { body: unknown; validationError?: Error }): string[] => {
    const links = knowledgeBase.requireLinks(request.body);
    if (request.validationError) throw request.validationError;
    return links;
  };

  app.post(
    path,
    {
      onRequest: access({ scope: 'knowledgebase:write', botParam: 'bot_id' }),
      bodyLimit: linksBodyLimit,
      attachValidation: true,
      schema: {
        operationId: 'addLinks',
        summary: "Add links to the bot's knowledge base",
        description: 'The links are queued for ingestion; a link already there is refreshed. Written to the audit log.',
        tags: ['knowledge base'],
        params: BotParams,
        ...linksBody,
        response: {
          202: jsonAnswer('The links as queued', ref(KnowledgeBaseLinks)),
          ...errorResponses('invalid_json', 'unauthorized', 'forbidden', 'copilot_not_found', 'payload_too_large', 'unsupported_media_type', 'quota_exceeded'),
        },
      },
    },
    async (request, reply) => {
      const links = checkedLinks(request);
      const result = await knowledgeBase.addLinks(
        storage.db,
        request.params.bot_id,
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
        operationId: 'listLinks',
        summary: 'The links of a knowledge base with their ingestion status',
        description: 'Oldest first; when more remain, the `Link` header carries the next page.',
        tags: ['knowledge base'],
        params: BotParams,
        querystring: PageQuery,
        response: {
          200: jsonAnswer('The links of this page', ref(KnowledgeBaseLinks), LINK_HEADER),
          ...errorResponses('invalid_cursor', 'unauthorized', 'forbidden', 'knowledge_base_not_found'),
        },
      },
    },
    async (request, reply) => {
      const { limit, cursor } = request.query;
      const page = await knowledgeBase.listLinks(storage.readDb, request.params.bot_id, { limit, cursor });
      const link = nextLink(`/backend/knowledgebase/b/${encodeURIComponent(page.body.bot_id)}`, limit, page.nextCursor);
      if (link) reply.header('link', link);
      return page.body;
    },
  );

  app.post(
    `${path}/refresh`,
    {
      onRequest: access({ scope: 'knowledgebase:write', botParam: 'bot_id' }),
      schema: {
        operationId: 'refreshKnowledgeBase',
        summary: "Check the knowledge base's pages for changes now",
        description:
          'Each link is fetched again with a conditional GET through the ingestion queue: an unchanged page (304, or the same text) writes nothing; a changed one has its passages replaced in one transaction; a page gone (404/410) makes its link failed, its passages kept until the link is deleted.',
        tags: ['knowledge base'],
        params: BotParams,
        response: {
          202: jsonAnswer('How many links were queued', ref(LinksRefreshed)),
          ...errorResponses('unauthorized', 'forbidden', 'knowledge_base_not_found'),
        },
      },
    },
    async (request, reply) => {
      const result = await knowledgeBase.refreshLinks(storage.db, request.params.bot_id, request.principal);
      deps.onLinksQueued?.();
      reply.code(202);
      return result;
    },
  );

  app.get(
    `${path}/search`,
    {
      onRequest: access({ scope: 'knowledgebase:read', botParam: 'bot_id' }),
      schema: {
        operationId: 'searchKnowledgeBase',
        summary: "Full-text search of the knowledge base's passages",
        description: `Lexical search (bm25 over the knowledge base's own index, the same on SQLite and PostgreSQL), best passages first. Searches take turns shared fairly among knowledge bases: 429 when a knowledge base has ${SCAN_WAITING_PER_TENANT} waiting already, or when one runs past its time limit (SEARCH_TIMEOUT_MS).`,
        tags: ['knowledge base'],
        params: BotParams,
        querystring: SearchQuery,
        response: {
          200: jsonAnswer('The passages found', ref(SearchResults)),
          ...errorResponses('unauthorized', 'forbidden', 'knowledge_base_not_found', 'quota_exceeded'),
        },
      },
    },
    async (request) => knowledgeBase.searchKnowledgeBase(storage, deps.scorer, request.params.bot_id, request.query.q, request.query.limit),
  );

  app.delete(
    path,
    {
      onRequest: access({ scope: 'knowledgebase:delete', botParam: 'bot_id' }),
      bodyLimit: linksBodyLimit,
      attachValidation: true,
      schema: {
        operationId: 'deleteLinks',
        summary: 'Delete links and their passages from the knowledge base',
        description:
          'The knowledge base goes with its last link. Checks in this order: 401, 403, 400, 404, then 200. Cannot be undone; every deletion is written to the audit log.',
        tags: ['knowledge base'],
        params: BotParams,
        ...linksBody,
        response: {
          200: jsonAnswer('What was deleted', ref(LinksDeleted)),
          ...errorResponses('invalid_json', 'unauthorized', 'forbidden', 'knowledge_base_not_found', 'payload_too_large', 'unsupported_media_type'),
        },
      },
    },
    async (request) => knowledgeBase.deleteLinks(storage.db, storage.dialect, request.params.bot_id, checkedLinks(request), request.principal),
  );

  app.get(
    '/backend/api/audit',
    {
      onRequest: access({ scope: 'admin' }),
      schema: {
        operationId: 'listAudit',
        summary: 'The audit log of sensitive actions, newest first',
        description:
          'Filters: bot_id, action (key.create, copilot.update, …), since (inclusive) and until (exclusive). ' +
          "A key limited to bots reads only its bots' entries. When more remain, the `Link` header carries the next page.",
        tags: ['audit'],
        querystring: AuditQuery,
        response: {
          200: jsonAnswer('The entries of this page', Type.Array(ref(AuditEntry)), LINK_HEADER),
          ...errorResponses('invalid_cursor', 'unauthorized', 'forbidden', 'quota_exceeded'),
        },
      },
    },
    async (request, reply) => {
      const { limit, cursor, bot_id: botId, action, since, until } = request.query;
      const page = await listAudit(storage, { limit, cursor, botId, action, since, until }, request.principal);
      const filters = Object.fromEntries(Object.entries({ bot_id: botId, action, since, until }).filter((e): e is [string, string] => e[1] !== undefined));
      const link = nextLink('/backend/api/audit', limit, page.nextCursor, filters);
      if (link) reply.header('link', link);
      return page.items;
    },
  );
}
