/**
 * The dashboard's crawl form end to end (issue 16 §3): Debian's Chromium driven by playwright-core
 * against the real service (SQLite, in-process, real port, its own crawl job and worker) and a
 * local site. A crawl started from the form shows its progress live until done and its pages
 * appear as links; a second crawl, held on one page, is cancelled from the form.
 * Needs /usr/bin/chromium (CHROMIUM_PATH overrides); in CI a missing browser fails the run.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningService } from '../../src/server.js';
import { brightSurfaces, chromiumOrSkip, horizontalOverflow, launchChromium, signIn, startE2eService } from '../support/browser.js';
import { startServer, type LocalServer } from '../net/local-server.js';

const run = chromiumOrSkip("the crawl form's end-to-end test");

const html = (title: string, hrefs: string[]) =>
  `<!doctype html><html><head><title>${title}</title></head><body><main><h1>${title}</h1><p>${title} tells travellers about glacier walks and fjord cruises in the north.</p>${hrefs
    .map((h) => `<a href="${h}">${h}</a>`)
    .join(' ')}</main></body></html>`;

const SITE: Record<string, string> = {
  '/robots.txt': 'User-agent: *\nDisallow: /docs/private\n',
  '/docs/': html('Docs home', ['walks', 'cruises', 'private', '/elsewhere']),
  '/docs/walks': html('Glacier walks', ['cruises']),
  '/docs/cruises': html('Fjord cruises', []),
  '/slow/': html('Slow home', ['a', 'b', 'c', 'd', 'e', 'f']),
};

describe.skipIf(!run)('dashboard: crawl form (Chromium, real service on SQLite)', () => {
  const scratch = mkdtempSync(path.join(tmpdir(), 'cms-e2e-crawl-'));
  let service: RunningService;
  let site: LocalServer;
  let browser: Browser;
  let page: Page;
  let base: string;
  let key: string;
  let release: (() => void) | null = null;
  const held = new Promise<void>((resolve) => (release = resolve));
  const pageErrors: string[] = [];
  const requested: string[] = [];

  async function api(method: string, url: string, body?: unknown): Promise<any> {
    const res = await fetch(`${base}${url}`, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body !== undefined && { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return res.json();
  }

  beforeAll(async () => {
    site = await startServer('127.0.0.1', async (req, res) => {
      const url = req.url ?? '/';
      requested.push(url);
      // Every slow page but the first waits until the test lets it go: the crawl is caught mid-way.
      if (/^\/slow\/[b-f]$/.test(url)) await held;
      const body = SITE[url] ?? (url.startsWith('/slow/') ? html(`Slow ${url}`, []) : undefined);
      if (body === undefined) return void res.writeHead(404, { 'content-type': 'text/plain' }).end('no such page');
      res.writeHead(200, { 'content-type': url.endsWith('.txt') ? 'text/plain' : 'text/html; charset=utf-8' }).end(body);
    });
    const dataDir = path.join(scratch, 'data');
    ({ service, base, adminKey: key } = await startE2eService(dataDir, { FETCH_ALLOW_NETWORKS: '127.0.0.0/8,::1/128', KB_POLL_INTERVAL_MS: '50' }));
    browser = await launchChromium();
    page = await (await browser.newContext({ viewport: { width: 1280, height: 900 }, locale: 'en-GB' })).newPage();
    // The first page of a cold Chromium, late in a full run on 2 busy cores, once took over 15 s to show its form.
    page.setDefaultTimeout(30_000);
    page.on('pageerror', (err) => pageErrors.push(err.message));
  }, 120_000);

  afterAll(async () => {
    release?.();
    await browser?.close();
    await service?.close();
    await site?.close();
    rmSync(scratch, { recursive: true, force: true });
  });

  it('starts a crawl, shows its progress live until done, and its pages appear as links', async () => {
    const copilot = await api('POST', '/backend/api/copilots', { name: 'Crawled copilot' });
    await signIn(page, base, key);
    await page.goto(`${base}/#/copilots/${copilot.id}/knowledge-base`);

    await page.getByLabel('Start URL', { exact: true }).fill(`${site.origin}/docs/`);
    await page.getByLabel('Pages at most').fill('10');
    await page.getByRole('button', { name: 'Start crawl' }).click();
    const progress = page.getByTestId('crawl-progress');
    await expect.poll(() => progress.getAttribute('data-state'), { timeout: 30_000 }).toBe('done');
    const stat = (name: string) => progress.locator(`[data-crawl-stat="${name}"] .stat-value`).textContent();
    expect(await stat('indexed')).toBe('3');
    expect(await stat('blocked')).toBe('1');
    for (const p of ['/docs/', '/docs/walks', '/docs/cruises']) {
      await expect
        .poll(() => page.locator('table.links-table tbody tr', { has: page.locator(`a[href="${site.origin}${p}"]`) }).getAttribute('data-status'))
        .toBe('indexed');
    }
    expect(await page.locator('table.links-table tbody tr').count()).toBe(3);
    // The form's state is the service's.
    const crawls = await api('GET', `/backend/knowledgebase/b/${copilot.id}/crawls`);
    expect(crawls.crawls[0]).toMatchObject({ state: 'done', indexed: 3, blocked: 1, url: `${site.origin}/docs/` });

    // A sitemap crawl leaves the link depth aside.
    await page.getByLabel('A sitemap').check();
    expect(await page.getByLabel('Link depth').isDisabled()).toBe(true);
    await page.getByLabel('A start URL').check();
    expect(pageErrors).toEqual([]);
  });

  it('cancels a running crawl: no new page is fetched, the form says cancelled', async () => {
    const copilot = await api('POST', '/backend/api/copilots', { name: 'Cancelled crawl' });
    await page.goto(`${base}/#/copilots/${copilot.id}/knowledge-base`);
    await page.getByLabel('Start URL', { exact: true }).fill(`${site.origin}/slow/`);
    await page.getByRole('button', { name: 'Start crawl' }).click();
    const progress = page.getByTestId('crawl-progress');
    await expect.poll(() => progress.getAttribute('data-state'), { timeout: 30_000 }).toBe('running');
    await page.getByRole('button', { name: 'Cancel crawl' }).click();
    await expect.poll(() => progress.getAttribute('data-state')).toBe('cancelled');
    const atCancel = new Set(requested.filter((u) => u.startsWith('/slow/')));
    release?.();
    // The fetches in flight finish as ordinary links; nothing else of the crawl is fetched or left pending.
    await expect
      .poll(async () => (await api('GET', `/backend/knowledgebase/b/${copilot.id}`)).links.every((l: { status: string }) => l.status !== 'pending'))
      .toBe(true);
    expect(new Set(requested.filter((u) => u.startsWith('/slow/')))).toEqual(atCancel);
    expect(atCancel.size).toBeLessThan(7);
    const crawl = (await api('GET', `/backend/knowledgebase/b/${copilot.id}/crawls`)).crawls[0];
    expect(crawl.state).toBe('cancelled');
    // Reloaded, the screen shows the latest crawl as it ended, and offers a new one.
    await page.reload();
    await expect.poll(() => page.getByTestId('crawl-progress').getAttribute('data-state')).toBe('cancelled');
    expect(await page.getByRole('button', { name: 'Start crawl' }).isEnabled()).toBe(true);
    expect(pageErrors).toEqual([]);
  });

  it('the crawl form and its progress follow the dark theme at 375 px: no light surface, no sideways scroll', async () => {
    const copilot = await api('POST', '/backend/api/copilots', { name: 'Dark crawl' });
    const context = await browser.newContext({ viewport: { width: 375, height: 812 }, locale: 'en-GB', colorScheme: 'dark' });
    try {
      const narrow = await context.newPage();
      narrow.setDefaultTimeout(30_000); // as the page above: under the whole suite, two cores are shared with every other file
      narrow.on('pageerror', (err) => pageErrors.push(err.message));
      await signIn(narrow, base, key);
      await narrow.goto(`${base}/#/copilots/${copilot.id}/knowledge-base`);
      await narrow.getByLabel('Start URL', { exact: true }).fill(`${site.origin}/docs/`);
      await narrow.getByLabel('Pages at most').fill('10');
      await narrow.getByRole('button', { name: 'Start crawl' }).click();
      await expect.poll(() => narrow.getByTestId('crawl-progress').getAttribute('data-state'), { timeout: 30_000 }).toBe('done');
      expect(await brightSurfaces(narrow)).toEqual([]);
      const { scrollWidth, clientWidth } = await horizontalOverflow(narrow);
      expect(scrollWidth).toBeLessThanOrEqual(clientWidth);
    } finally {
      await context.close();
    }
    expect(pageErrors).toEqual([]);
  });
});
