import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { Registry } from 'prom-client';
import { AppError } from '../../errors.js';
import { isDatabaseReachable, type Storage } from '../../storage/database.js';
import { errorResponses } from '../schemas.js';

const Status = Type.Object({ status: Type.String() });

export function systemRoutes(app: FastifyInstance, deps: { storage: Storage; metrics: Registry }): void {
  // security: [] marks these as open in the published document (the default is the bearer key).
  app.get('/healthz', { schema: { summary: 'The process is up', tags: ['operations'], security: [], response: { 200: Status } } }, async () => ({ status: 'ok' }));

  app.get(
    '/readyz',
    { schema: { summary: 'The database is reachable', tags: ['operations'], security: [], response: { 200: Status, ...errorResponses('service_unavailable') } } },
    async () => {
      if (await isDatabaseReachable(deps.storage)) return { status: 'ready' };
      throw new AppError('service_unavailable', 'The database is not reachable.');
    },
  );

  app.get('/metrics', { schema: { summary: 'Prometheus metrics (text format)', tags: ['operations'], security: [] } }, async (_request, reply) => {
    reply.type(deps.metrics.contentType);
    return deps.metrics.metrics();
  });

  app.get('/backend/openapi.json', { schema: { summary: "This service's OpenAPI 3.1 document", tags: ['operations'], security: [] } }, async () => app.swagger());
}
