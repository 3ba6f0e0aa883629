import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../../config.js';
import { Crawl, CrawlRequest, Crawls } from '../../domain/crawl-wire.js';
import * as crawls from '../../domain/knowledgebase/crawl.js';
import type { Storage } from '../../storage/database.js';
import type { AccessHook } from '../auth.js';
import { BotParams, errorResponses, jsonAnswer, LINK_HEADER, nextLink, PageQuery, ref } from '../schemas.js';

const CrawlParams = Type.Object({ bot_id: Type.String({ description: 'The bot (copilot) id' }), crawl_id: Type.String({ description: 'The crawl id' }) });

/** Crawls of a knowledge base (issue 16 §2; docs/crawling.md). */
export function crawlRoutes(
  instance: FastifyInstance,
  deps: { storage: Storage; access: AccessHook; config: Pick<Config, 'fetchAllowNetworks'>; onCrawlQueued?: () => void },
): void {
  const app = instance.withTypeProvider<TypeBoxTypeProvider>();
  const { storage, access } = deps;
  const path = '/backend/knowledgebase/b/:bot_id';

  app.post(
    `${path}/crawl`,
    {
      onRequest: access({ scope: 'knowledgebase:write', botParam: 'bot_id' }),
      schema: {
        operationId: 'startCrawl',
        summary: 'Crawl a site or a sitemap into the knowledge base',
        description:
          'From `url`, links are followed within its origin and path prefix up to `max_depth`; from `sitemap`, its URLs are fetched. At most `max_pages` pages; robots.txt and canonical links are honoured. Each page becomes a link of the knowledge base. Poll GET …/crawls/{crawl_id}.',
        tags: ['knowledge base'],
        params: BotParams,
        body: ref(CrawlRequest),
        response: {
          202: jsonAnswer('The crawl, queued', ref(Crawl)),
          ...errorResponses(
            'invalid_json',
            'unauthorized',
            'forbidden',
            'address_not_allowed',
            'copilot_not_found',
            'payload_too_large',
            'unsupported_media_type',
            'quota_exceeded',
          ),
        },
      },
    },
    async (request, reply) => {
      const checked = crawls.checkCrawlRequest(request.body, deps.config.fetchAllowNetworks);
      const crawl = await crawls.createCrawl(storage.db, request.params.bot_id, checked, request.principal);
      deps.onCrawlQueued?.();
      reply.code(202);
      return crawl;
    },
  );

  app.get(
    `${path}/crawls`,
    {
      onRequest: access({ scope: 'knowledgebase:read', botParam: 'bot_id' }),
      schema: {
        operationId: 'listCrawls',
        summary: "The knowledge base's crawls, newest first",
        description: 'When more remain, the `Link` header carries the next page.',
        tags: ['knowledge base'],
        params: BotParams,
        querystring: PageQuery,
        response: {
          200: jsonAnswer('The crawls of this page', ref(Crawls), LINK_HEADER),
          ...errorResponses('invalid_cursor', 'unauthorized', 'forbidden', 'knowledge_base_not_found'),
        },
      },
    },
    async (request, reply) => {
      const { limit, cursor } = request.query;
      const page = await crawls.listCrawls(storage.readDb, request.params.bot_id, { limit, cursor });
      const link = nextLink(`/backend/knowledgebase/b/${encodeURIComponent(page.body.bot_id)}/crawls`, limit, page.nextCursor);
      if (link) reply.header('link', link);
      return page.body;
    },
  );

  app.get(
    `${path}/crawls/:crawl_id`,
    {
      onRequest: access({ scope: 'knowledgebase:read', botParam: 'bot_id' }),
      schema: {
        operationId: 'getCrawl',
        summary: "A crawl's progress",
        description: 'Pages discovered, fetched, indexed, failed and skipped, and its state.',
        tags: ['knowledge base'],
        params: CrawlParams,
        response: {
          200: jsonAnswer('The crawl', ref(Crawl)),
          ...errorResponses('unauthorized', 'forbidden', 'crawl_not_found'),
        },
      },
    },
    async (request) => crawls.getCrawl(storage.readDb, request.params.bot_id, request.params.crawl_id),
  );

  app.delete(
    `${path}/crawls/:crawl_id`,
    {
      onRequest: access({ scope: 'knowledgebase:write', botParam: 'bot_id' }),
      schema: {
        operationId: 'cancelCrawl',
        summary: 'Cancel a crawl',
        description:
          'No new page of it is fetched; its pages not fetched yet leave the queue. Pages already indexed stay in the knowledge base. A finished crawl is answered as it is. Written to the audit log.',
        tags: ['knowledge base'],
        params: CrawlParams,
        response: {
          200: jsonAnswer('The crawl, cancelled (or as it finished)', ref(Crawl)),
          ...errorResponses('unauthorized', 'forbidden', 'crawl_not_found'),
        },
      },
    },
    async (request) => crawls.cancelCrawl(storage, request.params.bot_id, request.params.crawl_id, request.principal),
  );
}
