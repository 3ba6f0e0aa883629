import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyReply } from 'fastify';

/**
 * The built dashboard (web/dist): this file sits three levels under the repository root
 * both as source (src/http/routes/) and compiled (dist/http/routes/).
 */
export const DASHBOARD_ROOT = fileURLToPath(new URL('../../../web/dist/', import.meta.url));

const IMMUTABLE = 'public, max-age=31536000, immutable';

/**
 * The page may talk only to this service; no inline script or style, no framing. The
 * API key lives in the tab's session storage, so script injection is what to guard against.
 */
const PAGE_SECURITY_HEADERS = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; font-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
} as const;

const NOT_BUILT =
  'The dashboard is not built, so there is nothing to show here yet.\n' +
  'Build it with `npm run build` (or `npm install`, which runs the build) and restart the service.\n' +
  'The HTTP API works without it: see /backend/openapi.json.\n';

function setHeaders(root: string, reply: FastifyReply, file: string): void {
  reply.header('x-content-type-options', 'nosniff');
  // Vite names everything under assets/ by its content hash: cache forever. Anything else
  // (index.html, favicon) is revalidated on every load so a new build is seen at once.
  const relative = path.relative(root, file).split(path.sep).join('/');
  reply.header('cache-control', relative.startsWith('assets/') ? IMMUTABLE : 'no-cache');
  if (relative.endsWith('.html')) reply.headers(PAGE_SECURITY_HEADERS);
}

/**
 * Serves the dashboard at `/` from `root` (the Vite build). Only the files that exist at
 * start are routed (no wildcard), so every other path, `/backend/…` included, still gets
 * the API's JSON 404. Without a build, `/` explains how to make one.
 */
export async function dashboardRoutes(instance: FastifyInstance, options: { root: string }): Promise<void> {
  const app = instance.withTypeProvider<TypeBoxTypeProvider>();
  const root = path.resolve(options.root);
  if (!existsSync(path.join(root, 'index.html'))) {
    app.log.warn({ root }, 'The dashboard is not built (no index.html); `/` explains how to build it');
    app.get('/', { schema: { hide: true } }, async (_request, reply) =>
      reply.code(503).type('text/plain; charset=utf-8').header('cache-control', 'no-store').send(NOT_BUILT),
    );
    return;
  }
  await app.register(fastifyStatic, {
    root,
    prefix: '/',
    wildcard: false,
    index: ['index.html'],
    decorateReply: false,
    cacheControl: false,
    dotfiles: 'ignore',
    serveDotFiles: false,
    // Whole files only: a Range header is ignored (a few small files; an unsatisfiable range was a 500).
    acceptRanges: false,
    // The build writes .br and .gz beside each script and style (scripts/compress-web.mjs).
    preCompressed: true,
    schemaHide: true,
    setHeaders: (reply, file) => setHeaders(root, reply, file),
  });
}
