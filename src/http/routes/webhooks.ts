import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { FastifyInstance } from 'fastify';
import * as webhooks from '../../domain/webhooks/webhook.service.js';
import { WebhookDelivery } from '../../domain/wire.js';
import type { Storage } from '../../storage/database.js';
import { botLimit, type AccessHook } from '../auth.js';
import { errorResponses, jsonAnswer, LINK_HEADER, nextLink, PageQuery, ref } from '../schemas.js';

/** The webhook's deliveries (issue 16 §1): domain in webhooks/webhook.service.ts, storage in webhook.repository.ts. */
export function webhookRoutes(instance: FastifyInstance, deps: { storage: Storage; access: AccessHook }): void {
  const app = instance.withTypeProvider<TypeBoxTypeProvider>();
  app.get(
    '/backend/api/webhooks/deliveries',
    {
      onRequest: deps.access({ scope: 'admin' }),
      schema: {
        operationId: 'listWebhookDeliveries',
        summary: 'Deliveries to WEBHOOK_URL, newest first',
        description:
          "Each event POSTed (or to be) to WEBHOOK_URL: state, attempts, last answer. A key limited to some bots sees their deliveries only, each `url` as its origin and `/…` (a hook URL's path is often its secret). The `Link` header carries the next page.",
        tags: ['operations'],
        querystring: PageQuery,
        response: {
          200: jsonAnswer('The deliveries of this page', Type.Array(ref(WebhookDelivery)), LINK_HEADER),
          ...errorResponses('invalid_cursor', 'unauthorized', 'forbidden'),
        },
      },
    },
    async (request, reply) => {
      const { limit, cursor } = request.query;
      const page = await webhooks.listDeliveries(deps.storage.readDb, { limit, cursor, copilots: botLimit(request.principal) });
      const link = nextLink('/backend/api/webhooks/deliveries', limit, page.nextCursor);
      if (link) reply.header('link', link);
      return page.items;
    },
  );
}
