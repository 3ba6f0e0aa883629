import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { AppError } from '../../errors.js';
import { errorResponses } from '../schemas.js';

/**
 * The API reference at `/docs`: Swagger UI (swagger-ui-dist, a dev dependency) rendering
 * this service's own `/backend/openapi.json`, served by the service itself, so the page
 * works with no network. `npm run build` copies the two files it needs into dist/api-docs/
 * (scripts/copy-api-docs.mjs); without that copy (the sources under test) they are read
 * from node_modules.
 */
const RENDERER_FILES = ['swagger-ui-bundle.js', 'swagger-ui.css'] as const;

export const API_DOCS_ROOT = fileURLToPath(new URL('../../../dist/api-docs/', import.meta.url));

/** Where the renderer's files are: the build's copy, else the installed dev dependency, else null. */
export function findRenderer(): string | null {
  const complete = (dir: string) => RENDERER_FILES.every((file) => existsSync(path.join(dir, file)));
  if (complete(API_DOCS_ROOT)) return API_DOCS_ROOT;
  try {
    const installed = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
    return complete(installed) ? installed : null;
  } catch {
    return null;
  }
}

/**
 * Starts Swagger UI on the page's `#docs` element. `validatorUrl: null`: by default Swagger UI
 * shows a badge loaded from validator.swagger.io, which would send the document's address
 * away. `queryConfigEnabled` stays off, so `?url=` cannot point the page at another document.
 * Swagger UI's servers list is a <select> with no name (its label holds only the select):
 * the script names it whenever Swagger UI renders it.
 */
const INIT_SCRIPT = `'use strict';
(function () {
  var target = document.getElementById('docs');
  window.ui = SwaggerUIBundle({
    url: new URL(target.getAttribute('data-document'), document.baseURI).href,
    domNode: target,
    validatorUrl: null,
    queryConfigEnabled: false,
    deepLinking: true,
    displayOperationId: true,
    filter: true,
    docExpansion: 'list',
    defaultModelsExpandDepth: 0,
    persistAuthorization: false,
    tryItOutEnabled: false,
  });
  var name = function () {
    var select = target.querySelector('.servers select:not([aria-label])');
    if (select) select.setAttribute('aria-label', 'Servers');
  };
  new MutationObserver(name).observe(target, { childList: true, subtree: true });
  name();
})();
`;

/**
 * A few lines of our own: the page's heading and a link back to the dashboard (wrapping on a
 * narrow screen), and Swagger UI's light colours where white text on them read below 4.5:1
 * (method badges, the Authorize button, the version badges). Its dark mode keeps its own.
 */
const PAGE_STYLE = `body { margin: 0; font-family: system-ui, sans-serif; }
.docs-top { display: flex; flex-wrap: wrap; gap: 0.25rem 1rem; align-items: baseline; padding: 0.75rem 1.25rem; border-bottom: 1px solid #d8dde3; }
.docs-top h1 { margin: 0; font-size: 1.1rem; }
.docs-top a { color: #1f5fbf; }
.swagger-ui .opblock .opblock-summary-method { color: #fff; text-shadow: none; }
.swagger-ui .opblock.opblock-get .opblock-summary-method { background: #1565b8; }
.swagger-ui .opblock.opblock-post .opblock-summary-method { background: #127a4f; }
.swagger-ui .opblock.opblock-put .opblock-summary-method { background: #9a5200; }
.swagger-ui .opblock.opblock-delete .opblock-summary-method { background: #c1262d; }
.swagger-ui .opblock.opblock-patch .opblock-summary-method { background: #0d7466; }
.swagger-ui .opblock.opblock-head .opblock-summary-method { background: #7a0fd6; }
.swagger-ui .opblock.opblock-query .opblock-summary-method { background: #8a3580; }
.swagger-ui .opblock.opblock-custom .opblock-summary-method { background: #6e5f16; }
.swagger-ui .btn.authorize { border-color: #127a4f; color: #127a4f; }
.swagger-ui .btn.authorize svg { color: #127a4f; fill: #127a4f; }
.swagger-ui .info .title small { background: #5e6570; }
.swagger-ui .info .title small.version-stamp { background: #3f6d00; }
`;

interface Asset {
  name: string;
  type: string;
  body: Buffer;
  gzip: Buffer;
}

const gzipped = promisify(gzip);

/** Named by content; compressed off the event loop (the bundle takes a tenth of a second). */
async function asset(file: string, type: string, body: Buffer): Promise<Asset> {
  const hash = createHash('sha256').update(body).digest('hex').slice(0, 12);
  const dot = file.lastIndexOf('.');
  return { name: `${file.slice(0, dot)}.${hash}${file.slice(dot)}`, type, body, gzip: await gzipped(body) };
}

/** The renderer's file, without its source-map comment (the map is not shipped; a browser would ask for it). */
const vendorFile = async (dir: string, file: string): Promise<Buffer> =>
  Buffer.from((await readFile(path.join(dir, file), 'utf8')).replace(/\n?\/[*/]# sourceMappingURL=[^\n]*\s*$/, '\n'));

interface Assets {
  bundle: Asset;
  css: Asset;
  init: Asset;
  style: Asset;
}

async function loadAssets(dir: string): Promise<Assets> {
  const [bundle, css, init, style] = await Promise.all([
    asset('swagger-ui-bundle.js', 'text/javascript; charset=utf-8', await vendorFile(dir, 'swagger-ui-bundle.js')),
    asset('swagger-ui.css', 'text/css; charset=utf-8', await vendorFile(dir, 'swagger-ui.css')),
    asset('init.js', 'text/javascript; charset=utf-8', Buffer.from(INIT_SCRIPT)),
    asset('page.css', 'text/css; charset=utf-8', Buffer.from(PAGE_STYLE)),
  ]);
  return { bundle, css, init, style };
}

/**
 * The page's policy: the dashboard's, with one addition: Swagger UI's stylesheet draws its
 * icons as `data:` images (img-src data:). Scripts and styles come from this service only:
 * no inline script or style, no 'unsafe-eval' (test/e2e/api-docs.test.ts reports any
 * violation). "Try it out" calls this same service (connect-src 'self').
 */
export const DOCS_SECURITY_HEADERS = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
} as const;

const IMMUTABLE = 'public, max-age=31536000, immutable';

function page(assets: Assets): string {
  // Relative URLs, as in the dashboard: a proxy may mount the service under a sub-path.
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>API reference · Copilot Management Service</title>
<link rel="icon" href="favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="docs/assets/${assets.css.name}">
<link rel="stylesheet" href="docs/assets/${assets.style.name}">
</head>
<body>
<header class="docs-top"><h1>Copilot Management Service API</h1><a href="./">Dashboard</a><a href="backend/openapi.json">openapi.json</a></header>
<div id="docs" data-document="backend/openapi.json"><noscript>This page needs JavaScript. The API's OpenAPI document is at <a href="backend/openapi.json">backend/openapi.json</a>.</noscript></div>
<script src="docs/assets/${assets.bundle.name}"></script>
<script src="docs/assets/${assets.init.name}"></script>
</body>
</html>
`;
}

const NOT_BUILT =
  'This install has no API reference: its renderer (swagger-ui-dist) is copied into dist/api-docs/ by `npm run build`. ' +
  "The API's OpenAPI document is at /backend/openapi.json.";

const acceptsGzip = (request: FastifyRequest): boolean => /\bgzip\b/.test(String(request.headers['accept-encoding'] ?? ''));

function send(request: FastifyRequest, reply: FastifyReply, file: Asset): FastifyReply {
  reply.type(file.type).header('cache-control', IMMUTABLE).header('x-content-type-options', 'nosniff').header('vary', 'accept-encoding');
  if (!acceptsGzip(request)) return reply.send(file.body);
  return reply.header('content-encoding', 'gzip').send(file.gzip);
}

/**
 * `GET /docs` and its assets (`/docs/assets/<name>.<hash>.<ext>`, cached for good). The
 * renderer's files are read on the first request, not at start: from `rendererDir` when
 * given (null: none installed), else from where findRenderer() finds them.
 */
export function apiDocsRoutes(instance: FastifyInstance, options: { rendererDir?: string | null } = {}): void {
  const app = instance.withTypeProvider<TypeBoxTypeProvider>();
  let loading: Promise<{ html: string; byName: Map<string, Asset> } | null> | null = null;
  const load = () => {
    loading ??= (async () => {
      const dir = options.rendererDir === undefined ? findRenderer() : options.rendererDir;
      if (dir === null) {
        app.log.warn('The API reference at /docs has no renderer (swagger-ui-dist): build with `npm run build`');
        return null;
      }
      const assets = await loadAssets(dir);
      return { html: page(assets), byName: new Map(Object.values(assets).map((a) => [a.name, a])) };
    })();
    // A failed read (a file removed under a running service) is tried again on the next request.
    loading.catch(() => {
      loading = null;
    });
    return loading;
  };

  app.get(
    '/docs',
    {
      schema: {
        operationId: 'apiReference',
        summary: 'This API as a browsable reference page',
        description:
          'An HTML page (Swagger UI, served by this service: no network needed) that renders /backend/openapi.json. 404 on an install built without it.',
        tags: ['operations'],
        security: [],
        response: {
          200: { description: 'The page', content: { 'text/html': { schema: Type.String() } } },
          ...errorResponses('not_found'),
        },
      },
    },
    async (_request, reply) => {
      const ready = await load();
      if (ready === null) throw new AppError('not_found', NOT_BUILT);
      return reply.type('text/html; charset=utf-8').header('cache-control', 'no-cache').headers(DOCS_SECURITY_HEADERS).send(ready.html);
    },
  );

  // `/docs/` would resolve the page's relative URLs one level down: send it to `/docs`
  // (relative, so that a proxy's sub-path is kept).
  app.get('/docs/', { schema: { hide: true } }, async (_request, reply) => reply.redirect('../docs', 301));

  app.get('/docs/assets/:file', { schema: { hide: true, params: Type.Object({ file: Type.String() }) } }, async (request, reply) => {
    const file = (await load())?.byName.get(request.params.file);
    if (file === undefined) throw new AppError('not_found', `No file ${request.params.file.slice(0, 200)} in the API reference.`);
    return send(request, reply, file);
  });
}
