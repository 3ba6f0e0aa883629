/**
 * Issue 17 §3, end to end in Chromium against the real service (SQLite, in-process): the
 * dashboard reads what the signed-in key may do (GET /backend/api/keys/me) and offers only
 * that; the Keys screen creates a key (its secret shown once, with a copy button), lists and
 * revokes keys; the Audit screen filters by copilot, action and time (kept in the address)
 * and pages with the API's Link header; both screens fit a 375 px wide screen.
 *
 * Needs /usr/bin/chromium like test/e2e/dashboard.test.ts (CHROMIUM_PATH overrides).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningService } from '../../src/server.js';
import {
  brightSurfaces,
  chromiumOrSkip,
  ensureDashboardBuilt,
  horizontalOverflow,
  launchChromium,
  openPage,
  screenshot,
  signIn,
  startE2eService,
} from '../support/browser.js';
import { startServer, type LocalServer } from '../net/local-server.js';

const run = chromiumOrSkip('the dashboard administration tests');
const scratch = mkdtempSync(path.join(tmpdir(), 'cms-e2e-admin-'));
const API_KEY = /^cms_[A-Za-z0-9]{16}_[A-Za-z0-9]{32}$/;

let service: RunningService;
let pages: LocalServer;
let browser: Browser;
let base: string;
let adminKey: string;
const pageErrors: string[] = [];
const contexts: BrowserContext[] = [];

async function api(method: string, url: string, body?: unknown, key = adminKey): Promise<{ status: number; json: any; link: string | null }> {
  const res = await fetch(`${base}${url}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body !== undefined && { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, json: text && /json/.test(res.headers.get('content-type') ?? '') ? JSON.parse(text) : text, link: res.headers.get('link') };
}

/** A new browser tab (its own session storage) signed in with `key`, on the copilots screen. */
async function signedIn(key: string, options: { width?: number; clipboard?: boolean; colorScheme?: 'light' | 'dark' } = {}): Promise<Page> {
  const context = await browser.newContext({
    viewport: { width: options.width ?? 1280, height: 860 },
    deviceScaleFactor: 1,
    locale: 'en-GB',
    colorScheme: options.colorScheme ?? 'light',
  });
  contexts.push(context);
  if (options.clipboard) await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
  const page = await openPage(context, pageErrors);
  await signIn(page, base, key);
  return page;
}

async function createKey(body: Record<string, unknown>): Promise<{ id: string; key: string }> {
  const res = await api('POST', '/backend/api/keys', body);
  expect(res.status, JSON.stringify(res.json)).toBe(201);
  return res.json;
}

const nav = (page: Page) => page.getByRole('navigation', { name: 'Main' });

describe.skipIf(!run)('dashboard administration (Chromium, real service on SQLite)', () => {
  let alpha: string;
  let beta: string;
  let admin: Page;

  beforeAll(async () => {
    ensureDashboardBuilt();
    pages = await startServer('127.0.0.1', (_req, res) => {
      res
        .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
        .end('<!doctype html><title>Guide</title><main><p>Opening hours are nine to five.</p></main>');
    });
    const dataDir = path.join(scratch, 'data');
    ({ service, base, adminKey } = await startE2eService(dataDir, { FETCH_ALLOW_NETWORKS: '127.0.0.0/8,::1/128', KB_POLL_INTERVAL_MS: '50' }));
    alpha = (await api('POST', '/backend/api/copilots', { name: 'Alpha desk' })).json.id;
    beta = (await api('POST', '/backend/api/copilots', { name: 'Beta desk' })).json.id;
    expect((await api('POST', `/backend/knowledgebase/b/${alpha}`, { links: [`${pages.origin}/guide.html`] })).status).toBe(202);
    browser = await launchChromium();
    admin = await signedIn(adminKey, { clipboard: true });
  }, 120_000);

  afterAll(async () => {
    for (const context of contexts) await context.close().catch(() => undefined);
    await browser?.close();
    await service?.close();
    await pages?.close();
    rmSync(scratch, { recursive: true, force: true });
  });

  it('an admin key is offered the Keys and Audit screens and says who is signed in', async () => {
    const me = (await api('GET', '/backend/api/keys/me')).json;
    expect(me).toMatchObject({ admin: true, bots: null });
    await nav(admin).getByRole('link', { name: 'Keys' }).waitFor();
    expect(await nav(admin).getByRole('link').allTextContents()).toEqual(expect.arrayContaining(['Copilots', 'Keys', 'Audit']));
    expect(await admin.getByTestId('whoami').textContent()).toBe(`${me.name} · Admin · every copilot`);
    expect(await admin.getByRole('button', { name: 'New copilot' }).count()).toBe(1);
  });

  it('creates a key with scopes and copilots: shown once with a copy button, then listed', async () => {
    await nav(admin).getByRole('link', { name: 'Keys' }).click();
    await admin.getByRole('heading', { name: 'API keys', level: 1 }).waitFor();
    await admin.getByRole('button', { name: 'New key' }).click();
    const form = admin.locator('#create-key');
    // An unlimited admin may grant every scope, for every copilot or some.
    expect(await form.locator('fieldset.scopes input[type=checkbox]').count()).toBe(6);
    await form.getByLabel('Name').fill('Support reader');
    // Nothing chosen: the form says so before asking the API.
    await form.getByRole('button', { name: 'Create key' }).click();
    await expect.poll(() => form.getByRole('alert').textContent()).toBe('Choose at least one scope.');
    await form.getByLabel(/^copilots:read/).check();
    await form.getByLabel(/^knowledgebase:read/).check();
    await form.getByLabel('Only the copilots I choose').check();
    await form.getByLabel('Alpha desk').check();
    await form.getByRole('button', { name: 'Create key' }).click();

    const shown = admin.getByTestId('new-key');
    await shown.getByRole('heading', { name: 'Copy the new key now' }).waitFor();
    expect(await shown.textContent()).toContain('You will not see it again');
    const secret = await shown.getByLabel('The new API key').inputValue();
    expect(secret).toMatch(API_KEY);
    await shown.getByRole('button', { name: 'Copy' }).click();
    await shown.getByText('Copied to the clipboard.').waitFor();
    expect(await admin.evaluate(() => navigator.clipboard.readText())).toBe(secret);
    await screenshot(admin, 'keys', scratch);

    // The key works and is what the form asked for.
    const me = await api('GET', '/backend/api/keys/me', undefined, secret);
    expect(me.json).toMatchObject({ name: 'Support reader', scopes: ['copilots:read', 'knowledgebase:read'], bots: [alpha], admin: false });
    const row = admin.locator(`tr[data-key-id="${me.json.id}"]`);
    expect(await row.locator('th').textContent()).toContain('Support reader');
    expect(await row.locator('.scope-list li').allTextContents()).toEqual(['copilots:read', 'knowledgebase:read']);
    expect(await row.locator('.plain-list li').allTextContents()).toEqual(['Alpha desk']);

    // Once hidden, the secret is nowhere in the page, nor after a reload.
    await shown.getByRole('button', { name: 'Done: hide the key' }).click();
    await shown.waitFor({ state: 'detached' });
    expect(await admin.content()).not.toContain(secret);
    await admin.reload();
    await admin.locator(`tr[data-key-id="${me.json.id}"]`).waitFor();
    expect(await admin.content()).not.toContain(secret);
    // Every key the API lists is listed (revoked ones on request).
    const listed = (await api('GET', '/backend/api/keys')).json as Array<{ id: string; revoked_at: string | null }>;
    expect(await admin.locator('table.keys-table tbody tr').count()).toBe(listed.filter((k) => k.revoked_at === null).length);
  });

  it('revokes a key after a confirmation naming it', async () => {
    const old = await createKey({ scopes: ['copilots:read'], name: 'Old CI' });
    await admin.reload();
    const row = admin.locator(`tr[data-key-id="${old.id}"]`);
    await row.getByRole('button', { name: 'Revoke Old CI…' }).click();
    const dialog = admin.getByRole('dialog');
    await dialog.waitFor();
    expect(await dialog.locator('h2').textContent()).toBe('Revoke “Old CI”?');
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'hidden' });
    expect((await api('GET', '/backend/api/keys/me', undefined, old.key)).status).toBe(200);

    await row.getByRole('button', { name: 'Revoke Old CI…' }).click();
    await dialog.getByRole('button', { name: 'Revoke key' }).click();
    await admin.getByText('Revoked “Old CI”. It stops working at once.').waitFor();
    expect((await api('GET', '/backend/api/keys/me', undefined, old.key)).status).toBe(401);
    await row.waitFor({ state: 'detached' });
    await admin.getByLabel(/Show revoked keys/).check();
    expect(await admin.locator(`tr[data-key-id="${old.id}"]`).getAttribute('data-revoked')).toBe('true');
    expect(await admin.locator(`tr[data-key-id="${old.id}"] .badge`).allTextContents()).toContain('Revoked');
    expect(await admin.locator(`tr[data-key-id="${old.id}"]`).getByRole('button').count()).toBe(0);
  });

  it('a key limited to one copilot is offered only keys within it', async () => {
    const limited = await createKey({ scopes: ['admin'], bots: [alpha], name: 'Alpha admin' });
    const page = await signedIn(limited.key);
    // It may not create copilots (a new copilot is outside its bots), but manages keys within its own.
    expect(await page.getByRole('button', { name: 'New copilot' }).count()).toBe(0);
    // The list of copilots held back: until it answers, the form offers no copilot, not their ids.
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const copilotList = /\/backend\/api\/copilots\?/;
    await page.route(copilotList, async (route) => {
      await held;
      await route.continue();
    });
    await nav(page).getByRole('link', { name: 'Keys' }).click();
    await page.getByRole('button', { name: 'New key' }).click();
    const form = page.locator('#create-key');
    expect(await form.getByLabel('Every copilot (also those created later)').count()).toBe(0);
    await form.getByRole('status').filter({ hasText: 'Loading the copilots…' }).waitFor();
    expect(await form.locator('.bot-choices label').allTextContents()).toEqual([]);
    release(); // the held request, and any later one, goes on
    // Then each copilot by name.
    await expect.poll(() => form.locator('.bot-choices label').allTextContents()).toEqual(['Alpha desk']);
    // Without a copilot chosen the form explains; with it, the key is made within Alpha.
    await form.getByLabel(/^knowledgebase:write/).check();
    await form.getByRole('button', { name: 'Create key' }).click();
    await expect.poll(() => form.getByRole('alert').textContent()).toContain('Choose at least one copilot');
    await form.getByLabel('Alpha desk').check();
    await form.getByRole('button', { name: 'Create key' }).click();
    const secret = await page.getByTestId('new-key').getByLabel('The new API key').inputValue();
    expect((await api('GET', '/backend/api/keys/me', undefined, secret)).json).toMatchObject({ scopes: ['knowledgebase:write'], bots: [alpha] });
    // It lists only keys within its copilot: not the unlimited bootstrap key.
    const bootstrapId = (await api('GET', '/backend/api/keys/me')).json.id;
    expect(await page.locator(`tr[data-key-id="${bootstrapId}"]`).count()).toBe(0);
    // Its settings of Alpha are editable, Beta is not its to open.
    await page.goto(`${base}/#/copilots/${alpha}`);
    await page.getByRole('button', { name: 'Save changes' }).waitFor();
    expect(await page.getByRole('button', { name: 'Delete copilot…' }).count()).toBe(1);

    // Revoking the key one is signed in with warns first, then signs out.
    await page.goto(`${base}/#/keys`);
    await page.locator(`tr[data-key-id="${limited.id}"]`).getByRole('button', { name: 'Revoke Alpha admin…' }).click();
    const dialog = page.getByRole('dialog');
    expect(await dialog.textContent()).toContain('This is the key you are signed in with');
    await dialog.getByRole('button', { name: 'Revoke key' }).click();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    expect(await page.getByRole('status').first().textContent()).toContain('You were signed out');
    expect((await api('GET', '/backend/api/keys/me', undefined, limited.key)).status).toBe(401);
  });

  it('a read-only key sees no write action anywhere', async () => {
    const reader = await createKey({ scopes: ['copilots:read', 'knowledgebase:read'], name: 'Auditor' });
    const page = await signedIn(reader.key);
    expect(await page.getByTestId('whoami').textContent()).toBe('Auditor · Read only · every copilot');
    // Copilots: listed, none can be created; no Keys or Audit screen.
    await page.locator('table.copilots tbody tr').first().waitFor();
    expect(await page.getByRole('button', { name: 'New copilot' }).count()).toBe(0);
    expect(await nav(page).getByRole('link').allTextContents()).not.toContain('Keys');
    expect(await nav(page).getByRole('link').allTextContents()).not.toContain('Audit');

    // Settings: shown, not editable, no upload, no delete.
    await page.goto(`${base}/#/copilots/${alpha}`);
    await page.getByTestId('read-only').waitFor();
    expect(await page.getByLabel('Name', { exact: true }).isDisabled()).toBe(true);
    expect(await page.getByLabel('Prompt message').isDisabled()).toBe(true);
    expect(await page.getByLabel('Smart sync').isDisabled()).toBe(true);
    for (const name of ['Save changes', 'Use this URL', 'Delete copilot…']) {
      expect(await page.getByRole('button', { name }).isVisible(), name).toBe(false);
    }
    expect(await page.getByTestId('dropzone').isVisible()).toBe(false);
    expect(
      await page.locator('input[type=file]:not([disabled])').evaluateAll((els) => els.filter((e) => (e as HTMLElement).offsetParent !== null).length),
    ).toBe(0);

    // Knowledge base: the links and search, no adding, no deleting.
    await page.goto(`${base}/#/copilots/${alpha}/knowledge-base`);
    await page.locator('table.links-table tbody tr').first().waitFor();
    expect(await page.getByRole('button', { name: 'Search', exact: true }).isVisible()).toBe(true);
    expect(await page.getByRole('button', { name: 'Add links' }).isVisible()).toBe(false);
    expect(await page.getByLabel('Links (one per line)').isVisible()).toBe(false);
    expect(await page.getByRole('button', { name: /Delete selected/ }).isVisible()).toBe(false);
    expect(
      await page.locator('table.links-table input[type=checkbox]').evaluateAll((els) => els.filter((e) => (e as HTMLElement).offsetParent !== null).length),
    ).toBe(0);

    // Typed addresses of the admin screens explain instead of failing.
    await page.goto(`${base}/#/keys`);
    await page.getByText('This key may not manage keys').waitFor();
    await page.goto(`${base}/#/audit`);
    await page.getByText('This key may not read the audit log').waitFor();

    // A key without copilots:read is told so instead of a failed list.
    const linker = await createKey({ scopes: ['knowledgebase:write'], bots: [alpha] });
    const other = await signedIn(linker.key);
    await other.getByText('This key may not list copilots').waitFor();
    expect(await other.getByRole('button', { name: 'New copilot' }).count()).toBe(0);
  });

  it('audit: filters by action, copilot and time, kept in the address; pages follow the Link header', async () => {
    // 60 updates of Beta: more than a page of 50.
    for (let i = 0; i < 60; i++) expect((await api('PATCH', `/backend/api/copilot/${beta}`, { prompt_message: `Prompt ${i}` })).status).toBe(200);
    await admin.goto(`${base}/#/copilots`);
    await nav(admin).getByRole('link', { name: 'Audit' }).click();
    await admin.getByRole('heading', { name: 'Audit log', level: 1 }).waitFor();
    await admin.locator('table.audit-table tbody tr').first().waitFor();

    await admin.getByLabel('Action', { exact: true }).selectOption('key.create');
    await expect.poll(() => admin.url()).toContain('#/audit?action=key.create');
    const keyCreates = (await api('GET', '/backend/api/audit?action=key.create')).json as Array<{ id: number }>;
    await expect.poll(() => admin.locator('table.audit-table tbody tr').count()).toBe(keyCreates.length);
    expect(new Set(await admin.locator('table.audit-table tbody tr').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-action'))))).toEqual(
      new Set(['key.create']),
    );

    // Kept in the address: a reload shows the same filter.
    await admin.reload();
    await expect.poll(() => admin.locator('table.audit-table tbody tr').count()).toBe(keyCreates.length);
    expect(await admin.getByLabel('Action', { exact: true }).inputValue()).toBe('key.create');

    // By copilot and action: Beta's updates, 50 a page, the next page from the Link header.
    await admin.getByLabel('Action', { exact: true }).selectOption('copilot.update');
    await admin.getByLabel('Copilot', { exact: true }).selectOption({ label: 'Beta desk' });
    await expect.poll(() => admin.url()).toContain(`#/audit?bot_id=${beta}&action=copilot.update`);
    await expect.poll(() => admin.locator('table.audit-table tbody tr').count()).toBe(50);
    const first = await api('GET', `/backend/api/audit?bot_id=${beta}&action=copilot.update&limit=50`);
    expect(first.link).toMatch(/rel="next"/);
    await admin.getByRole('button', { name: 'Next →' }).click();
    await expect.poll(() => admin.locator('table.audit-table tbody tr').count()).toBe(10);
    expect(await admin.locator('.pager span').textContent()).toBe('Page 2');
    const next = await api('GET', /<([^>]+)>/.exec(first.link!)![1]!.replace(/^.*?\/backend/, '/backend'));
    expect(next.json).toHaveLength(10);
    await admin.getByRole('button', { name: '← Previous' }).click();
    await expect.poll(() => admin.locator('table.audit-table tbody tr').count()).toBe(50);
    await admin.evaluate(() => window.scrollTo(0, 0));
    await screenshot(admin, 'audit', scratch, { fullPage: false });

    // Time: before anything happened, nothing; a range around now, the same 50 again.
    await admin.getByLabel('Until (UTC)').fill('2001-01-01T00:00');
    await expect.poll(() => admin.url()).toContain('until=2001-01-01T00%3A00%3A00Z');
    await admin.getByText('No entry matches these filters.').waitFor();
    await admin.getByLabel('From (UTC)').fill('2001-01-01T00:00');
    await admin.getByLabel('Until (UTC)').fill('2999-12-31T23:59');
    await expect.poll(() => admin.locator('table.audit-table tbody tr').count()).toBe(50);
    expect(await admin.getByLabel('From (UTC)').inputValue()).toBe('2001-01-01T00:00');

    // An address typed or shared opens filtered.
    await admin.goto(`${base}/#/audit?bot_id=${alpha}&action=knowledgebase.add_links`);
    await expect.poll(() => admin.locator('table.audit-table tbody tr').count()).toBe(1);
    expect(await admin.getByLabel('Copilot', { exact: true }).inputValue()).toBe(alpha);
    expect(await admin.locator('table.audit-table tbody tr .audit-details').textContent()).toContain(`${pages.origin}/guide.html`);
    await admin.getByRole('button', { name: 'Clear filters' }).click();
    await expect.poll(() => admin.url()).toMatch(/#\/audit$/);
  });

  it('audit: two filters chosen before the address catches up both stay (each builds on the address, not on the screen drawn before)', async () => {
    await admin.goto(`${base}/#/audit`);
    await admin.getByRole('heading', { name: 'Audit log', level: 1 }).waitFor();
    // Both changes in one task: the first one's hashchange has not arrived when the second is made.
    await admin.evaluate((bot) => {
      const choose = (id: string, value: string) => {
        const select = document.getElementById(id) as HTMLSelectElement;
        select.value = value;
        select.dispatchEvent(new Event('change', { bubbles: true }));
      };
      choose('audit-action', 'copilot.update');
      choose('audit-bot', bot);
    }, beta);
    await expect.poll(() => admin.url()).toContain(`#/audit?bot_id=${beta}&action=copilot.update`);
    await expect.poll(() => admin.getByLabel('Action', { exact: true }).inputValue()).toBe('copilot.update');
    expect(await admin.getByLabel('Copilot', { exact: true }).inputValue()).toBe(beta);
  });

  it('the Keys and Audit screens fit a 375 px wide screen', async () => {
    const page = await signedIn(adminKey, { width: 375 });
    for (const route of ['#/keys', '#/audit', `#/audit?bot_id=${beta}&action=copilot.update`]) {
      await page.goto(`${base}/${route}`);
      await page.locator('main h1').waitFor();
      await page.locator('table').first().waitFor();
      if (route === '#/keys') {
        await page.getByRole('button', { name: 'New key' }).click();
        await page.getByLabel('Only the copilots I choose').check();
        await page
          .locator('#create-key')
          .getByLabel(/^copilots:read/)
          .check();
        await page.locator('#create-key').getByLabel('Beta desk').check();
        const open = await horizontalOverflow(page);
        expect(open.scrollWidth, 'page width with the new-key form open').toBeLessThanOrEqual(open.clientWidth);
        await page.getByRole('button', { name: 'Create key' }).click();
        await page.getByTestId('new-key').waitFor();
      }
      const { scrollWidth, clientWidth } = await horizontalOverflow(page);
      expect(scrollWidth, `page width at ${route}`).toBeLessThanOrEqual(clientWidth);
    }
    expect(pageErrors).toEqual([]);
  });

  it('the Keys and Audit screens follow the dark theme at 375 px: no light surface, no sideways scroll', async () => {
    const page = await signedIn(adminKey, { width: 375, colorScheme: 'dark' });
    for (const route of ['#/keys', `#/audit?bot_id=${beta}`]) {
      await page.goto(`${base}/${route}`);
      await page.locator('table').first().waitFor();
      if (route === '#/keys') await page.getByRole('button', { name: 'New key' }).click();
      expect(await brightSurfaces(page), route).toEqual([]);
      const { scrollWidth, clientWidth } = await horizontalOverflow(page);
      expect(scrollWidth, `page width at ${route} (dark)`).toBeLessThanOrEqual(clientWidth);
    }
    expect(pageErrors).toEqual([]);
  });
});
