/**
 * What an accessibility sweep of the dashboard and /docs found, kept fixed: Debian's Chromium
 * (playwright-core) against the real service (the build, SQLite, in-process, real port) and a
 * local web server for knowledge-base pages and a crawl.
 *
 * Live announcements are read as a screen reader hears them: a page-side observer records the
 * text of a live region (aria-live, role=status/alert/log) only when the region was already in
 * the page before its text changed (a region inserted together with its text is often silent).
 *
 * Needs /usr/bin/chromium (CHROMIUM_PATH overrides); skipped with a warning without it, failed in CI.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningService } from '../../src/server.js';
import { callApi, chromiumOrSkip, ensureDashboardBuilt, launchChromium, openPage, signIn, startE2eService } from '../support/browser.js';
import { REPO_ROOT } from '../support/build.js';
import { startServer, type LocalServer } from '../net/local-server.js';

const run = chromiumOrSkip('the accessibility end-to-end tests');

const scratch = mkdtempSync(path.join(tmpdir(), 'cms-e2e-a11y-'));
/** Petstore 3 with an endpoint without an operationId, so that a count card of the report can be pressed. */
function petstore(): string {
  const doc = JSON.parse(readFileSync(path.join(REPO_ROOT, 'test/fixtures/specs/petstore3.json'), 'utf8'));
  delete doc.paths['/pet/findByStatus'].get.operationId;
  return JSON.stringify(doc);
}

const html = (title: string, hrefs: string[] = []) =>
  `<!doctype html><html><head><title>${title}</title></head><body><main><h1>${title}</h1><p>${title} tells travellers about glacier walks and fjord cruises in the north, with times and prices.</p>${hrefs
    .map((h) => `<a href="${h}">${h}</a>`)
    .join(' ')}</main></body></html>`;

const SITE: Record<string, string> = {
  '/page.html': html('Aurora tours'),
  '/site/': html('Site home', ['walks', 'cruises']),
  '/site/walks': html('Glacier walks'),
  '/site/cruises': html('Fjord cruises'),
};

/** Records, in the page, what each live region says after a change, if the region was there before the change. */
function recordAnnouncements(): void {
  const w = window as unknown as { __announced: string[] };
  w.__announced = [];
  const selector = '[aria-live]:not([aria-live="off"]), [role="status"], [role="alert"], [role="log"]';
  const known = new WeakSet<Element>();
  const remember = () => {
    for (const el of document.querySelectorAll(selector)) known.add(el);
  };
  const start = () => {
    remember();
    new MutationObserver((records) => {
      const changed = new Set<Element>();
      for (const r of records) {
        const el = r.target.nodeType === Node.ELEMENT_NODE ? (r.target as Element) : r.target.parentElement;
        const region = el?.closest(selector);
        if (region && known.has(region)) changed.add(region);
      }
      for (const region of changed) {
        const text = (region.textContent ?? '').trim();
        if (text) w.__announced.push(text);
      }
      remember();
    }).observe(document.documentElement, { subtree: true, childList: true, characterData: true });
  };
  if (document.documentElement) start();
  else document.addEventListener('DOMContentLoaded', start);
}

const announced = (page: Page) => page.evaluate(() => (window as unknown as { __announced: string[] }).__announced.join('\n'));
const clearAnnounced = (page: Page) => page.evaluate(() => ((window as unknown as { __announced: string[] }).__announced.length = 0));

/** The focused element, as tag, id, role and text, for a failure message. */
const focused = (page: Page) =>
  page.evaluate(() => {
    const el = document.activeElement;
    if (!el || el === document.body) return 'body';
    return `${el.tagName.toLowerCase()}#${el.id}[role=${el.getAttribute('role') ?? ''}] ${(el.textContent ?? '').trim().slice(0, 80)}`;
  });

/** WCAG contrast of an element's text colour on its own background colour (both opaque in what is measured). */
function contrastOf(selector: string) {
  return (page: Page) =>
    page.locator(selector).evaluateAll((els) => {
      const rgb = (c: string) => (/rgba?\(([\d.]+), ([\d.]+), ([\d.]+)/.exec(c) ?? []).slice(1).map(Number);
      const lum = (c: string) => {
        const [r, g, b] = rgb(c).map((v) => {
          const s = v / 255;
          return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
        });
        return 0.2126 * r! + 0.7152 * g! + 0.0722 * b!;
      };
      const background = (el: Element | null): string => {
        for (let e = el; e; e = e.parentElement) {
          const bg = getComputedStyle(e).backgroundColor;
          if (bg !== 'rgba(0, 0, 0, 0)' && bg !== 'transparent') return bg;
        }
        return 'rgb(255, 255, 255)';
      };
      return els.map((el) => {
        const [a, b] = [lum(getComputedStyle(el).color), lum(background(el))];
        return { text: (el.textContent ?? '').trim(), ratio: (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05) };
      });
    });
}

describe.skipIf(!run)('accessibility (Chromium, real service on SQLite)', () => {
  let service: RunningService;
  let site: LocalServer;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let base: string;
  let adminKey: string;
  let copilotId = '';
  const pageErrors: string[] = [];

  const api = (method: string, url: string, body?: unknown, headers?: Record<string, string>) => callApi(base, adminKey, method, url, body, headers);

  /** Opens a dashboard address afresh, signed in (the key in session storage, as the sign-in form leaves it). */
  async function visit(route: string): Promise<void> {
    await page.goto(`${base}/${route}`);
    await page.evaluate((key) => sessionStorage.setItem('cms.api-key', key), adminKey);
    await page.reload();
  }

  beforeAll(async () => {
    ensureDashboardBuilt();
    site = await startServer('127.0.0.1', (req, res) => {
      const body = SITE[req.url ?? ''];
      if (body === undefined) return void res.writeHead(404, { 'content-type': 'text/plain' }).end('no such page');
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(body);
    });
    ({ service, base, adminKey } = await startE2eService(path.join(scratch, 'data'), {
      FETCH_ALLOW_NETWORKS: '127.0.0.0/8,::1/128',
      KB_POLL_INTERVAL_MS: '50',
    }));
    const created = await api('POST', '/backend/api/copilots', { name: 'Petstore helper' });
    copilotId = created.json.id;
    expect((await api('PUT', `/backend/api/copilot/${copilotId}/swagger`, petstore(), { 'content-type': 'application/json' })).status).toBe(200);
    browser = await launchChromium();
    context = await browser.newContext({ viewport: { width: 1280, height: 860 }, locale: 'en-GB' });
    await context.addInitScript(recordAnnouncements);
    page = await openPage(context, pageErrors);
    page.setDefaultTimeout(30_000);
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await service?.close();
    await site?.close();
    rmSync(scratch, { recursive: true, force: true });
  });

  it('focuses the screen after signing in and after signing out', async () => {
    await page.goto(`${base}/`);
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await page.getByLabel('API key').fill(adminKey);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Copilots', level: 1 }).waitFor();
    await expect.poll(() => focused(page)).toMatch(/^h1#page-title.*Copilots/);

    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await expect.poll(() => focused(page)).not.toBe('body');
    expect(await focused(page)).toMatch(/^h1#sign-in-title|signed out/);
  });

  it('names the screen in the document title', async () => {
    await page.goto(`${base}/`);
    await page.evaluate(() => sessionStorage.clear());
    await page.reload();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    expect(await page.title()).toBe('Sign in · Copilot Management');
    await signIn(page, base, adminKey);
    await expect.poll(() => page.title()).toBe('Copilots · Copilot Management');
    await page.goto(`${base}/#/keys`);
    await expect.poll(() => page.title()).toBe('Keys · Copilot Management');
    await page.goto(`${base}/#/audit`);
    await expect.poll(() => page.title()).toBe('Audit log · Copilot Management');
    await page.goto(`${base}/#/copilots/${copilotId}/report`);
    await expect.poll(() => page.title()).toBe('Petstore helper — Report · Copilot Management');
    await page.goto(`${base}/#/copilots/${copilotId}/knowledge-base`);
    await expect.poll(() => page.title()).toBe('Petstore helper — Knowledge base · Copilot Management');
  });

  it('Keys: each revoke dialog is named by its own key, no id repeats, and focus lands on the outcome', async () => {
    for (const name of ['First robot', 'Second robot', 'Third robot']) {
      expect((await api('POST', '/backend/api/keys', { name, scopes: ['copilots:read'] })).status).toBe(201);
    }
    await visit('#/keys');
    await page.locator('tr[data-key-id]').nth(3).waitFor();
    const duplicates = await page.evaluate(() => {
      const ids = [...document.querySelectorAll('[id]')].map((el) => el.id);
      return ids.filter((id, i) => ids.indexOf(id) !== i);
    });
    expect(duplicates).toEqual([]);
    const names = await page
      .locator('dialog')
      .evaluateAll((dialogs) => dialogs.map((d) => document.getElementById(d.getAttribute('aria-labelledby') ?? '')?.textContent ?? ''));
    expect(names).toEqual(expect.arrayContaining(['Revoke “First robot”?', 'Revoke “Second robot”?', 'Revoke “Third robot”?']));

    await page.getByRole('button', { name: 'Revoke Second robot…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Revoke “Second robot”?' });
    await dialog.getByRole('button', { name: 'Revoke key' }).click();
    await page.getByText('Revoked “Second robot”').waitFor();
    await expect.poll(() => page.locator('tr[data-key-id]', { hasText: 'Second robot' }).count()).toBe(0);
    expect(await focused(page)).toMatch(/Revoked “Second robot”|^h1#page-title/);

    // A new key's secret, then "Done: hide the key".
    await page.getByRole('button', { name: 'New key' }).click();
    await page.getByLabel('Name').fill('Fourth robot');
    await page.getByRole('checkbox', { name: /copilots:read/ }).check();
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.getByRole('button', { name: 'Done: hide the key' }).click();
    await page.getByTestId('new-key').waitFor({ state: 'detached' });
    expect(await focused(page)).toMatch(/^h1#page-title/);
  });

  it('Keys form and new copilot: a field in error is marked invalid and described by the error, in plain words', async () => {
    await visit('#/copilots');
    await page.getByRole('button', { name: 'New copilot' }).click();
    await page.getByLabel('Name', { exact: true }).fill('   ');
    await page.getByRole('button', { name: 'Create copilot' }).click();
    const alert = page.locator('#create-copilot [role="alert"]');
    await alert.waitFor();
    expect(await alert.textContent()).toMatch(/Enter a name/);
    expect(await alert.textContent()).not.toMatch(/\/name|characters/);
    const field = page.locator('#new-name');
    expect(await field.getAttribute('aria-invalid')).toBe('true');
    const described = (await field.getAttribute('aria-describedby')) ?? '';
    expect(described).not.toBe('');
    expect(await page.evaluate((ids) => ids.split(' ').some((id) => document.getElementById(id)?.getAttribute('role') === 'alert'), described)).toBe(true);
    await page.getByLabel('Name', { exact: true }).fill('Named at last');
    // Fixing the field and cancelling leaves nothing marked.
    await page.getByRole('button', { name: 'Cancel' }).click();

    // The sign-in form's key.
    const other = await openPage(context, pageErrors);
    await other.goto(`${base}/`);
    await other.evaluate(() => sessionStorage.clear());
    await other.reload();
    await other.getByLabel('API key').fill('cms_nope');
    await other.getByRole('button', { name: 'Sign in' }).click();
    await other.getByRole('alert').waitFor();
    const key = other.locator('#api-key');
    expect(await key.getAttribute('aria-invalid')).toBe('true');
    const ids = ((await key.getAttribute('aria-describedby')) ?? '').split(' ');
    expect(await other.evaluate((list) => list.some((id) => document.getElementById(id)?.getAttribute('role') === 'alert'), ids)).toBe(true);
    expect(ids).toContain('api-key-help');
    await other.close();
  });

  it('copilots: after a failed fetch the rows of an earlier query are not shown under the error', async () => {
    await visit('#/copilots');
    await page.locator('table.copilots tbody tr').first().waitFor();
    await page.route(/\/backend\/api\/copilots\?.*q=zzz/, (route) =>
      route.fulfill({ status: 502, contentType: 'text/html', body: '<html><body>Bad gateway</body></html>' }),
    );
    await page.getByLabel('Name contains').fill('zzz');
    await page.getByRole('alert').waitFor();
    await expect.poll(() => page.locator('[role="status"].loading').count()).toBe(0);
    expect(await page.locator('table.copilots tbody tr').count()).toBe(0);
    await page.unroute(/\/backend\/api\/copilots\?.*q=zzz/);
  });

  it('knowledge base: a link turning indexed or failed is announced in a live region that was already there, and a delete focuses its outcome', async () => {
    await visit(`#/copilots/${copilotId}/knowledge-base`);
    await page.getByLabel('Links (one per line)').waitFor();
    await clearAnnounced(page);
    await page.getByLabel('Links (one per line)').fill(`${site.origin}/page.html`);
    await page.getByRole('button', { name: 'Add links' }).click();
    await expect.poll(() => page.locator('table.links-table tbody tr[data-status="indexed"]').count(), { timeout: 30_000 }).toBe(1);
    await expect.poll(() => announced(page)).toMatch(new RegExp(`[Ii]ndexed.*${site.origin}/page\\.html`));

    await page.getByLabel('Links (one per line)').fill(`${site.origin}/missing.html`);
    await page.getByRole('button', { name: 'Add links' }).click();
    await expect.poll(() => page.locator('table.links-table tbody tr[data-status="failed"]').count(), { timeout: 30_000 }).toBe(1);
    const links = (await api('GET', `/backend/knowledgebase/b/${copilotId}`)).json.links as Array<{ url: string; error: string | null }>;
    const reason = links.find((l) => l.url.endsWith('/missing.html'))?.error ?? '';
    expect(reason).not.toBe('');
    await expect.poll(() => announced(page)).toContain(reason);
    await expect.poll(() => announced(page)).toMatch(new RegExp(`[Ff]ailed.*${site.origin}/missing\\.html`));

    // Deleting a link: the opener goes disabled, so the focus goes to what happened.
    await page.getByRole('checkbox', { name: `Select ${site.origin}/missing.html` }).check();
    await page.getByRole('button', { name: /Delete selected/ }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete 1 link' }).click();
    await page.getByTestId('deleted-links').first().waitFor();
    await expect.poll(() => page.locator('table.links-table tbody tr').count()).toBe(1);
    expect(await focused(page)).toMatch(/Deleted/);
  });

  it('crawl: its progress and its end are announced, short, in a live region that was already there', async () => {
    await clearAnnounced(page);
    await page.getByLabel('Start URL', { exact: true }).fill(`${site.origin}/site/`);
    await page.getByRole('button', { name: 'Start crawl' }).click();
    const progress = page.getByTestId('crawl-progress');
    await expect.poll(() => progress.getAttribute('data-state'), { timeout: 30_000 }).toBe('done');
    await expect.poll(() => announced(page)).toMatch(/Crawl finished.*3 indexed/);
    const lines = (await announced(page)).split('\n');
    expect(lines.filter((l) => /^Crawl /.test(l)).every((l) => l.length < 200)).toBe(true);
    // Reloaded, the screen shows the finished crawl without announcing it again.
    await visit(`#/copilots/${copilotId}/knowledge-base`);
    await progress.waitFor();
    await page.waitForTimeout(500);
    expect(await announced(page)).not.toMatch(/Crawl finished/);
  });

  it('report: the endpoint toggle names its method, JSON boxes can be scrolled from the keyboard and are named', async () => {
    await visit(`#/copilots/${copilotId}/report`);
    const toggles = page.locator('tbody.endpoint .row-toggle');
    await toggles.first().waitFor();
    const names = await toggles.evaluateAll((els) => els.map((el) => el.getAttribute('aria-label') ?? el.textContent ?? ''));
    expect(names).toContain('PUT /pet');
    expect(names).toContain('POST /pet');
    expect(new Set(names).size).toBe(names.length);

    await page.getByRole('button', { name: 'POST /pet', exact: true }).click();
    const pre = page.locator('tbody.endpoint.open pre.json').first();
    await pre.waitFor();
    expect(await pre.getAttribute('tabindex')).toBe('0');
    expect(await pre.getAttribute('aria-label')).toMatch(/POST \/pet/);
  });

  it('report under forced colours: a pressed verdict or count card is drawn by more than a shadow', async () => {
    await page.emulateMedia({ forcedColors: 'active' });
    try {
      await visit(`#/copilots/${copilotId}/report`);
      const outline = (locator: ReturnType<Page['locator']>) =>
        locator.evaluate((el) => {
          const s = getComputedStyle(el);
          return `${s.outlineStyle} ${s.outlineWidth} | ${s.borderTopStyle} ${s.borderTopWidth}`;
        });
      // Neither focused nor hovered: only the pressed state differs.
      const blur = async () => {
        await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());
        await page.mouse.move(0, 0);
      };
      const verdict = page.locator('.platforms .verdict').first();
      await verdict.waitFor();
      await page.mouse.move(0, 0);
      const before = await outline(verdict);
      await verdict.click();
      await expect.poll(() => verdict.getAttribute('aria-pressed')).toBe('true');
      await blur();
      expect(await outline(verdict)).not.toBe(before);

      const card = page.locator('.stat-button:not(:disabled)').first();
      const cardBefore = await outline(card);
      await card.focus();
      await page.keyboard.press('Enter');
      await expect.poll(() => card.getAttribute('aria-pressed')).toBe('true');
      await blur();
      expect(await outline(card)).not.toBe(cardBefore);
    } finally {
      await page.emulateMedia({ forcedColors: 'none' });
    }
  });

  it('narrow copilot tabs show that they scroll', async () => {
    await page.setViewportSize({ width: 320, height: 700 });
    try {
      await visit(`#/copilots/${copilotId}/settings`);
      const tabs = page.locator('nav.tabs');
      await tabs.waitFor();
      const style = await tabs.evaluate((el) => ({ scrolls: el.scrollWidth > el.clientWidth, background: getComputedStyle(el).backgroundImage }));
      expect(style.scrolls).toBe(true);
      expect(style.background).toMatch(/gradient/);
    } finally {
      await page.setViewportSize({ width: 1280, height: 860 });
    }
  });

  it('/docs: one main landmark, a header that wraps at 320 px, readable badges and buttons, a named servers list', async () => {
    const docs = await openPage(context, pageErrors);
    try {
      await docs.goto(`${base}/docs`);
      await docs.locator('.opblock-summary-method').first().waitFor();
      expect(await docs.locator('#docs').evaluate((el) => el.tagName)).toBe('DIV');
      expect(await docs.locator('main').count()).toBeLessThanOrEqual(1);
      expect(await docs.locator('main main').count()).toBe(0);

      for (const selector of ['.opblock-summary-method', '.btn.authorize', '.info .title small pre']) {
        const ratios = await contrastOf(selector)(docs);
        expect(ratios.length, selector).toBeGreaterThan(0);
        for (const r of ratios) expect(r.ratio, `${selector} “${r.text}”`).toBeGreaterThanOrEqual(4.5);
      }
      const select = docs.locator('.servers select');
      await select.waitFor();
      const name = await select.evaluate(
        (el) => el.getAttribute('aria-label') ?? (el.id ? document.querySelector(`label[for="${el.id}"]`)?.textContent?.trim() : '') ?? '',
      );
      expect(name).toMatch(/server/i);

      await docs.setViewportSize({ width: 320, height: 700 });
      await docs.waitForTimeout(200);
      const top = await docs.evaluate(() => {
        const right = Math.max(...[...document.querySelectorAll('.docs-top *')].map((el) => el.getBoundingClientRect().right));
        return { right, width: document.documentElement.clientWidth };
      });
      expect(top.right).toBeLessThanOrEqual(top.width);
    } finally {
      await docs.close();
    }
  });
});
