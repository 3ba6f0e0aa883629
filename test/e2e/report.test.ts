/**
 * The report (issue 18 §D) and the versions view (issue 16 §3) end to end: Debian's Chromium
 * driven by playwright-core against the real service (the build, SQLite, in-process, real port)
 * and a local web server the sync fetches from. Everything the page shows is compared with what
 * the API answers for the same copilot.
 *
 * Needs /usr/bin/chromium (CHROMIUM_PATH overrides); skipped with a warning without it, failed in CI.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningService } from '../../src/server.js';
import {
  brightSurfaces,
  callApi,
  chromiumOrSkip,
  ensureDashboardBuilt,
  horizontalOverflow,
  launchChromium,
  openPage,
  screenshot,
  signIn,
  startE2eService,
} from '../support/browser.js';
import { REPO_ROOT } from '../support/build.js';
import { startServer, type LocalServer } from '../net/local-server.js';

const PETSTORE = path.join(REPO_ROOT, 'test/fixtures/specs/petstore3.json');

const run = chromiumOrSkip('the report end-to-end tests');

const scratch = mkdtempSync(path.join(tmpdir(), 'cms-e2e-report-'));

// ——— Documents ———

const LONG_PATH = '/organizations/{organizationId}/repositories/{repositoryName}/pull-requests/{pullRequestNumber}/review-comments';

/** Petstore 3 with what the readiness rules catch, an operationId only some platforms accept, and a long path whose body has a long line. */
function reportDocument(): any {
  const doc = JSON.parse(readFileSync(PETSTORE, 'utf8'));
  const ops = Object.values(doc.paths).flatMap((item: any) =>
    Object.entries(item)
      .filter(([m]) => ['get', 'put', 'post', 'delete', 'patch'].includes(m))
      .map(([, op]) => op as any),
  );
  delete ops[0].operationId;
  delete ops[2].description;
  ops[3].operationId = 'pets.findByTags'; // "." is a Gemini and MCP name character, not an OpenAI or Anthropic one
  ops[5].operationId = ops[4].operationId;
  doc.paths[LONG_PATH] = {
    post: {
      operationId: 'createReviewComment',
      summary: 'Comment on a pull request',
      description: 'Adds a review comment.',
      parameters: ['organizationId', 'repositoryName', 'pullRequestNumber'].map((name) => ({ name, in: 'path', required: true, schema: { type: 'string' } })),
      requestBody: {
        required: true,
        content: {
          'application/json': {
            schema: { type: 'object', properties: { body: { type: 'string', description: `The comment. ${'Markdown is accepted here. '.repeat(30)}` } } },
          },
        },
      },
      responses: { 201: { description: 'Created' } },
    },
  };
  return doc;
}

/** A small API: version 2 adds an endpoint (not breaking) before it removes one (breaking) in the API's order of changes. */
function versionDoc(paths: string[], title = 'Zoo'): string {
  const doc = {
    openapi: '3.0.3',
    info: { title, version: '1' },
    servers: [{ url: 'https://zoo.example.com' }],
    paths: Object.fromEntries(
      paths.map((p) => [
        p,
        { get: { operationId: `get${p.replace(/\W/g, '_')}`, summary: `Read ${p}`, description: `Reads ${p}.`, responses: { 200: { description: 'OK' } } } },
      ]),
    ),
  };
  return JSON.stringify(doc, null, 2);
}
const V1 = versionDoc(['/animals', '/keepers']);
const V2 = versionDoc(['/animals', '/feeding-times']);
const V3 = versionDoc(['/animals', '/feeding-times', '/tickets']);

// ——— The run ———

let service: RunningService;
let origin: LocalServer;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let base: string;
let adminKey: string;
const pageErrors: string[] = [];
const requestedUrls: string[] = [];

const api = (method: string, url: string, body?: unknown, headers?: Record<string, string>) => callApi(base, adminKey, method, url, body, headers);

async function upload(id: string, text: string): Promise<void> {
  const res = await api('PUT', `/backend/api/copilot/${id}/swagger`, text, { 'content-type': 'application/json' });
  expect(res.status, JSON.stringify(res.json).slice(0, 300)).toBe(200);
}

async function createCopilot(name: string): Promise<string> {
  const created = await api('POST', '/backend/api/copilots', { name });
  expect(created.status).toBe(201);
  return created.json.id;
}

async function newPage(): Promise<Page> {
  const p = await openPage(context, pageErrors);
  p.on('request', (req) => requestedUrls.push(req.url()));
  return p;
}

/** Opens a dashboard address afresh: a new load, so nothing is left open from an earlier test (a same-address `goto` keeps the page). */
async function visit(route: string): Promise<void> {
  await page.goto(`${base}/${route}`);
  await page.reload();
}

describe.skipIf(!run)('report and versions (Chromium, real service on SQLite)', () => {
  let reportId = '';
  let emptyId = '';
  let zooId = '';
  const served = V3;

  beforeAll(async () => {
    ensureDashboardBuilt();
    origin = await startServer('127.0.0.1', (req, res) => {
      if (req.url === '/openapi.json') res.writeHead(200, { 'content-type': 'application/json' }).end(served);
      else res.writeHead(404, { 'content-type': 'text/plain' }).end('no such document');
    });
    const dataDir = path.join(scratch, 'data');
    ({ service, base, adminKey } = await startE2eService(dataDir, { FETCH_ALLOW_NETWORKS: '127.0.0.0/8,::1/128' }));

    reportId = await createCopilot('Report assistant');
    await upload(reportId, JSON.stringify(reportDocument()));
    emptyId = await createCopilot('Brand new copilot');
    zooId = await createCopilot('Zoo assistant');

    browser = await launchChromium();
    context = await browser.newContext({ viewport: { width: 1280, height: 900 }, deviceScaleFactor: 1, locale: 'en-GB', acceptDownloads: true });
    page = await newPage();
    await signIn(page, base, adminKey);
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await service?.close();
    await origin?.close();
    rmSync(scratch, { recursive: true, force: true });
  });

  it('shows the readiness score and a verdict per platform, as the API answers them', async () => {
    const answer = (await api('GET', `/backend/api/copilot/${reportId}/validator`)).json;
    await visit(`#/copilots/${reportId}/report`);
    await expect.poll(() => page.locator('[data-stat="score"]').textContent()).toBe(String(answer.validations.readiness.score));
    const platforms = Object.entries(answer.validations.readiness.platforms as Record<string, { ready: boolean; blocking: number; warnings: number }>);
    expect(platforms.length).toBe(6);
    expect(platforms.some(([, v]) => !v.ready)).toBe(true);
    for (const [platform, v] of platforms) {
      const chip = page.locator(`[data-platform="${platform}"]`);
      expect(await chip.getAttribute('data-ready'), platform).toBe(String(v.ready));
      const text = await chip.locator('.verdict-text').textContent();
      expect(text, platform).toBe(
        `${v.ready ? 'ready' : `${v.blocking} blocking`}${v.warnings > 0 ? ` · ${v.warnings} warning${v.warnings === 1 ? '' : 's'}` : ''}`,
      );
    }
  });

  it('groups the findings errors first, filters them by severity and platform, and links each to its endpoint row', async () => {
    const findings = (await api('GET', `/backend/api/copilot/${reportId}/validator`)).json.validations.findings as Array<{
      rule: string;
      severity: string;
      endpoint: number | null;
      platforms: string[];
    }>;
    await visit(`#/copilots/${reportId}/report`);
    await expect.poll(() => page.getByTestId('findings-count').textContent()).toBe(`${findings.length} findings`);

    const groups = page.locator('li.finding-group');
    const severities = await groups.evaluateAll((els) => els.map((el) => el.getAttribute('data-severity')));
    const rank = (s: string | null) => ['error', 'warning', 'info'].indexOf(s ?? '');
    expect(severities[0]).toBe('error');
    expect(severities.map(rank)).toEqual([...severities.map(rank)].sort((a, b) => a - b));
    const groupTotal = async () => (await groups.getByTestId('group-count').allTextContents()).reduce((n, t) => n + Number(t.replace(/,/g, '')), 0);
    expect(await groupTotal()).toBe(findings.length);

    // Severity: errors only.
    const errors = findings.filter((f) => f.severity === 'error');
    await page.getByLabel('Severity').selectOption('error');
    await expect.poll(() => page.getByTestId('findings-shown').textContent()).toContain(`${errors.length} findings of ${findings.length}`);
    expect(new Set(await groups.evaluateAll((els) => els.map((el) => el.getAttribute('data-severity'))))).toEqual(new Set(['error']));
    expect(await groupTotal()).toBe(errors.length);

    // And a platform: errors that break OpenAI only (the verdict chip is the same filter).
    const openaiErrors = errors.filter((f) => f.platforms.includes('openai'));
    await page.getByLabel('Platform', { exact: true }).selectOption('openai');
    await expect.poll(() => groupTotal()).toBe(openaiErrors.length);
    await page.locator('[data-platform="gemini"] button').click();
    expect(await page.getByLabel('Platform', { exact: true }).inputValue()).toBe('gemini');
    await expect.poll(() => groupTotal()).toBe(errors.filter((f) => f.platforms.includes('gemini')).length);
    await page.getByLabel('Platform', { exact: true }).selectOption('');
    await page.getByLabel('Severity').selectOption('');
    await expect.poll(() => groupTotal()).toBe(findings.length);

    // The duplicate operationId group opens onto its findings; one leads to its endpoint's row, opened and focused.
    const duplicate = groups.filter({ has: page.locator('code.rule', { hasText: /^operation-id-duplicate$/ }) }).first();
    await duplicate.locator('.group-toggle').click();
    const items = duplicate.locator('li.finding');
    const severity = await duplicate.getAttribute('data-severity');
    const expected = findings.filter((f) => f.rule === 'operation-id-duplicate' && f.severity === severity);
    await expect.poll(() => items.count()).toBe(expected.length);
    const target = Number(await items.last().getAttribute('data-endpoint'));
    expect(target).toBe(expected.at(-1)!.endpoint);
    await page.getByLabel(/Only flagged endpoints/).check(); // a filter the jump clears
    await items.last().locator('.link-button').click();
    const row = page.locator(`tbody.endpoint[data-index="${target}"]`);
    await expect.poll(() => row.locator('.row-toggle').getAttribute('aria-expanded')).toBe('true');
    await expect.poll(() => page.evaluate(() => document.activeElement?.closest('tbody')?.getAttribute('data-index'))).toBe(String(target));
    expect(await row.locator('.issues li[data-rule="operation-id-duplicate"]').count()).toBeGreaterThan(0);
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.mouse.move(0, 0);
    await screenshot(page, 'report-findings', scratch, { maxHeight: 1500 });
  });

  it('keeps the endpoint table’s columns when a row opens, and wraps a path only between its segments', async () => {
    await visit(`#/copilots/${reportId}/report`);
    const row = page.locator('tbody.endpoint', { has: page.locator('code', { hasText: LONG_PATH }) });
    await row.waitFor();
    const widths = () => page.locator('table.endpoints > thead th').evaluateAll((ths) => ths.map((th) => Math.round(th.getBoundingClientRect().width)));
    const before = await widths();
    // Where the row and its first line sit in the table, and how tall that line is.
    const place = () =>
      row.evaluate((tbody) => {
        const table = tbody.closest('table')!.getBoundingClientRect();
        const line = tbody.querySelector('tr')!.getBoundingClientRect();
        return { top: Math.round(line.top - table.top), height: Math.round(line.height) };
      });
    const placed = await place();
    await row.locator('.row-toggle').click();
    await row.locator('.endpoint-detail pre.json').first().waitFor();
    expect(await widths()).toEqual(before);
    expect(await place()).toEqual(placed);

    // The long path takes several lines, each segment whole on one of them.
    const lines = await row.locator('code.path-text').evaluate((code) => {
      const tops = new Set([...code.querySelectorAll('.seg')].map((seg) => Math.round(seg.getBoundingClientRect().top)));
      const split = [...code.querySelectorAll('.seg')].filter((seg) => seg.getClientRects().length !== 1).map((seg) => seg.textContent);
      return { lines: tops.size, split };
    });
    expect(lines.split).toEqual([]);
    expect(lines.lines).toBeGreaterThan(1);
    expect(await row.locator('code.path-text').getAttribute('title')).toBe(LONG_PATH);
  });

  it('previews the tool definitions of each platform as the API builds them', async () => {
    const tools = async (platform: string) => (await api('GET', `/backend/api/copilot/${reportId}/tools?platform=${platform}`)).json.tools as any[];
    const [openai, gemini] = [await tools('openai'), await tools('gemini')];
    expect(openai.map((t) => t.name)).not.toEqual(gemini.map((t) => t.name)); // the "." of pets.findByTags
    await visit(`#/copilots/${reportId}/report`);
    await page.locator('details.tools > summary').click();
    const count = page.getByTestId('tools-count');
    await expect.poll(() => count.getAttribute('data-tools-platform')).toBe('openai');
    expect(await count.textContent()).toBe(`${openai.length} tools for OpenAI`);
    expect(await page.locator('li.tool .tool-name').allTextContents()).toEqual(openai.map((t) => t.name));

    await page.getByLabel('Gemini').check();
    await expect.poll(() => count.getAttribute('data-tools-platform')).toBe('gemini');
    await expect.poll(() => page.locator('li.tool .tool-name').allTextContents()).toEqual(gemini.map((t) => t.name));
    expect(await page.locator('li.tool .tool-name', { hasText: 'pets.findByTags' }).count()).toBe(1);

    // The input schema is collapsed; opened, it is the platform's own.
    const first = page.locator('li.tool').first();
    expect(await first.locator('pre.json').count()).toBe(0);
    await first.locator('.tool-schema summary').click();
    expect(JSON.parse((await first.locator('pre.json').textContent())!)).toEqual(gemini[0].parameters);

    await page.getByLabel('Anthropic').check();
    await expect.poll(() => count.getAttribute('data-tools-platform')).toBe('anthropic');
    await page.getByLabel('Name or path contains').fill('review');
    await expect.poll(() => page.locator('li.tool .tool-name').allTextContents()).toEqual(['createReviewComment']);
  });

  it('downloads the fixes as an OpenAPI Overlay file, the key never in a URL', async () => {
    const overlay = (await api('GET', `/backend/api/copilot/${reportId}/fixes`)).json;
    expect(overlay.actions.length).toBeGreaterThan(0);
    await visit(`#/copilots/${reportId}/report`);
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByTestId('download-fixes').click()]);
    expect(download.suggestedFilename()).toBe('report-assistant-fixes.overlay.json');
    const file = JSON.parse(readFileSync((await download.path())!, 'utf8'));
    expect(file.overlay).toBe('1.0.0');
    expect(file).toEqual(overlay);
    expect(requestedUrls.length).toBeGreaterThan(0);
    expect(requestedUrls.filter((url) => url.includes(adminKey))).toEqual([]);
  });

  it('shows the control and bidi characters of a description as escapes: they cannot turn the text around them', async () => {
    const id = await createCopilot('Bidi');
    const doc = {
      openapi: '3.0.3',
      info: { title: 'Bidi', version: '1' },
      servers: [{ url: 'https://bidi.example.com' }],
      paths: {
        '/repos\u202e/x': {
          get: { operationId: 'repos\u202eteg', summary: 'List\u0007 repos', description: 'Lists.\u2066', responses: { 200: { description: 'OK' } } },
        },
      },
    };
    await upload(id, JSON.stringify(doc));
    await visit(`#/copilots/${id}/report`);
    await page.locator('[data-stat="score"]').waitFor();
    await expect.poll(() => page.locator('body').innerText()).toContain('repos\\u202eteg');
    const text = await page.locator('body').innerText();
    expect(text).not.toMatch(/[\u202e\u2066\u0007]/);
    expect(text).toContain('List\\u0007 repos');
  });

  it('keeps a row of a 3,000-character name or operationId to a few lines', async () => {
    const id = await createCopilot('Long names');
    const long = 'x'.repeat(3000);
    const doc = {
      openapi: '3.0.3',
      info: { title: 'Long', version: '1' },
      servers: [{ url: 'https://long.example.com' }],
      paths: { '/long': { get: { operationId: `op${long}`, summary: `Name ${long}`, description: 'Long.', responses: { 200: { description: 'OK' } } } } },
    };
    await upload(id, JSON.stringify(doc));
    await visit(`#/copilots/${id}/report`);
    const row = page.locator('table.endpoints tbody tr').first();
    await row.waitFor();
    // Both cells wrapped the whole text: a row of about 4,850 px.
    expect((await row.boundingBox())!.height).toBeLessThan(200);
    expect(await row.locator('.clamp').first().getAttribute('title')).toBe(`Name ${long}`);
  });

  it('greets a new copilot without an API description with a friendly empty state, not an error', async () => {
    await visit(`#/copilots/${emptyId}/report`);
    await page.getByTestId('report-empty').waitFor();
    expect(await page.getByRole('heading', { name: 'No API description yet' }).count()).toBe(1);
    expect(await page.locator('.notice-error, [role="alert"]').count()).toBe(0);
    await page.getByRole('link', { name: 'Add an API description' }).click();
    await page.getByRole('heading', { name: 'API description' }).waitFor();

    await visit(`#/copilots/${emptyId}/versions`);
    await page.getByTestId('versions-empty').waitFor();
    await page.getByTestId('changes-empty').waitFor();
    expect(await page.locator('.notice-error, [role="alert"]').count()).toBe(0);
    expect(await page.getByRole('button', { name: 'Sync now' }).isDisabled()).toBe(true);
  });

  it('lists two versions after two uploads, with the breaking change first, and downloads a version as stored', async () => {
    await upload(zooId, V1);
    await upload(zooId, V2);
    const versions = (await api('GET', `/backend/api/copilot/${zooId}/swagger/versions`)).json;
    const changes = (await api('GET', `/backend/api/copilot/${zooId}/swagger/changes`)).json;
    expect(versions.map((v: any) => v.version)).toEqual([2, 1]);
    // The API lists the added endpoint first; the page puts the breaking removal first.
    expect(changes.map((c: any) => [c.kind, c.breaking])).toEqual([
      ['endpoint-added', false],
      ['endpoint-removed', true],
    ]);

    await visit(`#/copilots/${zooId}/versions`);
    const rows = page.locator('table.versions tbody tr');
    await expect.poll(() => rows.count()).toBe(2);
    expect(await rows.locator('th').allTextContents()).toEqual(['v2', 'v1']);
    expect(await rows.first().locator('td[data-label="SHA-256"] code').textContent()).toBe(versions[0].sha256.slice(0, 12));
    expect(await rows.first().locator('td[data-label="SHA-256"] code').getAttribute('title')).toBe(versions[0].sha256);
    expect(await rows.first().locator('td[data-label="Source"]').textContent()).toBe('upload');
    expect(await rows.first().locator('td[data-label="Changes"]').textContent()).toContain('1 breaking change');

    const shown = page.locator('li.change-group[data-version="2"] li.change');
    await expect.poll(() => shown.count()).toBe(2);
    expect(await shown.evaluateAll((els) => els.map((el) => [el.getAttribute('data-kind'), el.getAttribute('data-breaking')]))).toEqual([
      ['endpoint-removed', 'true'],
      ['endpoint-added', 'false'],
    ]);
    expect(await shown.first().locator('code.path-text').textContent()).toBe('/keepers');
    await page.mouse.move(0, 0);
    await screenshot(page, 'versions', scratch);
    await page.getByLabel(/Only breaking/).check();
    await expect.poll(() => shown.count()).toBe(1);

    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download version 1' }).click()]);
    expect(download.suggestedFilename()).toBe('api-description-v1.json');
    expect(readFileSync((await download.path())!, 'utf8')).toBe(V1);

    // The report names the changes since the last version and leads here.
    await page.getByRole('link', { name: 'Validation report', exact: true }).click();
    await expect
      .poll(() => page.getByTestId('since-last').textContent())
      .toBe('Since the last version (v1 → v2): 1 breaking change, 1 other · See the changes');
    await page.getByRole('link', { name: 'See the changes' }).click();
    await page.locator('li.change-group[data-version="2"]').waitFor();
  });

  it('saves the sync setting and syncs now from the URL; a read-only key is not offered either', async () => {
    await visit(`#/copilots/${zooId}/versions`);
    await expect.poll(() => page.getByTestId('sync-setting').textContent()).toBe('off');
    expect(await page.getByRole('button', { name: 'Sync now' }).isDisabled()).toBe(true);
    const url = `${origin.origin}/openapi.json`;
    await page.getByLabel('URL of the API description').fill(url);
    await page.getByLabel(/Smart sync/).check();
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByText('Sync settings saved.').waitFor();
    expect((await api('GET', `/backend/api/copilot/${zooId}`)).json).toMatchObject({ smart_sync: 1, swagger_url: url });
    await expect.poll(() => page.getByTestId('sync-setting').textContent()).toBe('on');

    const [answer] = await Promise.all([
      page.waitForResponse((res) => res.url().endsWith(`/copilot/${zooId}/swagger/sync`) && res.request().method() === 'POST'),
      page.getByRole('button', { name: 'Sync now' }).click(),
    ]);
    const result = await answer.json();
    expect(result).toMatchObject({ status: 'changed', version: 3, changes: { breaking: 0, other: 1 } });
    await expect.poll(() => page.getByTestId('sync-result').textContent()).toBe('Recorded version 3 (0 breaking changes, 1 other).');
    const rows = page.locator('table.versions tbody tr');
    await expect.poll(() => rows.count()).toBe(3);
    expect(await rows.first().locator('td[data-label="Source"]').textContent()).toBe(`sync${url}`);
    const state = (await api('GET', `/backend/api/copilot/${zooId}/swagger/sync`)).json;
    expect(state.next_sync_at).toMatch(/^\d{4}-/);
    await expect.poll(() => page.getByTestId('next-sync').textContent()).toBe(`${state.next_sync_at.slice(0, 10)} ${state.next_sync_at.slice(11, 16)} UTC`);
    expect(await page.getByTestId('last-sync').textContent()).toContain('a new version');

    // The same document again: nothing new.
    await page.getByRole('button', { name: 'Sync now' }).click();
    await expect.poll(() => page.getByTestId('sync-result').textContent()).toBe('The document at the URL has not changed since the last version.');
    expect((await api('GET', `/backend/api/copilot/${zooId}/swagger/versions`)).json).toHaveLength(3);

    // A key that may only read sees the state, without the form or the button.
    const viewer = await api('POST', '/backend/api/keys', { scopes: ['copilots:read'], name: 'viewer' });
    expect(viewer.status).toBe(201);
    const other = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    try {
      const p = await other.newPage();
      await signIn(p, base, viewer.json.key);
      await p.goto(`${base}/#/copilots/${zooId}/versions`);
      await expect.poll(() => p.getByTestId('sync-setting').textContent()).toBe('on');
      await p.getByTestId('sync-read-only').waitFor();
      expect(await p.getByRole('button', { name: 'Sync now' }).count()).toBe(0);
      expect(await p.locator('table.versions tbody tr').count()).toBe(3);
    } finally {
      await other.close();
    }
  });

  it('stays light on a large description: findings and tools are rendered a step at a time, and a finding leads to a later page', async () => {
    const paths: Record<string, unknown> = {};
    const N = 3000; // under the answer bound (10 characters per byte of the document)
    for (let i = 0; i < N; i++) {
      // No operationId, no description: several findings on every endpoint.
      paths[`/things/${i}`] = { get: { summary: `Read thing ${i}`, responses: { 200: { description: 'OK' } } } };
    }
    // One header parameter on the last endpoint only: a group of one finding, on the table's last page.
    (paths[`/things/${N - 1}`] as any).get.parameters = [{ name: 'X-Trace', in: 'header', schema: { type: 'string' } }];
    const id = await createCopilot('Three thousand endpoints');
    await upload(id, JSON.stringify({ openapi: '3.0.3', info: { title: 'Big', version: '1' }, servers: [{ url: 'https://big.example.com' }], paths }));
    const findings = (await api('GET', `/backend/api/copilot/${id}/validator`)).json.validations.findings as Array<{ rule: string; endpoint: number }>;
    expect(findings.length).toBeGreaterThan(2 * N);
    const perRule = new Map<string, number>();
    for (const f of findings) perRule.set(f.rule, (perRule.get(f.rule) ?? 0) + 1);
    const largest = Math.max(...perRule.values());

    await visit(`#/copilots/${id}/report`);
    await expect.poll(() => page.getByTestId('findings-count').textContent(), { timeout: 30_000 }).toBe(`${findings.length.toLocaleString('en')} findings`);
    expect(await page.locator('li.finding').count()).toBe(0);
    const group = page.locator('li.finding-group').filter({ has: page.getByTestId('group-count').getByText(largest.toLocaleString('en'), { exact: true }) });
    await group.first().locator('.group-toggle').click();
    expect(await page.locator('li.finding').count()).toBe(50);
    await group
      .first()
      .getByRole('button', { name: /^Show 50 more/ })
      .click();
    expect(await page.locator('li.finding').count()).toBe(100);
    await group.first().locator('.group-toggle').click();

    const header = page.locator('li.finding-group').filter({ has: page.locator('code.rule', { hasText: /^header-parameter-unsupported$/ }) });
    await header.first().locator('.group-toggle').click();
    await header.first().locator('li.finding .link-button').first().click();
    await expect.poll(() => page.getByTestId('endpoint-count').textContent()).toContain(`showing ${(N - 99).toLocaleString('en')}–${N.toLocaleString('en')}`);
    expect(await page.locator(`tbody.endpoint[data-index="${N - 1}"] .row-toggle`).getAttribute('aria-expanded')).toBe('true');

    await page.locator('details.tools > summary').click();
    await expect
      .poll(() => page.getByTestId('tools-count').textContent(), { timeout: 30_000 })
      .toBe(`${N.toLocaleString('en')} tools for OpenAI · showing 1–25`);
    expect(await page.locator('li.tool').count()).toBe(25);
    await page.getByRole('button', { name: 'Next tools →' }).click();
    await expect.poll(() => page.getByTestId('tools-count').textContent()).toBe(`${N.toLocaleString('en')} tools for OpenAI · showing 26–50`);
    expect((await api('DELETE', `/backend/api/copilot/${id}`)).status).toBe(200);
  });

  it('follows the dark theme: no light surface is left on the report or the versions view', async () => {
    const light = async () =>
      page
        .locator('li.change.breaking')
        .first()
        .evaluate((el) => getComputedStyle(el).backgroundColor);
    await visit(`#/copilots/${zooId}/versions`);
    await page.locator('li.change.breaking').first().waitFor();
    const lightBreaking = await light();
    await page.emulateMedia({ colorScheme: 'dark' });
    try {
      for (const route of [`#/copilots/${reportId}/report`, `#/copilots/${emptyId}/report`, `#/copilots/${zooId}/versions`]) {
        await visit(route);
        await page.locator('main h1').waitFor();
        await page.waitForLoadState('networkidle');
        if (route.endsWith(`${reportId}/report`)) {
          await page.locator('li.finding-group .group-toggle').first().click();
          await page.locator('details.tools > summary').click();
          await page.locator('li.tool').first().waitFor();
        }
        expect(await brightSurfaces(page), route).toEqual([]);
      }
      expect(await light()).not.toBe(lightBreaking);
    } finally {
      await page.emulateMedia({ colorScheme: 'light' });
    }
  });

  it('fits a 375 px wide screen: no page scrolls sideways', async () => {
    await page.setViewportSize({ width: 375, height: 812 });
    try {
      for (const route of [`#/copilots/${reportId}/report`, `#/copilots/${emptyId}/report`, `#/copilots/${zooId}/versions`, `#/copilots/${emptyId}/versions`]) {
        await visit(route);
        await page.locator('main h1').waitFor();
        await page.waitForLoadState('networkidle');
        if (route.endsWith(`${reportId}/report`)) {
          // With everything open: a findings group, the tools, a schema and the long path's endpoint.
          await page.locator('li.finding-group .group-toggle').first().click();
          await page.locator('details.tools > summary').click();
          await page.locator('li.tool .tool-schema summary').first().click();
          const long = page.locator('tbody.endpoint', { has: page.locator('code', { hasText: LONG_PATH }) });
          await long.locator('.row-toggle').click();
          await long.locator('.endpoint-detail').waitFor();
        }
        const { scrollWidth, clientWidth } = await horizontalOverflow(page);
        expect(scrollWidth, `page width at ${route}`).toBeLessThanOrEqual(clientWidth);
      }
    } finally {
      await page.setViewportSize({ width: 1280, height: 900 });
    }
    expect(pageErrors).toEqual([]);
  });
});
