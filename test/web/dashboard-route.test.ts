import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { brotliCompressSync, brotliDecompressSync, gunzipSync, gzipSync } from 'node:zlib';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerErrorHandling } from '../../src/http/errors.js';
import { DASHBOARD_ROOT, dashboardRoutes } from '../../src/http/routes/dashboard.js';

const scratch = mkdtempSync(path.join(tmpdir(), 'cms-dashboard-'));
const BIG_SCRIPT = `console.log(${JSON.stringify('dashboard '.repeat(2000))});`;
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

async function appServing(root: string): Promise<FastifyInstance> {
  const app = Fastify({ logger: false });
  registerErrorHandling(app, { requireKey: async () => undefined });
  app.get('/backend/api/ping', async () => ({ pong: true }));
  await dashboardRoutes(app, { root });
  await app.ready();
  return app;
}

describe('dashboard routes', () => {
  let app: FastifyInstance;

  beforeAll(async () => {
    const root = path.join(scratch, 'dist');
    mkdirSync(path.join(root, 'assets'), { recursive: true });
    writeFileSync(path.join(root, 'index.html'), '<!doctype html><title>Dashboard</title><script type="module" src="./assets/index-AbC123.js"></script>');
    writeFileSync(path.join(root, 'assets/index-AbC123.js'), 'console.log("dashboard")');
    writeFileSync(path.join(root, 'assets/big-AbC123.js'), BIG_SCRIPT);
    writeFileSync(path.join(root, 'assets/big-AbC123.js.gz'), gzipSync(BIG_SCRIPT));
    writeFileSync(path.join(root, 'assets/big-AbC123.js.br'), brotliCompressSync(BIG_SCRIPT));
    writeFileSync(path.join(root, 'favicon.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>');
    writeFileSync(path.join(root, '.env'), 'SECRET=1');
    app = await appServing(root);
    return () => app.close();
  });

  it('serves index.html at / without caching it, with a strict content security policy', async () => {
    const res = await app.inject({ method: 'GET', url: '/' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.headers['cache-control']).toBe('no-cache');
    expect(res.headers['content-security-policy']).toMatch(/default-src 'none'.*script-src 'self'.*connect-src 'self'.*frame-ancestors 'none'/);
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.body).toContain('<title>Dashboard</title>');
    expect((await app.inject({ method: 'HEAD', url: '/' })).statusCode).toBe(200);
    expect((await app.inject({ method: 'GET', url: '/index.html' })).statusCode).toBe(200);
  });

  it('caches hashed assets for a year and revalidates everything else', async () => {
    const asset = await app.inject({ method: 'GET', url: '/assets/index-AbC123.js' });
    expect(asset.statusCode).toBe(200);
    expect(asset.headers['content-type']).toMatch(/javascript/);
    expect(asset.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(asset.headers['content-security-policy']).toBeUndefined();
    const icon = await app.inject({ method: 'GET', url: '/favicon.svg' });
    expect(icon.statusCode).toBe(200);
    expect(icon.headers['cache-control']).toBe('no-cache');
  });

  it('sends an asset compressed where the build compressed it and the browser takes it (a11y sweep: 112 KB of script went uncompressed)', async () => {
    for (const [accept, encoding, decode] of [
      ['br, gzip', 'br', brotliDecompressSync],
      ['gzip', 'gzip', gunzipSync],
      ['identity', undefined, (b: Buffer) => b],
    ] as const) {
      const res = await app.inject({ method: 'GET', url: '/assets/big-AbC123.js', headers: { 'accept-encoding': accept } });
      expect(res.statusCode, accept).toBe(200);
      expect(res.headers['content-encoding'], accept).toBe(encoding);
      expect(res.headers['content-type'], accept).toMatch(/javascript/);
      expect(res.headers.vary, accept).toMatch(/accept-encoding/i);
      expect(res.headers['cache-control'], accept).toBe('public, max-age=31536000, immutable');
      expect(decode(res.rawPayload).toString(), accept).toBe(BIG_SCRIPT);
    }
  });

  it('the build compresses every script and style of the dashboard (br and gzip beside each)', () => {
    const assets = readdirSync(path.join(DASHBOARD_ROOT, 'assets')).filter((f) => /\.(js|css)$/.test(f));
    expect(assets.length).toBeGreaterThan(0);
    for (const file of assets) {
      const body = readFileSync(path.join(DASHBOARD_ROOT, 'assets', file));
      expect(gunzipSync(readFileSync(path.join(DASHBOARD_ROOT, 'assets', `${file}.gz`))).equals(body), file).toBe(true);
      expect(brotliDecompressSync(readFileSync(path.join(DASHBOARD_ROOT, 'assets', `${file}.br`))).equals(body), file).toBe(true);
    }
  });

  it('leaves every other path to the API: JSON 404s, dotfiles and traversal included', async () => {
    for (const url of ['/backend/api/unknown', '/backend/', '/assets/missing.js', '/.env', '/assets/../../package.json', '/%2e%2e/package.json', '/copilots']) {
      const res = await app.inject({ method: 'GET', url });
      expect(res.statusCode, url).toBe(404);
      expect(res.headers['content-type'], url).toMatch(/^application\/json/);
      expect(res.json(), url).toMatchObject({ error: 'not_found' });
    }
    expect((await app.inject({ method: 'GET', url: '/backend/api/ping' })).json()).toEqual({ pong: true });
    // The dashboard's page exists for GET only: another method is told so (405 with Allow).
    const post = await app.inject({ method: 'POST', url: '/' });
    expect(post.statusCode).toBe(405);
    expect(post.headers.allow).toContain('GET');
  });

  it('explains how to build the dashboard when it is not built', async () => {
    const bare = await appServing(path.join(scratch, 'not-built'));
    try {
      const res = await bare.inject({ method: 'GET', url: '/' });
      expect(res.statusCode).toBe(503);
      expect(res.headers['content-type']).toMatch(/^text\/plain/);
      expect(res.body).toContain('npm run build');
      expect((await bare.inject({ method: 'GET', url: '/backend/api/unknown' })).json()).toMatchObject({ error: 'not_found' });
    } finally {
      await bare.close();
    }
  });

  it('answers a Range header with the whole file (ranges are not served), never a 500', async () => {
    // @fastify/send answered an unsatisfiable range with an error the handler did not know: 500.
    for (const range of ['bytes=-0', 'bytes=99999999-', 'bytes=1-0', 'bytes=x', 'bytes=5000-6000', 'bytes=0-3']) {
      for (const url of ['/', '/favicon.svg', '/assets/index-AbC123.js']) {
        const res = await app.inject({ method: 'GET', url, headers: { range: range } });
        expect(res.statusCode, `${url} ${range}: ${res.body.slice(0, 200)}`).toBe(200);
        expect(res.headers['content-range']).toBeUndefined();
      }
    }
    expect((await app.inject({ method: 'GET', url: '/favicon.svg', headers: { range: 'bytes=0-3' } })).body).toBe('<svg xmlns="http://www.w3.org/2000/svg"/>');
  });

  it('answers a client error a plugin raises (an http-errors 4xx) with the contract body, not a 500', async () => {
    const other = Fastify({ logger: false });
    registerErrorHandling(other, { requireKey: async () => undefined });
    other.get('/refused', async () => {
      throw Object.assign(new Error('Range Not Satisfiable'), { statusCode: 416, status: 416, expose: true });
    });
    other.get('/broken', async () => {
      throw Object.assign(new Error('secret internals'), { statusCode: 500, expose: false });
    });
    try {
      const refused = await other.inject({ method: 'GET', url: '/refused' });
      expect(refused.statusCode).toBe(400);
      expect(refused.json()).toEqual({ error: 'invalid_request', message: 'The request could not be processed as sent.' });
      const broken = await other.inject({ method: 'GET', url: '/broken' });
      expect(broken.statusCode).toBe(500);
      expect(broken.body).not.toContain('secret');
    } finally {
      await other.close();
    }
  });

  it('finds web/dist three levels above the route file', () => {
    expect(path.relative(process.cwd(), DASHBOARD_ROOT).split(path.sep).join('/')).toBe('web/dist');
  });
});
