import type { FastifyInstance } from 'fastify';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { BodyBudget } from './body-admission.js';

/** Adds the app's HTTP metrics to the services' registry (createServices), which `/metrics` answers. */
export function registerMetrics(app: FastifyInstance, registry: Registry, bodies: BodyBudget): Registry {
  new Gauge({
    name: 'request_bodies',
    help: "Request bodies being received: the bytes reserved for them and their senders, and since the start those refused by a sender's bound (429) and by the instance's (503)",
    labelNames: ['measure'],
    registers: [registry],
    collect() {
      const { bytes, senders, refusedSender, refusedInstance } = bodies.stats();
      for (const [measure, n] of Object.entries({ bytes, senders, refused_sender: refusedSender, refused_instance: refusedInstance })) this.set({ measure }, n);
    },
  });
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
  app.addHook('onResponse', async (request, reply) => {
    // The route template, never the raw URL: label values stay bounded.
    const route = request.routeOptions.url ?? 'unmatched';
    requests.inc({ method: request.method, route, status: String(reply.statusCode) });
    duration.observe({ method: request.method, route }, reply.elapsedTime / 1000);
  });
  return registry;
}
