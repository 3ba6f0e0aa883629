/**
 * The dashboard end to end: Debian's Chromium driven by playwright-core against the real
 * service (SQLite, in-process, real port) and a local web server for knowledge-base pages.
 *
 * Needs /usr/bin/chromium (`apt-get install -y chromium`; CHROMIUM_PATH overrides). In CI a
 * missing browser fails the run; locally the file is skipped with a warning.
 * Screenshots go to docs/screenshots/ when SCREENSHOTS=1 (or when one is missing there),
 * otherwise to a temporary directory, so a plain test run leaves the work tree clean.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningService } from '../../src/server.js';
import {
  callApi,
  chromiumOrSkip,
  ensureDashboardBuilt,
  horizontalOverflow,
  launchChromium,
  openPage,
  screenshot,
  startE2eService,
} from '../support/browser.js';
import { startServer, type LocalServer } from '../net/local-server.js';
import { SPECS_DIR } from '../support/specs.js';

const run = chromiumOrSkip('the dashboard end-to-end tests');

const scratch = mkdtempSync(path.join(tmpdir(), 'cms-e2e-'));

// ——— Pages the knowledge base fetches ———

const PAGES: Record<string, string> = {
  '/guide.html': `<!doctype html><html><head><title>Aurora tours guide</title><script>var tracking = "never indexed";</script></head>
<body><nav><a href="/">Home</a> · <a href="/faq.html">FAQ</a></nav>
<main><h1>Aurora borealis tours</h1>
<p>Our aurora tours leave Tromsø at nine in the evening and return after midnight. Guides bring warm suits, tripods and hot chocolate.</p>
<p>Refunds for cancelled aurora tours are processed within five business days, to the card used for the booking.</p>
<p>Type &lt;b&gt;not bold&lt;/b&gt; into the promo field of the booking form to get the zebra discount.</p></main>
<footer>© Example Tours</footer></body></html>`,
  '/token.html': `<!doctype html><html><head><title>Token</title></head><body><main><h1>Keys</h1>
<p>The petstore key is PETSTORE_${'A'.repeat(200)} and nothing else.</p></main></body></html>`,
  '/faq.html': `<!doctype html><html><head><title>FAQ</title></head><body><main><h1>Frequently asked questions</h1>
<p>Do the tours run when it is cloudy? We drive to where the sky is clear, sometimes as far as the Finnish border.</p>
<p>Can children join? Yes, from six years old, with a glacier-proof jacket from our shop.</p></main></body></html>`,
  // Longer than the 4 Mi characters of HTML that are read (MAX_HTML_CHARS).
  '/long.html': `<!doctype html><html><head><title>Long</title></head><body><main><h1>Long page</h1>
<p>${'The itinerary of every tour, day by day. '.repeat(20)}</p><!-- ${'x'.repeat(4 * 1024 * 1024)} --></main></body></html>`,
};

// ——— The run ———

let service: RunningService;
let pages: LocalServer;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let base: string;
let adminKey: string;
const pageErrors: string[] = [];

const api = (method: string, url: string, body?: unknown, headers?: Record<string, string>) => callApi(base, adminKey, method, url, body, headers);

const stat = (name: string) => page.locator(`[data-stat="${name}"]`).textContent();
const counting = (n: number) => new Intl.NumberFormat('en').format(n);

/** The number of endpoints each flag map of a validator answer names, and how many are flagged at all (a flag map or a rule finding). */
function expectedCounts(answer: any) {
  const keys = {
    no_operation_id: 'endpoints_without_operation_id',
    no_description: 'endpoints_without_description',
    no_name: 'endpoints_without_name',
  } as const;
  const counts: Record<string, number> = {};
  const flagged = new Set<string>();
  for (const [kind, key] of Object.entries(keys)) {
    const map = answer.validations[key];
    const indexes = map && !Array.isArray(map) ? Object.keys(map) : [];
    counts[kind] = indexes.length;
    for (const i of indexes) flagged.add(i);
  }
  for (const f of answer.validations.findings) if (f.endpoint !== null) flagged.add(String(f.endpoint));
  return { counts, flagged: flagged.size };
}

describe.skipIf(!run)('dashboard (Chromium, real service on SQLite)', () => {
  let copilotId = '';
  let bigId = '';

  beforeAll(async () => {
    ensureDashboardBuilt();
    pages = await startServer('127.0.0.1', (req, res) => {
      const body = PAGES[req.url ?? ''];
      if (body === undefined) {
        res.writeHead(404, { 'content-type': 'text/plain' }).end('no such page');
        return;
      }
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(body);
    });
    const dataDir = path.join(scratch, 'data');
    ({ service, base, adminKey } = await startE2eService(dataDir, { FETCH_ALLOW_NETWORKS: '127.0.0.0/8,::1/128', KB_POLL_INTERVAL_MS: '50' }));

    browser = await launchChromium();
    context = await browser.newContext({ viewport: { width: 1280, height: 860 }, deviceScaleFactor: 1, locale: 'en-GB' });
    page = await openPage(context, pageErrors);
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await service?.close();
    await pages?.close();
    rmSync(scratch, { recursive: true, force: true });
  });

  it('serves the dashboard at / with its cache and security headers, and keeps the API 404s', async () => {
    const index = await fetch(`${base}/`);
    expect(index.status).toBe(200);
    expect(index.headers.get('content-type')).toMatch(/^text\/html/);
    expect(index.headers.get('cache-control')).toBe('no-cache');
    expect(index.headers.get('content-security-policy')).toContain("script-src 'self'");
    const html = await index.text();
    const asset = /src="\.\/(assets\/[^"]+\.js)"/.exec(html)?.[1];
    expect(asset).toBeTruthy();
    const js = await fetch(`${base}/${asset}`);
    expect(js.status).toBe(200);
    expect(js.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    await js.arrayBuffer();

    // Under /backend the key comes first: 401 without one, 404 with one.
    expect((await fetch(`${base}/backend/api/nothing-here`)).status).toBe(401);
    const unknown = await fetch(`${base}/backend/api/nothing-here`, { headers: { authorization: `Bearer ${adminKey}` } });
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ error: 'not_found' });
  });

  it('signs in: a wrong key is explained in plain words, the right one is kept in session storage only', async () => {
    await page.goto(`${base}/`);
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await screenshot(page, 'sign-in', scratch, { fullPage: false });

    const wrong = await api('GET', '/backend/api/copilots', undefined, { authorization: 'Bearer cms_not_a_real_key' });
    expect(wrong.status).toBe(401);
    await page.getByLabel('API key').fill('cms_not_a_real_key');
    await page.getByRole('button', { name: 'Sign in' }).click();
    // Issue 17: not the API's message (which speaks of the Authorization header) but plain words.
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('This API key was not accepted.');
    expect(await page.getByRole('alert').textContent()).not.toMatch(/header|Authorization|Bearer/i);

    await page.getByLabel('API key').fill(adminKey);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Copilots', level: 1 }).waitFor();
    const stored = await page.evaluate(() => ({
      session: Object.entries(sessionStorage),
      local: localStorage.length,
      cookies: document.cookie,
    }));
    expect(stored).toEqual({ session: [['cms.api-key', adminKey]], local: 0, cookies: '' });
  });

  it('pages through copilots with the Link header and filters them by name and status', async () => {
    for (let i = 1; i <= 23; i++) {
      const created = await api('POST', '/backend/api/copilots', { name: `Load test ${String(i).padStart(2, '0')}` });
      expect(created.status).toBe(201);
      if (i === 7) expect((await api('PATCH', `/backend/api/copilot/${created.json.id}`, { status: 'live' })).status).toBe(200);
    }
    await page.reload();
    await page.getByLabel('Name contains').fill('Load test');
    await expect.poll(() => page.locator('table.copilots tbody tr').count()).toBe(20);
    await expect.poll(() => page.locator('table.copilots tbody tr').first().locator('th a').textContent()).toBe('Load test 23');
    await page.getByRole('button', { name: 'Next →' }).click();
    await expect.poll(() => page.locator('table.copilots tbody tr').count()).toBe(3);
    await expect.poll(() => page.locator('.pager span').textContent()).toBe('Page 2');
    await page.getByRole('button', { name: '← Previous' }).click();
    await expect.poll(() => page.locator('table.copilots tbody tr').count()).toBe(20);

    await page.getByLabel('Status').selectOption('live');
    await expect.poll(() => page.locator('table.copilots tbody tr').count()).toBe(1);
    await expect.poll(() => page.locator('table.copilots tbody th a').textContent()).toBe('Load test 07');

    // Out of the way of the screenshots: soft-delete them through the API.
    const all = await api('GET', '/backend/api/copilots?q=Load%20test&limit=100');
    for (const c of all.json) expect((await api('DELETE', `/backend/api/copilot/${c.id}`)).status).toBe(200);
    for (const name of ['Billing helpdesk', 'HR onboarding guide']) {
      const created = await api('POST', '/backend/api/copilots', { name, website: `https://${name.split(' ')[0]!.toLowerCase()}.example.com` });
      expect(created.status).toBe(201);
    }
  });

  it('shows the page the address names when it changes before the dashboard listens for changes', async () => {
    // The router reads the address when it is first drawn and listens for hashchange from an
    // effect, which Preact runs a frame later (or 100 ms later without frames). An address that
    // changed in between was never heard of: the screen stayed on the list, as a page opened
    // just after signing in did on a busy machine (the browser tests that waited 15 s for it).
    const context = await browser.newContext({ locale: 'en-GB' });
    const own = await openPage(context, []);
    try {
      await own.addInitScript(() => {
        // No frames: effects run at Preact's 100 ms fallback, after the change below.
        window.requestAnimationFrame = () => 0;
        window.cancelAnimationFrame = () => undefined;
        // The moment the list is drawn after signing in, the address moves to the keys.
        new MutationObserver((_, observer) => {
          if (!document.querySelector('h1#page-title') || !/Copilots/.test(document.querySelector('h1#page-title')!.textContent ?? '')) return;
          observer.disconnect();
          location.hash = '#/keys';
        }).observe(document, { childList: true, subtree: true });
      });
      await own.goto(`${base}/`);
      await own.getByLabel('API key').fill(adminKey);
      await own.getByRole('button', { name: 'Sign in' }).click();
      await own.getByRole('heading', { name: 'API keys', level: 1 }).waitFor({ timeout: 5000 });
      expect(await own.evaluate(() => location.hash)).toBe('#/keys');
    } finally {
      await context.close();
    }
  });

  it('keeps a status chosen while the address still catches up with the name typed', async () => {
    const ids: string[] = [];
    for (const name of ['Race draft', 'Race live']) {
      const created = await api('POST', '/backend/api/copilots', { name });
      expect(created.status).toBe(201);
      ids.push(created.json.id);
    }
    expect((await api('PATCH', `/backend/api/copilot/${ids[1]}`, { status: 'live' })).status).toBe(200);
    // The screen writes the debounced name into the address, and hears of that change from the
    // browser a task later (hashchange). A person can choose a status in between; here they do so
    // at the last moment, just before the router reads the address, from a listener the page gets
    // before the dashboard's own.
    await page.addInitScript(() =>
      window.addEventListener('hashchange', () => {
        (window as any).hashChanges = ((window as any).hashChanges ?? 0) + 1;
        (window as any).beforeRouter?.();
      }),
    );
    await page.goto(`${base}/#/copilots`);
    await page.reload();
    await page.getByRole('heading', { name: 'Copilots', level: 1 }).waitFor();
    await page.evaluate(() => {
      (window as any).beforeRouter = () => {
        if (!location.hash.includes('q=Race')) return;
        (window as any).beforeRouter = undefined;
        const select = document.getElementById('filter-status') as HTMLSelectElement;
        select.value = 'live';
        select.dispatchEvent(new Event('change', { bubbles: true }));
      };
    });
    await page.getByLabel('Name contains').fill('Race');
    await expect.poll(() => page.evaluate(() => location.hash)).toBe('#/copilots?q=Race&status=live');
    await expect.poll(() => page.locator('table.copilots tbody th a').allTextContents()).toEqual(['Race live']);
    expect(await page.getByLabel('Status').inputValue()).toBe('live');
    expect(await page.getByLabel('Name contains').inputValue()).toBe('Race');
    // And it stays so: the screen does not go on rewriting its address (it flipped the status back
    // and forth, each older address read back undoing the newer one).
    const changes = await page.evaluate(() => (window as any).hashChanges);
    await page.waitForTimeout(1000);
    expect(await page.evaluate(() => (window as any).hashChanges)).toBe(changes);
    expect(await page.getByLabel('Status').inputValue()).toBe('live');

    for (const id of ids) expect((await api('DELETE', `/backend/api/copilot/${id}`)).status).toBe(200);
  });

  it('creates a copilot and edits its name, website, status, prompt and flags', async () => {
    await page.goto(`${base}/#/copilots`);
    await page.getByRole('button', { name: 'New copilot' }).click();
    await page.getByLabel('Name', { exact: true }).fill('Petstore assistant');
    await page.getByLabel('Website').fill('https://petstore.example.com');
    await page.getByRole('button', { name: 'Create copilot' }).click();
    await page.getByRole('heading', { name: 'Petstore assistant', level: 1 }).waitFor();
    copilotId = decodeURIComponent(/#\/copilots\/([^/]+)/.exec(page.url())![1]!);
    await page.getByText('Created “Petstore assistant”').waitFor();

    await page.getByLabel('Status').selectOption('live');
    await page.getByLabel('Prompt message').fill('You help people adopt pets. Answer briefly.');
    await page.getByLabel('Smart sync').check();
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByText('Saved.').waitFor();
    const saved = await api('GET', `/backend/api/copilot/${copilotId}`);
    expect(saved.json).toMatchObject({
      name: 'Petstore assistant',
      website: 'https://petstore.example.com',
      status: 'live',
      smart_sync: 1,
      enhanced_privacy: 0,
    });
    expect(saved.json.prompt_message).toBe('You help people adopt pets. Answer briefly.');
    await expect.poll(() => page.locator('.page-head .badge').textContent()).toBe('live');
  });

  it('uploads an API description by drag-and-drop and by the file picker, and shows an upload error as the API’s message', async () => {
    await page.goto(`${base}/#/copilots/${copilotId}`);
    await page.getByRole('heading', { name: 'API description' }).waitFor();

    // Drag and drop: the untouched Petstore 3 document.
    const petstore = readFileSync(path.join(SPECS_DIR, 'petstore3.json'), 'utf8');
    const dropped = await page.evaluateHandle((text) => {
      const transfer = new DataTransfer();
      transfer.items.add(new File([text], 'petstore3.json', { type: 'application/json' }));
      return transfer;
    }, petstore);
    await page.getByTestId('dropzone').dispatchEvent('drop', { dataTransfer: dropped });
    await page.getByText('Uploaded petstore3.json.').waitFor();
    await screenshot(page, 'copilot-settings', scratch);
    const afterDrop = await api('GET', `/backend/api/copilot/${copilotId}`);
    expect(afterDrop.json.swagger_url).toMatch(/^[A-Za-z0-9]{20}\.json$/);
    expect((await api('GET', `/backend/api/copilot/${copilotId}/swagger`)).json).toEqual(JSON.parse(petstore));

    // A document that is not one: the API's message, word for word.
    const broken = path.join(scratch, 'broken.yaml');
    writeFileSync(broken, 'openapi: 3.0.0\npaths: [unclosed\n');
    const refused = await api('PUT', `/backend/api/copilot/${copilotId}/swagger`, readFileSync(broken, 'utf8'), { 'content-type': 'application/yaml' });
    expect(refused.status).toBe(400);
    await page.locator('input[type=file]').setInputFiles(broken);
    await expect.poll(() => page.locator('.card').filter({ hasText: 'API description' }).getByRole('alert').textContent()).toBe(refused.json.message);
    expect((await api('GET', `/backend/api/copilot/${copilotId}`)).json.swagger_url).toBe(afterDrop.json.swagger_url);
  });

  it('reads the report of Petstore 3: 19 endpoints, nothing flagged, oauth2, its server', async () => {
    const answer = (await api('GET', `/backend/api/copilot/${copilotId}/validator`)).json;
    expect(answer.all_endpoints).toHaveLength(19);
    await page.goto(`${base}/#/copilots`);
    await expect.poll(() => page.locator('table.copilots tbody tr').count()).toBe(3);
    await screenshot(page, 'copilots', scratch, { fullPage: false });
    const row = page.locator('table.copilots tbody tr', { hasText: 'Petstore assistant' });
    // Issue 17: the name it was uploaded under; the generated one in its title.
    await expect.poll(() => row.locator('code').textContent()).toBe('petstore3.json');
    expect(await row.locator('code').getAttribute('title')).toMatch(/^Stored as [A-Za-z0-9]{20}\.json$/);
    await row.getByRole('link', { name: 'Report' }).click();
    await expect.poll(() => stat('endpoints')).toBe('19');
    const { counts } = expectedCounts(answer);
    for (const [kind, count] of Object.entries(counts)) expect(await stat(kind), kind).toBe(String(count));
    expect(await stat('auth_type')).toBe(answer.validations.auth_type);
    expect(await stat('base_url')).toBe(answer.validations.base_url ?? 'none');
    // Issue 18: the readiness score, a verdict per platform, the findings list.
    expect(await stat('score')).toBe(String(answer.validations.readiness.score));
    for (const [platform, verdict] of Object.entries(answer.validations.readiness.platforms as Record<string, { ready: boolean }>)) {
      expect(await page.locator(`[data-platform="${platform}"]`).getAttribute('data-ready'), platform).toBe(String(verdict.ready));
    }
    expect(await page.getByTestId('findings-count').textContent()).toBe(`${answer.validations.findings.length} findings`);
    expect(await page.locator('tbody.endpoint').count()).toBe(19);
    expect(await page.locator('tbody.endpoint').first().locator('.method').textContent()).toBe(answer.all_endpoints[0].type);
  });

  it('flags a flawed description: counts, flagged cells, the “only flagged” filter and an endpoint’s details', async () => {
    // Petstore 3 with flaws an LLM trips on: no operationId, a blank summary, no description,
    // an operationId that is no tool name, and one operationId used twice.
    const doc = JSON.parse(readFileSync(path.join(SPECS_DIR, 'petstore3.json'), 'utf8'));
    const ops = Object.values(doc.paths).flatMap((item: any) =>
      Object.entries(item)
        .filter(([m]) => ['get', 'put', 'post', 'delete', 'patch'].includes(m))
        .map(([, op]) => op as any),
    );
    delete ops[0].operationId;
    ops[1].summary = '   ';
    delete ops[2].description;
    ops[3].operationId = 'find pets by tags!';
    ops[5].operationId = ops[4].operationId;
    const flawed = path.join(scratch, 'petstore3-flawed.json');
    writeFileSync(flawed, JSON.stringify(doc, null, 2));

    await page.getByRole('link', { name: 'Settings', exact: true }).click();
    await page.locator('input[type=file]').setInputFiles(flawed);
    await page.getByText('Uploaded petstore3-flawed.json.').waitFor();
    await page.getByRole('link', { name: 'Validation report', exact: true }).click();

    const answer = (await api('GET', `/backend/api/copilot/${copilotId}/validator`)).json;
    const { counts, flagged } = expectedCounts(answer);
    expect(counts).toEqual({ no_operation_id: 1, no_description: 1, no_name: 1 });
    const rulesAt = (rule: string) => answer.validations.findings.filter((f: any) => f.rule === rule && f.severity === 'error').length;
    expect([rulesAt('operation-id-duplicate'), rulesAt('operation-id-invalid')]).toEqual([2, 1]);
    await expect.poll(() => stat('no_operation_id')).toBe('1');
    for (const [kind, count] of Object.entries(counts)) expect(await stat(kind), kind).toBe(String(count));
    expect(await page.locator('tbody.endpoint.flagged').count()).toBe(flagged);
    // A flagged cell for each missing name, operationId or description, and each duplicate or invalid operationId
    // (rows flagged only by other findings, such as a header parameter, show them in their details).
    const cells = Object.values(counts).reduce((a, b) => a + b, 0) + rulesAt('operation-id-duplicate') + rulesAt('operation-id-invalid');
    expect(await page.locator('td.flag').count()).toBe(cells);
    await expect.poll(() => page.locator('tbody.endpoint').nth(0).locator('td.flag').textContent()).toBe('no operationId');

    await page.getByLabel(/Only flagged endpoints/).check();
    await expect.poll(() => page.locator('tbody.endpoint').count()).toBe(flagged);
    expect(await page.getByTestId('endpoint-count').textContent()).toBe(`${flagged} endpoints of 19`);

    // Rule findings tag the operationId cell.
    expect(await page.locator('td.flag .tag', { hasText: 'duplicate' }).count()).toBe(2);
    expect(await page.locator('td.flag .tag', { hasText: 'invalid' }).count()).toBe(1);

    // A count card narrows to its kind; pressed again it lets go.
    await page.locator('.stat-button', { hasText: 'Without name' }).click();
    await expect.poll(() => page.locator('tbody.endpoint').count()).toBe(1);
    await page.locator('.stat-button', { hasText: 'Without name' }).click();
    await expect.poll(() => page.locator('tbody.endpoint').count()).toBe(flagged);

    // An endpoint opens its parameters, request body and responses (keyboard: Enter on the path button).
    const row = page.locator('tbody.endpoint', { has: page.locator('code', { hasText: /^\/pet\/\{petId\}$/ }) }).first();
    await row.locator('.row-toggle').focus();
    await page.keyboard.press('Enter');
    const detail = row.locator('.endpoint-detail');
    await detail.waitFor();
    expect(await row.locator('.row-toggle').getAttribute('aria-expanded')).toBe('true');
    expect(await detail.locator('h3').allTextContents()).toEqual(['Parameters', 'Request body', 'Responses']);
    expect(await detail.locator('table.params code', { hasText: 'petId' }).count()).toBeGreaterThan(0);
    expect(await detail.locator('.responses summary').count()).toBeGreaterThan(0);
    expect(await detail.locator('.issues li').count()).toBeGreaterThan(0);
    await page.mouse.move(0, 0);
    await screenshot(page, 'report', scratch);
  });

  it('stays responsive on thousands of endpoints: rows are rendered a page at a time', async () => {
    const paths: Record<string, unknown> = {};
    for (let i = 0; i < 3000; i++) {
      paths[`/items/${i}`] = {
        get: {
          operationId: `getItem${i}`,
          summary: `Get item ${i}`,
          ...(i % 3 !== 0 && { description: 'Reads one item.' }),
          responses: { 200: { description: 'OK' } },
        },
        post: { operationId: `postItem${i}`, summary: `Update item ${i}`, description: 'Writes one item.', responses: { 204: { description: 'Done' } } },
      };
    }
    const big = { openapi: '3.0.3', info: { title: 'Big', version: '1' }, servers: [{ url: 'https://big.example.com' }], paths };
    const created = await api('POST', '/backend/api/copilots', { name: 'Six thousand endpoints' });
    bigId = created.json.id;
    expect((await api('PUT', `/backend/api/copilot/${bigId}/swagger`, JSON.stringify(big), { 'content-type': 'application/json' })).status).toBe(200);

    await page.goto(`${base}/#/copilots/${bigId}/report`);
    await expect.poll(() => stat('endpoints'), { timeout: 30_000 }).toBe(counting(6000));
    expect(await page.locator('tbody.endpoint').count()).toBe(100);
    expect(await stat('no_description')).toBe(counting(1000));

    await page.getByRole('button', { name: 'Next →' }).click();
    await expect.poll(() => page.getByTestId('endpoint-count').textContent()).toContain('showing 101–200');
    await page.getByLabel('Path, name or operationId contains').fill('/items/2999');
    await expect.poll(() => page.locator('tbody.endpoint').count()).toBe(2);
    await page.getByLabel('Path, name or operationId contains').fill('');
    await page.getByLabel(/Only flagged endpoints/).check();
    await expect.poll(() => page.getByTestId('endpoint-count').textContent()).toContain(`${counting(1000)} endpoints of ${counting(6000)}`);
    expect(await page.locator('tbody.endpoint').count()).toBe(100);
  });

  it('knowledge base: adds links, shows their status live, searches with highlights, deletes a selected link', async () => {
    await page.goto(`${base}/#/copilots/${copilotId}/knowledge-base`);
    await page.getByText('No links yet').waitFor();
    const guide = `${pages.origin}/guide.html`;
    const faq = `${pages.origin}/faq.html`;
    const missing = `${pages.origin}/missing.html`;
    await page.getByLabel('Links (one per line)').fill([guide, faq, missing].join('\n'));
    await page.getByRole('button', { name: 'Add links' }).click();
    await page.getByText('Queued 3 links').waitFor();

    const statusOf = (url: string) => page.locator('table.links-table tbody tr', { has: page.locator(`a[href="${url}"]`) }).getAttribute('data-status');
    await expect.poll(() => statusOf(guide), { timeout: 30_000 }).toBe('indexed');
    await expect.poll(() => statusOf(faq), { timeout: 30_000 }).toBe('indexed');
    await expect.poll(() => statusOf(missing), { timeout: 30_000 }).toBe('failed');
    const links = (await api('GET', `/backend/knowledgebase/b/${copilotId}`)).json.links as Array<{ url: string; passages: number; error: string | null }>;
    const guideRow = page.locator('table.links-table tbody tr', { has: page.locator(`a[href="${guide}"]`) });
    expect(await guideRow.locator('td.num').textContent()).toBe(String(links.find((l) => l.url === guide)!.passages));
    expect(links.find((l) => l.url === guide)!.passages).toBeGreaterThan(0);
    const failedRow = page.locator('table.links-table tbody tr', { has: page.locator(`a[href="${missing}"]`) });
    expect(await failedRow.locator('.reason').textContent()).toBe(links.find((l) => l.url === missing)!.error);

    await page.getByLabel('Words to find').fill('aurora refunds');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    const results = page.locator('.search-results li');
    await results.first().waitFor();
    const marks = (await results.first().locator('mark').allTextContents()).map((m) => m.toLowerCase());
    expect(marks).toContain('aurora');
    expect(marks).toContain('refunds');
    expect(await results.first().locator('.result-source a').textContent()).toBe(guide);
    await screenshot(page, 'knowledge-base', scratch);

    // Passage text is text: markup in it is shown, never interpreted.
    await page.getByLabel('Words to find').fill('zebra');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await expect.poll(() => results.first().locator('mark').allTextContents()).toEqual(['zebra']);
    expect(await results.first().locator('.passage').textContent()).toContain('<b>not bold</b>');
    expect(await page.locator('.search-results b').count()).toBe(0);

    // Select the FAQ and delete it; the confirmation names it.
    await page.getByLabel(`Select ${faq}`).check();
    await page.getByRole('button', { name: 'Delete selected (1)…' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.waitFor();
    expect(await dialog.locator('.confirm-list li').allTextContents()).toEqual([faq]);
    await dialog.getByRole('button', { name: 'Delete 1 link' }).click();
    // Issue 17: the dashboard says which link went (the API's fixed message says the whole knowledge base did).
    await page.getByText(`Deleted 1 of 3 links: ${faq}. 2 links remain.`).waitFor();
    await expect.poll(() => page.locator(`table.links-table a[href="${faq}"]`).count()).toBe(0);
    const after = (await api('GET', `/backend/knowledgebase/b/${copilotId}`)).json.links.map((l: { url: string }) => l.url);
    expect(after.sort()).toEqual([guide, missing].sort());
  });

  it('knowledge base: a page indexed only in part says so under its link', async () => {
    const long = `${pages.origin}/long.html`;
    expect((await api('POST', `/backend/knowledgebase/b/${copilotId}`, { links: [long] })).status).toBe(202);
    // The screen of the test before is this one: loaded again, it reads the new link.
    await page.goto(`${base}/#/copilots/${copilotId}/knowledge-base`);
    await page.reload();
    const row = page.locator('table.links-table tbody tr', { has: page.locator(`a[href="${long}"]`) });
    await expect.poll(() => row.getAttribute('data-status'), { timeout: 30_000 }).toBe('indexed');
    expect(await row.locator('.note').textContent()).toBe('Only the first part of this page is indexed: its HTML is longer than 4 Mi characters.');
    const guide = page.locator('table.links-table tbody tr', { has: page.locator(`a[href="${pages.origin}/guide.html"]`) });
    expect(await guide.locator('.note').count()).toBe(0);
  });

  it("wraps a long unbroken name and a long word of a passage: the list, the copilot's page and its search results never scroll sideways", async () => {
    const name = 'L'.repeat(200);
    const id = (await api('POST', '/backend/api/copilots', { name })).json.id as string;
    try {
      await page.goto(`${base}/#/copilots`);
      await page.locator('table.copilots a', { hasText: name }).waitFor();
      const wrap = await page
        .locator('.table-wrap')
        .first()
        .evaluate((el) => ({ scroll: el.scrollWidth, client: el.clientWidth }));
      expect(wrap.scroll, 'the copilot list').toBeLessThanOrEqual(wrap.client);

      const link = `${pages.origin}/token.html`;
      await api('POST', `/backend/knowledgebase/b/${id}`, { links: [link] });
      await expect.poll(async () => (await api('GET', `/backend/knowledgebase/b/${id}`)).json.links[0].status, { timeout: 30_000 }).toBe('indexed');
      await page.goto(`${base}/#/copilots/${id}/knowledge-base`);
      await page.getByLabel('Words to find').fill('petstore');
      await page.getByRole('button', { name: 'Search', exact: true }).click();
      await page.locator('.search-results li').first().waitFor();
      const overflow = await horizontalOverflow(page);
      expect(overflow.scrollWidth, 'the knowledge base with search results').toBeLessThanOrEqual(overflow.clientWidth);
    } finally {
      await api('DELETE', `/backend/api/copilot/${id}`);
    }
  });

  it('stops reading the links again after an error, and says so when the copilot was deleted meanwhile', async () => {
    const id = (await api('POST', '/backend/api/copilots', { name: 'Going away' })).json.id as string;
    const linksUrl = `**/backend/knowledgebase/b/${id}?**`;
    let reads = 0;
    let answer: 'pending' | 'down' = 'pending';
    const link = {
      url: `${pages.origin}/slow.html`,
      status: 'pending',
      passages: 0,
      error: null,
      created_at: '2026-11-30T00:00:00.000000Z',
      updated_at: '2026-11-30T00:00:00.000000Z',
      indexed_at: null,
    };
    await page.route(linksUrl, (route) => {
      reads++;
      if (answer === 'pending') return route.fulfill({ status: 200, contentType: 'application/json', body: JSON.stringify({ links: [link] }) });
      return route.fulfill({
        status: 503,
        contentType: 'application/json',
        headers: { 'retry-after': '60' },
        body: '{"error":"service_unavailable","message":"Down for a moment."}',
      });
    });
    try {
      await page.goto(`${base}/#/copilots/${id}/knowledge-base`);
      await page.getByText('Fetching and indexing 1 link').waitFor();
      answer = 'down';
      await page.getByText('Down for a moment.').waitFor({ timeout: 10_000 });
      const after = reads;
      await page.waitForTimeout(5000);
      // It read the links every 1.5 s for as long as the error lasted (the service down, a 429).
      expect(reads - after).toBe(0);
    } finally {
      await page.unroute(linksUrl);
    }
    await api('DELETE', `/backend/api/copilot/${id}`);
    await page.getByRole('button', { name: 'Try again' }).click();
    // The API answers "no knowledge base" for a deleted copilot too; the page said "No links yet".
    await page.getByText('No copilot has this id.').waitFor();
    expect(await page.getByText('No links yet').count()).toBe(0);
  });

  it('an answer of the wrong shape (a proxy answering JSON of its own) is said in words, with the technical detail folded away', async () => {
    const list = /\/backend\/api\/copilots\?/;
    await page.route(list, (route) => route.fulfill({ status: 200, contentType: 'application/json', body: '{"status":"ok"}' }));
    try {
      await page.goto(`${base}/#/copilots/${copilotId}`);
      await page.goto(`${base}/#/copilots`);
      const alert = page.getByRole('alert');
      await expect
        .poll(() => alert.locator('p').first().textContent())
        .toBe(
          'The dashboard could not show this page: an answer was not what it expects (a proxy in front of the service, or a service of another version, may be answering), or the dashboard has a fault of its own.',
        );
      expect(await alert.locator('details summary').textContent()).toBe('Technical detail');
      expect(await alert.locator('details').getAttribute('open')).toBeNull();
    } finally {
      await page.unroute(list);
    }
    await page.getByRole('button', { name: 'Reload the page' }).click();
    await page.locator('table.copilots').waitFor();
  });

  it('is readable on a 375 px wide screen', async () => {
    await page.setViewportSize({ width: 375, height: 812 });
    for (const route of ['#/copilots', `#/copilots/${copilotId}/report`, `#/copilots/${copilotId}/knowledge-base`]) {
      await page.goto(`${base}/${route}`);
      await page.locator('main h1').waitFor();
      await page.waitForLoadState('networkidle');
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth);
      expect(overflow, `page width at ${route}`).toBeLessThanOrEqual(375);
    }
    await page.goto(`${base}/#/copilots/${copilotId}/report`);
    await expect.poll(() => stat('endpoints')).toBe('19');
    await screenshot(page, 'report-narrow', scratch, { maxHeight: 1600 });
    await page.setViewportSize({ width: 1280, height: 860 });
  });

  it('deletes a copilot after a confirmation naming it, and signs out', async () => {
    await page.goto(`${base}/#/copilots/${bigId}`);
    await page.getByRole('button', { name: 'Delete copilot…' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.waitFor();
    expect(await dialog.locator('h2').textContent()).toBe('Delete “Six thousand endpoints”?');
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'hidden' });
    expect((await api('GET', `/backend/api/copilot/${bigId}`)).status).toBe(200);

    await page.getByRole('button', { name: 'Delete copilot…' }).click();
    await dialog.getByRole('button', { name: 'Delete copilot' }).click();
    await page.getByText('Deleted “Six thousand endpoints”.').waitFor();
    expect((await api('GET', `/backend/api/copilot/${bigId}`)).status).toBe(404);
    expect(await page.locator('table.copilots', { hasText: 'Six thousand endpoints' }).count()).toBe(0);

    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    expect(pageErrors).toEqual([]);
  });
});
