/**
 * The API reference at /docs (issue 17 §2): the page, its headers and its assets, as the
 * service answers them; test/e2e/api-docs.test.ts renders it in Chromium.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerErrorHandling } from '../../src/http/errors.js';
import { apiDocsRoutes, findRenderer } from '../../src/http/routes/api-docs.js';
import { COMPONENTS } from '../../src/http/schemas.js';
import { buildTestApp, type TestApp } from '../support/app.js';
import { DIALECTS } from '../support/databases.js';
import { call, expectError } from '../support/http.js';

/** The policy's directives: name → sources. */
function directives(policy: string): Map<string, string[]> {
  return new Map(
    policy
      .split(';')
      .map((d) => d.trim().split(/\s+/))
      .filter((d) => d[0])
      .map(([name, ...sources]) => [name!, sources]),
  );
}

const assetsOf = (html: string): string[] => [...html.matchAll(/(?:src|href)="(docs\/assets\/[^"]+)"/g)].map((m) => `/${m[1]}`);

for (const dialect of DIALECTS) {
  describe(`GET /docs (${dialect})`, () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await buildTestApp(dialect);
    });
    afterAll(async () => t.close());

    it('answers the page without a key, under a policy that allows scripts and styles from the service only', async () => {
      const res = await call(t, 'GET', '/docs', { key: null });
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(res.headers['cache-control']).toBe('no-cache');
      expect(res.headers['x-content-type-options']).toBe('nosniff');
      expect(res.headers['x-frame-options']).toBe('DENY');
      expect(res.headers['referrer-policy']).toBe('no-referrer');
      const policy = directives(String(res.headers['content-security-policy']));
      expect(policy.get('default-src')).toEqual(["'none'"]);
      expect(policy.get('script-src')).toEqual(["'self'"]);
      expect(policy.get('style-src')).toEqual(["'self'"]);
      expect(policy.get('connect-src')).toEqual(["'self'"]);
      expect(policy.get('img-src')).toEqual(["'self'", 'data:']);
      expect(policy.get('frame-ancestors')).toEqual(["'none'"]);
      expect(String(res.headers['content-security-policy'])).not.toMatch(/unsafe|\*|https?:/);
      // No inline script or style in the page itself: only files of the service, by relative URLs.
      expect(res.body).not.toMatch(/<script>|<script [^>]*>[^<]|<style|\sstyle=|\son\w+=/);
      expect(res.body).toContain('data-document="backend/openapi.json"');
      expect(assetsOf(res.body)).toHaveLength(4);
      expect((await call(t, 'HEAD', '/docs', { key: null })).statusCode).toBe(200);
    });

    it('serves its assets by content hash, cached for good, gzipped when the client takes it', async () => {
      const html = (await call(t, 'GET', '/docs', { key: null })).body;
      const renderer = findRenderer();
      expect(renderer).not.toBeNull();
      for (const url of assetsOf(html)) {
        const res = await call(t, 'GET', url, { key: null });
        expect(res.statusCode, url).toBe(200);
        expect(res.headers['content-type'], url).toMatch(url.endsWith('.js') ? /^text\/javascript; charset=utf-8$/ : /^text\/css; charset=utf-8$/);
        expect(res.headers['cache-control']).toBe('public, max-age=31536000, immutable');
        expect(res.headers['content-encoding']).toBeUndefined();
        const zipped = await call(t, 'GET', url, { key: null, headers: { 'accept-encoding': 'gzip, br' } });
        expect(zipped.headers['content-encoding']).toBe('gzip');
        expect(zipped.headers.vary).toBe('accept-encoding');
        expect(gunzipSync(zipped.rawPayload).equals(res.rawPayload)).toBe(true);
      }
      const bundle = assetsOf(html).find((u) => /swagger-ui-bundle\.[0-9a-f]{12}\.js$/.test(u))!;
      expect((await call(t, 'GET', bundle, { key: null })).body).toBe(readFileSync(path.join(renderer!, 'swagger-ui-bundle.js'), 'utf8'));
      // The page's own start-up: the service's document, and no validator badge from validator.swagger.io.
      const init = (await call(t, 'GET', assetsOf(html).find((u) => u.includes('/init.'))!, { key: null })).body;
      expect(init).toContain('validatorUrl: null');
      expect(init).toContain('queryConfigEnabled: false');
    });

    it('sends /docs/ to /docs, by a relative address', async () => {
      const res = await call(t, 'GET', '/docs/', { key: null });
      expect(res.statusCode).toBe(301);
      expect(res.headers.location).toBe('../docs');
      expect(new URL(String(res.headers.location), 'http://service.example/prefix/docs/').pathname).toBe('/prefix/docs');
    });

    it('answers anything else under /docs with the contract’s 404', async () => {
      for (const url of [
        '/docs/assets/swagger-ui-bundle.js',
        '/docs/assets/nothing.js',
        '/docs/assets/..%2f..%2fpackage.json',
        '/docs/assets/%2e%2e/%2e%2e/package.json',
        '/docs/index.html',
      ]) {
        expectError(await call(t, 'GET', url, { key: null }), 404, 'not_found');
      }
    });

    it('is in the published document as an open operation; its assets are not', async () => {
      const doc = (await call(t, 'GET', '/backend/openapi.json', { key: null })).json();
      expect(doc.paths['/docs'].get).toMatchObject({ operationId: 'apiReference', security: [], tags: ['operations'] });
      expect(Object.keys(doc.paths['/docs'].get.responses['200'].content)).toEqual(['text/html']);
      expect(Object.keys(doc.paths).filter((p) => p.startsWith('/docs/'))).toEqual([]);
    });
  });
}

describe('GET /docs, renderer files', () => {
  const scratch = mkdtempSync(path.join(tmpdir(), 'cms-api-docs-'));
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  async function appWith(rendererDir: string | null) {
    const app = Fastify({ logger: false });
    registerErrorHandling(app, { requireKey: async () => undefined });
    for (const schema of COMPONENTS) app.addSchema(schema);
    apiDocsRoutes(app, { rendererDir });
    await app.ready();
    return app;
  }

  it('serves the files of the renderer it is given, without their source-map comments', async () => {
    const dir = path.join(scratch, 'renderer');
    mkdirSync(dir);
    writeFileSync(path.join(dir, 'swagger-ui-bundle.js'), 'window.SwaggerUIBundle = function () {};\n//# sourceMappingURL=swagger-ui-bundle.js.map');
    writeFileSync(path.join(dir, 'swagger-ui.css'), '.swagger-ui { color: black }\n/*# sourceMappingURL=swagger-ui.css.map*/');
    const app = await appWith(dir);
    const html = (await app.inject({ method: 'GET', url: '/docs' })).body;
    const bodies = await Promise.all(assetsOf(html).map(async (url) => (await app.inject({ method: 'GET', url })).body));
    expect(bodies).toContain('window.SwaggerUIBundle = function () {};\n');
    expect(bodies).toContain('.swagger-ui { color: black }\n');
    expect(bodies.join('')).not.toContain('sourceMappingURL');
    await app.close();
  });

  it('without a renderer, answers the contract’s 404 saying how to get one, for the page and its assets', async () => {
    const app = await appWith(null);
    const res = await app.inject({ method: 'GET', url: '/docs' });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toMatchObject({ error: 'not_found', message: expect.stringMatching(/npm run build.*\/backend\/openapi\.json/) });
    const asset = await app.inject({ method: 'GET', url: '/docs/assets/init.0123456789ab.js' });
    expect(asset.statusCode).toBe(404);
    expect(asset.json()).toMatchObject({ error: 'not_found' });
    await app.close();
  });
});
