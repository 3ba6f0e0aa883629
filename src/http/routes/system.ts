import { createHash, timingSafeEqual } from 'node:crypto';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { FastifyInstance } from 'fastify';
import type { OpenAPI } from 'openapi-types';
import type { Registry } from 'prom-client';
import { AppError } from '../../errors.js';
import { authorizationHeader } from '../auth.js';
import { databaseNotReady, type Storage } from '../../storage/database.js';
import { errorResponses, jsonAnswer } from '../schemas.js';

const Status = Type.Object({ status: Type.String() });
// The type @fastify/swagger gives its document (its declarations import openapi-types).
const OpenApiDocument = Type.Unsafe<OpenAPI.Document>({ type: 'object', additionalProperties: true, description: 'An OpenAPI 3.1 document' });

const sha256 = (text: string): Buffer => createHash('sha256').update(text).digest();

/** METRICS_TOKEN's check: `Authorization: Bearer <token>`, compared in constant time (401 otherwise). */
function metricsAccess(token: string | null): ((authorization: string | undefined) => void) | null {
  if (token === null) return null;
  const expected = sha256(token);
  return (authorization) => {
    const presented = /^Bearer[ ]+(\S+)\s*$/i.exec(authorization ?? '')?.[1];
    if (presented === undefined || !timingSafeEqual(sha256(presented), expected)) {
      throw new AppError('unauthorized', '/metrics needs "Authorization: Bearer <METRICS_TOKEN>" on this service.');
    }
  };
}

export function systemRoutes(instance: FastifyInstance, deps: { storage: Storage; metrics: Registry; metricsToken?: string | null }): void {
  const app = instance.withTypeProvider<TypeBoxTypeProvider>();
  const checkMetricsToken = metricsAccess(deps.metricsToken ?? null);
  // security: [] marks these as open in the published document (the default is the bearer key).
  app.get(
    '/healthz',
    {
      schema: {
        operationId: 'health',
        summary: 'The process is up',
        description: 'Answers as long as the process runs; says nothing of the database (see /readyz).',
        tags: ['operations'],
        security: [],
        response: { 200: jsonAnswer('Up', Status), ...errorResponses() },
      },
    },
    async () => ({ status: 'ok' }),
  );

  app.get(
    '/readyz',
    {
      schema: {
        operationId: 'ready',
        summary: 'The database is reachable',
        description: 'For a load balancer: 503 while the database cannot be reached.',
        tags: ['operations'],
        security: [],
        response: { 200: jsonAnswer('Ready', Status), ...errorResponses('service_unavailable') },
      },
    },
    async () => {
      const notReady = await databaseNotReady(deps.storage);
      if (notReady === null) return { status: 'ready' };
      throw new AppError('service_unavailable', notReady);
    },
  );

  app.get(
    '/metrics',
    {
      schema: {
        operationId: 'metrics',
        summary: 'Prometheus metrics',
        description:
          'HTTP, task threads, jobs, failures, caches and the database pool, in the Prometheus text format. Open unless the operator sets METRICS_TOKEN: then it needs `Authorization: Bearer <METRICS_TOKEN>` (not an API key).',
        tags: ['operations'],
        security: [],
        response: { 200: { description: 'The metrics', content: { 'text/plain': { schema: Type.String() } } }, ...errorResponses('unauthorized') },
      },
    },
    async (request, reply) => {
      checkMetricsToken?.(authorizationHeader(request));
      reply.type(deps.metrics.contentType);
      return deps.metrics.metrics();
    },
  );

  app.get(
    '/backend/openapi.json',
    {
      schema: {
        operationId: 'getOpenApiDocument',
        summary: "This service's OpenAPI 3.1 document",
        description: 'Generated from the same schemas that validate requests and serialise answers.',
        tags: ['operations'],
        security: [],
        response: { 200: jsonAnswer('The document', OpenApiDocument), ...errorResponses() },
      },
    },
    async () => app.swagger(),
  );
}
