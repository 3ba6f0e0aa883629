import type { FastifyInstance } from 'fastify';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { taskThreads } from '../threads/task-threads.js';

/** One registry per app instance (tests build many apps in one process). */
export function registerMetrics(app: FastifyInstance): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const requests = new Counter({
    name: 'http_requests_total',
    help: 'HTTP requests answered, by method, route and status code',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Time to answer HTTP requests, by method and route',
    labelNames: ['method', 'route'] as const,
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  new Gauge({
    name: 'task_threads',
    help: 'Task threads (validation, page extraction) by state: busy, idle, and tasks queued for one',
    labelNames: ['state'] as const,
    registers: [registry],
    collect() {
      const { threads, busy, queued } = taskThreads.stats();
      this.set({ state: 'busy' }, busy);
      this.set({ state: 'idle' }, threads - busy);
      this.set({ state: 'queued' }, queued);
    },
  });
  app.addHook('onResponse', async (request, reply) => {
    // The route template, never the raw URL: label values stay bounded.
    const route = request.routeOptions.url ?? 'unmatched';
    requests.inc({ method: request.method, route, status: String(reply.statusCode) });
    duration.observe({ method: request.method, route }, reply.elapsedTime / 1000);
  });
  return registry;
}
