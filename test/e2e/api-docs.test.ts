/**
 * The API reference at /docs end to end: Debian's Chromium (playwright-core) against the
 * real service (the build of these sources, SQLite, a real port), with every host name but
 * the loopback address unresolvable, so a renderer that reached for a CDN, a font service
 * or a validator badge would fail here, and every request it tried is recorded.
 *
 * Needs /usr/bin/chromium (CHROMIUM_PATH overrides); in CI a missing browser fails the run.
 * The screenshot goes to docs/screenshots/api-docs.png when SCREENSHOTS=1 (or when it is
 * missing there), otherwise to a temporary directory.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningService } from '../../src/server.js';
import { chromiumOrSkip, launchChromium, screenshot, startE2eService } from '../support/browser.js';

const run = chromiumOrSkip('the API reference end-to-end tests');

const scratch = mkdtempSync(path.join(tmpdir(), 'cms-e2e-docs-'));

interface Violation {
  directive: string;
  blocked: string;
  sample: string;
}

describe.skipIf(!run)('API reference at /docs (Chromium, real service, no network)', () => {
  let service: RunningService;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let base: string;
  let adminKey: string;
  const requests: string[] = [];
  const problems: string[] = [];
  const failed: string[] = [];

  beforeAll(async () => {
    const dataDir = path.join(scratch, 'data');
    ({ service, base, adminKey } = await startE2eService(dataDir));
    // No network: every name but the loopback address fails to resolve.
    browser = await launchChromium(['--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1']);
    context = await browser.newContext({ viewport: { width: 1280, height: 900 }, locale: 'en-GB', serviceWorkers: 'block' });
    // Collected by the page itself: every content-security-policy violation it reports.
    await context.addInitScript(() => {
      const seen: Violation[] = [];
      (window as unknown as { __violations: Violation[] }).__violations = seen;
      document.addEventListener('securitypolicyviolation', (e) => seen.push({ directive: e.violatedDirective, blocked: e.blockedURI, sample: e.sample }));
    });
    context.on('request', (request) => requests.push(request.url()));
    context.on('response', (response) => {
      if (response.status() >= 400) failed.push(`${response.status()} ${response.url()}`);
    });
    page = await context.newPage();
    page.setDefaultTimeout(20_000);
    page.on('pageerror', (err) => problems.push(err.message));
    page.on('console', (msg) => {
      if (msg.type() === 'error' || msg.type() === 'warning') problems.push(msg.text());
    });
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await service?.close();
    rmSync(scratch, { recursive: true, force: true });
  });

  it('renders the service’s own operations, with no request beyond loopback and no policy violation', async () => {
    const answer = await page.goto(`${base}/docs`);
    expect(answer?.status()).toBe(200);
    expect(answer?.headers()['content-security-policy']).toContain("script-src 'self'");
    // Operations of every tag, as Swagger UI lists them (method and path).
    await page.locator('.opblock-summary-path[data-path="/backend/api/copilots"]').first().waitFor();
    const paths = await page.locator('.opblock-summary-path').evaluateAll((nodes) => nodes.map((n) => n.getAttribute('data-path')));
    const document = (await (await fetch(`${base}/backend/openapi.json`)).json()) as { paths: Record<string, Record<string, unknown>> };
    const operations = Object.values(document.paths).reduce((n, item) => n + Object.keys(item).length, 0);
    expect(paths).toHaveLength(operations);
    expect(new Set(paths)).toEqual(new Set(Object.keys(document.paths)));
    expect(await page.locator('.info .title').textContent()).toContain('Copilot Management Service');

    // An operation opens with its parameters and its answers.
    await page.locator('#operations-copilots-listCopilots .opblock-summary').click();
    await page.locator('#operations-copilots-listCopilots .parameters').waitFor();
    expect(await page.locator('#operations-copilots-listCopilots').textContent()).toContain('include_deleted');
    await screenshot(page, 'api-docs', scratch, { fullPage: false });

    const violations = await page.evaluate(() => (window as unknown as { __violations: Violation[] }).__violations);
    expect(violations).toEqual([]);
    expect(problems).toEqual([]);
    expect(failed).toEqual([]);
    const away = requests.filter((url) => !url.startsWith(`${base}/`) && !url.startsWith('data:'));
    expect(away).toEqual([]);
    expect(requests).toContain(`${base}/backend/openapi.json`);
  });

  it('tries an operation out with a key, against the same service', async () => {
    await page.locator('button.authorize').click();
    await page.locator('.auth-container input').fill(adminKey);
    await page.locator('.auth-container button.authorize').click();
    await page.locator('button.btn-done, .auth-btn-wrapper button.close-modal').first().click();
    const op = page.locator('#operations-copilots-listCopilots');
    await op.locator('button.try-out__btn').click();
    await op.locator('button.execute').click();
    await op.locator('.live-responses-table tbody .response-col_status').first().waitFor();
    expect((await op.locator('.live-responses-table tbody .response-col_status').first().textContent())?.trim()).toBe('200');
    const violations = await page.evaluate(() => (window as unknown as { __violations: Violation[] }).__violations);
    expect(violations).toEqual([]);
    expect(requests.filter((url) => !url.startsWith(`${base}/`) && !url.startsWith('data:'))).toEqual([]);
  });

  it('is what the dashboard’s "API" link opens', async () => {
    const dashboard = await context.newPage();
    await dashboard.goto(`${base}/`);
    await dashboard.evaluate((key) => sessionStorage.setItem('cms.api-key', key), adminKey);
    await dashboard.reload();
    const link = dashboard.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'API', exact: true });
    expect(await link.evaluate((a) => (a as HTMLAnchorElement).href)).toBe(`${base}/docs`);
    const [opened] = await Promise.all([context.waitForEvent('page'), link.click()]);
    await opened.locator('.opblock-summary-path[data-path="/backend/api/copilots"]').first().waitFor();
    expect(opened.url()).toBe(`${base}/docs`);
    expect(await opened.evaluate(() => (window as unknown as { __violations: Violation[] }).__violations)).toEqual([]);
    expect(requests.filter((url) => !url.startsWith(`${base}/`) && !url.startsWith('data:'))).toEqual([]);
  });
});
