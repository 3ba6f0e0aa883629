/**
 * Issue 17 §3 end to end: dark mode (the system's preference, a light / dark / system toggle
 * kept across reloads) and what a new user trips over — the list's readiness and uploaded
 * file names, filters kept in the address, a 413 that says the limit, a bad link named by
 * its line, a deletion that says which links went, a wrong key explained in plain words —
 * on Debian's Chromium (playwright-core) against the built service on SQLite, and the
 * copilots screen, copilot settings and knowledge base at 375 px in both themes.
 *
 * Needs /usr/bin/chromium (CHROMIUM_PATH overrides); skipped with a warning without it, as
 * test/e2e/dashboard.test.ts is.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PLATFORM_IDS } from '../../src/domain/validator/wire-types.js';
import type { RunningService } from '../../src/server.js';
import { callApi, chromiumOrSkip, horizontalOverflow, launchChromium, openPage, screenshot, signIn, startE2eService } from '../support/browser.js';

const run = chromiumOrSkip('the dashboard papercut tests');

// Small limits, so a 413 is easy to meet: documents up to 16 KiB, JSON bodies up to 8 KiB.
const MAX_DOCUMENT_BYTES = 16 * 1024;
const BODY_LIMIT_BYTES = 8 * 1024;

const scratch = mkdtempSync(path.join(tmpdir(), 'cms-papercuts-'));

/** A small OpenAPI document (under the document limit) with one flaw a platform cares about. */
function smallSpec(title: string): string {
  return JSON.stringify({
    openapi: '3.0.3',
    info: { title, version: '1' },
    servers: [{ url: 'https://api.example.com' }],
    paths: {
      '/chat.postMessage': { post: { summary: 'Post a message', description: 'Sends a message to a channel.', responses: { '200': { description: 'ok' } } } },
      '/users.list': { get: { operationId: 'usersList', summary: 'List users', description: 'Lists the users.', responses: { '200': { description: 'ok' } } } },
    },
  });
}

let service: RunningService;
let browser: Browser;
let base: string;
let adminKey: string;
const pageErrors: string[] = [];

const api = (method: string, url: string, body?: unknown, headers?: Record<string, string>) => callApi(base, adminKey, method, url, body, headers);

/** A context signed in with the admin key (session storage is per tab: the key is typed in once). */
async function signedIn(options: { colorScheme?: 'light' | 'dark'; width?: number } = {}): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({
    viewport: { width: options.width ?? 1280, height: 860 },
    deviceScaleFactor: 1,
    locale: 'en-GB',
    colorScheme: options.colorScheme ?? 'light',
  });
  const page = await openPage(context, pageErrors);
  await signIn(page, base, adminKey);
  return { context, page };
}

/** The relative luminance of the page's computed background (0 black … 1 white). */
async function backgroundLuminance(page: Page): Promise<number> {
  const colour = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
  const [r, g, b] = (colour.match(/\d+(\.\d+)?/g) ?? []).slice(0, 3).map(Number) as [number, number, number];
  const lin = (c: number) => {
    const s = c / 255;
    return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
  };
  return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
}

async function noHorizontalScroll(page: Page, what: string): Promise<void> {
  await page.waitForLoadState('networkidle');
  const { scrollWidth, clientWidth } = await horizontalOverflow(page);
  expect(scrollWidth, `horizontal scroll on ${what}`).toBeLessThanOrEqual(clientWidth);
}

describe.skipIf(!run)('dashboard papercuts and dark mode (Chromium, real service on SQLite)', { timeout: 90_000 }, () => {
  let specId = '';
  let plainId = '';
  let kbId = '';

  beforeAll(async () => {
    const dataDir = path.join(scratch, 'data');
    ({ service, base, adminKey } = await startE2eService(dataDir, {
      FETCH_ALLOW_NETWORKS: '127.0.0.0/8,::1/128',
      KB_POLL_INTERVAL_MS: '50',
      MAX_DOCUMENT_BYTES: String(MAX_DOCUMENT_BYTES),
      BODY_LIMIT_BYTES: String(BODY_LIMIT_BYTES),
    }));
    browser = await launchChromium();

    plainId = (await api('POST', '/backend/api/copilots', { name: 'Plain copilot' })).json.id;
    specId = (await api('POST', '/backend/api/copilots', { name: 'Slack helper', status: 'live' })).json.id;
    kbId = (await api('POST', '/backend/api/copilots', { name: 'Docs copilot' })).json.id;
    // Twelve links (on a loopback port nothing listens on: they fail fast, and stay listed).
    const links = Array.from({ length: 12 }, (_, i) => `http://127.0.0.1:9/page-${String(i + 1).padStart(2, '0')}.html`);
    expect((await api('POST', `/backend/knowledgebase/b/${kbId}`, { links })).status).toBe(202);
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await service?.close();
    rmSync(scratch, { recursive: true, force: true });
  });

  it('explains a wrong key in plain words, not in terms of HTTP headers', async () => {
    const context = await browser.newContext({ locale: 'en-GB' });
    const page = await openPage(context, pageErrors);
    await page.goto(`${base}/`);
    const alert = page.getByRole('alert');
    await page.getByLabel('API key').fill('cms_abc');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => alert.textContent()).toContain('This API key was not accepted.');
    expect(await alert.textContent()).toContain('does not look like a whole key');
    expect(await alert.textContent()).not.toMatch(/header|authorization|bearer|401/i);

    // Well-formed but unknown (revoked, or another installation's).
    await page.getByLabel('API key').fill(`cms_${'a'.repeat(16)}_${'b'.repeat(32)}`);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => alert.textContent()).toContain('may have been revoked');
    expect(await alert.textContent()).not.toMatch(/header|authorization|bearer|401/i);

    // A key pasted with its header prefix is taken as the key.
    await page.getByLabel('API key').fill(`Bearer ${adminKey}`);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Copilots', level: 1 }).waitFor();
    expect(await page.evaluate(() => sessionStorage.getItem('cms.api-key'))).toBe(adminKey);
    await context.close();
  });

  it('follows the system’s dark preference; the toggle forces light or dark and is kept across reloads (the theme only)', async () => {
    const { context, page } = await signedIn({ colorScheme: 'dark' });
    expect(await page.evaluate(() => document.documentElement.dataset.theme)).toBeUndefined();
    expect(await backgroundLuminance(page)).toBeLessThan(0.05);
    expect(await page.getByTestId('theme').inputValue()).toBe('system');

    await page.getByTestId('theme').selectOption('light');
    await expect.poll(() => backgroundLuminance(page)).toBeGreaterThan(0.8);
    await page.reload();
    await page.getByRole('heading', { name: 'Copilots', level: 1 }).waitFor();
    expect(await backgroundLuminance(page)).toBeGreaterThan(0.8);
    expect(await page.getByTestId('theme').inputValue()).toBe('light');
    // Only the theme goes to localStorage; the key stays in this tab's session storage.
    expect(await page.evaluate(() => ({ local: Object.entries(localStorage), session: Object.keys(sessionStorage) }))).toEqual({
      local: [['cms.theme', 'light']],
      session: ['cms.api-key'],
    });

    await page.getByTestId('theme').selectOption('system');
    await expect.poll(() => backgroundLuminance(page)).toBeLessThan(0.05);
    expect(await page.evaluate(() => localStorage.length)).toBe(0);
    await context.close();

    // A light system, dark chosen: dark, and still dark after a reload and on the sign-in form.
    const light = await signedIn({ colorScheme: 'light' });
    expect(await backgroundLuminance(light.page)).toBeGreaterThan(0.8);
    await light.page.getByTestId('theme').selectOption('dark');
    await expect.poll(() => backgroundLuminance(light.page)).toBeLessThan(0.05);
    await light.page.reload();
    await light.page.getByRole('heading', { name: 'Copilots', level: 1 }).waitFor();
    expect(await backgroundLuminance(light.page)).toBeLessThan(0.05);
    const text = await light.page.evaluate(() => getComputedStyle(document.body).color);
    expect(text).not.toBe('rgb(27, 31, 36)'); // the light theme's text colour would be unreadable here
    await light.page.getByRole('button', { name: 'Sign out' }).click();
    await light.page.getByRole('heading', { name: 'Sign in' }).waitFor();
    expect(await backgroundLuminance(light.page)).toBeLessThan(0.05);
    expect(await light.page.getByTestId('theme').inputValue()).toBe('dark');
    await light.context.close();
  });

  it('keeps the uploaded file’s name, shows each copilot’s readiness in the list, and keeps the filters in the address', async () => {
    const { context, page } = await signedIn();
    // Upload slack.json with the file picker.
    const file = path.join(scratch, 'slack.json');
    writeFileSync(file, smallSpec('Slack'));
    await page.goto(`${base}/#/copilots/${specId}`);
    await page.getByRole('heading', { name: 'API description' }).waitFor();
    await page.locator('input[type=file]').setInputFiles(file);
    await page.getByText('Uploaded slack.json.').waitFor();
    await expect.poll(() => page.getByTestId('original-file-name').textContent()).toBe('slack.json');
    const copilot = (await api('GET', `/backend/api/copilot/${specId}`)).json;
    expect(copilot.swagger_url).toMatch(/^[A-Za-z0-9]{20}\.json$/);
    expect(await page.locator('.card', { hasText: 'API description' }).textContent()).toContain(`stored as ${copilot.swagger_url}`);

    // The list: the readiness the validator reports, and the file name.
    const readiness = (await api('GET', `/backend/api/copilot/${specId}/validator`)).json.validations.readiness;
    const ready = PLATFORM_IDS.filter((p) => readiness.platforms[p].ready);
    await page.goto(`${base}/#/copilots`);
    const row = page.locator('table.copilots tbody tr', { hasText: 'Slack helper' });
    await expect.poll(() => row.locator('.readiness-score').textContent()).toBe(`Score ${readiness.score} of 100`);
    const badge = ready.length === PLATFORM_IDS.length ? 'Ready' : ready.length > 0 ? `Ready: ${ready.length}/${PLATFORM_IDS.length}` : 'Not ready';
    expect(await row.getByTestId('readiness').locator('.badge').textContent()).toBe(badge);
    expect(await row.locator('code').textContent()).toBe('slack.json');
    await screenshot(page, 'copilots-readiness', scratch);
    const plain = page.locator('table.copilots tbody tr', { hasText: 'Plain copilot' });
    expect(await plain.getByTestId('readiness').textContent()).toBe('No API description');

    // Filters: written to the address, kept by a reload.
    await page.getByLabel('Name contains').fill('slack');
    await page.getByLabel('Status').selectOption('live');
    await expect.poll(() => new URL(page.url()).hash).toBe('#/copilots?q=slack&status=live');
    await expect.poll(() => page.locator('table.copilots tbody tr').count()).toBe(1);
    await page.reload();
    await page.getByRole('heading', { name: 'Copilots', level: 1 }).waitFor();
    expect(await page.getByLabel('Name contains').inputValue()).toBe('slack');
    expect(await page.getByLabel('Status').inputValue()).toBe('live');
    await expect.poll(() => page.locator('table.copilots tbody tr').count()).toBe(1);
    expect(await page.locator('table.copilots tbody th a').textContent()).toBe('Slack helper');
    // Back to the whole list by the navigation link.
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Copilots' }).click();
    await expect.poll(() => page.getByLabel('Name contains').inputValue()).toBe('');
    await expect.poll(() => page.locator('table.copilots tbody tr').count()).toBe(3);
    await context.close();
  });

  it('says the limit when a file is too large (413)', async () => {
    const { context, page } = await signedIn();
    const big = path.join(scratch, 'huge-api.json');
    const spec = JSON.parse(smallSpec('Huge'));
    spec.info.description = 'x'.repeat(MAX_DOCUMENT_BYTES + 100);
    writeFileSync(big, JSON.stringify(spec));
    await page.goto(`${base}/#/copilots/${plainId}`);
    await page.getByRole('heading', { name: 'API description' }).waitFor();
    await page.locator('input[type=file]').setInputFiles(big);
    const alert = page.locator('.card', { hasText: 'API description' }).getByRole('alert');
    await expect.poll(() => alert.textContent()).toContain('the service accepts at most 16 KB here (16,384 bytes)');
    expect(await alert.textContent()).toMatch(/^huge-api\.json is 16\.\d KB\. Too large/);

    // A JSON body over BODY_LIMIT_BYTES (a very long prompt): the same, with the body limit.
    await page.goto(`${base}/#/copilots`);
    await page.getByRole('button', { name: 'New copilot' }).click();
    await page.getByLabel('Name', { exact: true }).fill('Long prompt');
    await page.getByLabel('Prompt message').fill('Answer politely. '.repeat(600));
    await page.getByRole('button', { name: 'Create copilot' }).click();
    await expect
      .poll(() => page.locator('#create-copilot').getByRole('alert').textContent())
      .toBe('Too large: the service accepts at most 8 KB here (8,192 bytes).');
    await context.close();
  });

  it('names the line of a bad link; says which links a deletion removed', async () => {
    const { context, page } = await signedIn();
    await page.goto(`${base}/#/copilots/${kbId}/knowledge-base`);
    await expect.poll(() => page.locator('table.links-table tbody tr').count()).toBe(12);
    const addForm = page.locator('form', { hasText: 'Add web pages' });

    // Caught before sending: a line that is no web address.
    await page.getByLabel('Links (one per line)').fill('https://docs.example.com/a\n\nwww.example.com/b\nhttps://docs.example.com/c');
    await page.getByRole('button', { name: 'Add links' }).click();
    await expect.poll(() => addForm.getByRole('alert').textContent()).toBe('Line 3: “www.example.com/b” is not a full web address; start it with https://.');
    // Refused by the service (credentials in a link): its index mapped back to the line.
    await page.getByLabel('Links (one per line)').fill('https://docs.example.com/a\nhttps://user:secret@docs.example.com/b');
    await page.getByRole('button', { name: 'Add links' }).click();
    await expect
      .poll(() => addForm.getByRole('alert').textContent())
      .toBe('Line 2: “https://user:secret@docs.example.com/b” must not contain a user name or password.');
    expect((await api('GET', `/backend/knowledgebase/b/${kbId}`)).json.links).toHaveLength(12);

    // Delete 3 of the 12: the message names them.
    const urls = ((await api('GET', `/backend/knowledgebase/b/${kbId}`)).json.links as Array<{ url: string }>).map((l) => l.url);
    const chosen = urls.slice(0, 3);
    for (const url of chosen) await page.getByLabel(`Select ${url}`).check();
    await page.getByRole('button', { name: 'Delete selected (3)…' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete 3 links' }).click();
    await expect.poll(() => page.getByTestId('deleted-links').first().textContent()).toBe(`Deleted 3 of 12 links: ${chosen.join(', ')}. 9 links remain.`);
    await expect.poll(() => page.locator('table.links-table tbody tr').count()).toBe(9);
    await screenshot(page, 'knowledge-base-deleted-links', scratch);
    expect(await page.getByText('Knowledge base and associated links have been successfully deleted.').count()).toBe(0);

    // Six more: counted, not listed.
    for (const url of urls.slice(3, 9)) await page.getByLabel(`Select ${url}`).check();
    await page.getByRole('button', { name: 'Delete selected (6)…' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete 6 links' }).click();
    await expect.poll(() => page.getByTestId('deleted-links').first().textContent()).toBe('Deleted 6 of 9 links. 3 links remain.');
    await context.close();
  });

  for (const scheme of ['light', 'dark'] as const) {
    it(`fits a 375 px wide screen in the ${scheme} theme: the copilots screen, copilot settings, knowledge base`, async () => {
      const { context, page } = await signedIn({ colorScheme: scheme, width: 375 });
      const lum = await backgroundLuminance(page);
      if (scheme === 'dark') expect(lum).toBeLessThan(0.05);
      else expect(lum).toBeGreaterThan(0.8);
      for (const [route, ready] of [
        ['#/copilots', 'table.copilots .readiness-score'],
        [`#/copilots/${specId}`, '[data-testid="original-file-name"]'],
        [`#/copilots/${kbId}/knowledge-base`, 'table.links-table'],
      ] as const) {
        await page.goto(`${base}/${route}`);
        await page.locator(ready).first().waitFor();
        await noHorizontalScroll(page, `${route} (${scheme})`);
        if (scheme === 'dark')
          await screenshot(
            page,
            `dark-narrow-${route.includes('knowledge-base') ? 'knowledge-base' : route === '#/copilots' ? 'copilots' : 'settings'}`,
            scratch,
          );
        if (scheme === 'dark') {
          // Cards and inputs follow the theme too (no white boxes on a dark page).
          const card = await page.evaluate(() => {
            const el = document.querySelector('.card, .table-wrap');
            return el ? getComputedStyle(el).backgroundColor : null;
          });
          if (card) expect(card).not.toBe('rgb(255, 255, 255)');
        }
      }
      // The theme toggle is reachable at this width.
      expect(await page.getByTestId('theme').isVisible()).toBe(true);
      await context.close();
    });
  }

  it('raised no script error', () => {
    expect(pageErrors).toEqual([]);
  });
});
