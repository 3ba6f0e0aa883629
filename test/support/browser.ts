/**
 * What the Chromium tests share: the browser's path, a dashboard build that is current, a
 * headless launch, and screenshots that refresh docs/screenshots/ only when asked
 * (SCREENSHOTS=1) or when one is missing there.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { loadConfig } from '../../src/config.js';
import type { RunningService } from '../../src/server.js';
import { REPO_ROOT } from './build.js';
import { builtModule } from './built-sources.js';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const haveChromium = existsSync(CHROMIUM);

/** Fails in CI without a browser; elsewhere warns that `what` is skipped. Returns whether to run. */
export function chromiumOrSkip(what: string): boolean {
  if (!haveChromium && process.env.CI) {
    throw new Error(`Chromium is not installed at ${CHROMIUM}; CI requires it for ${what} (apt-get install -y chromium).`);
  }
  if (!haveChromium) console.warn(`Skipping ${what}: no Chromium at ${CHROMIUM} (apt-get install -y chromium).`);
  return haveChromium;
}

/** Builds the dashboard when web/dist is missing or older than its sources (`npm test` builds it first). */
export function ensureDashboardBuilt(): void {
  const web = path.join(REPO_ROOT, 'web');
  const built = path.join(web, 'dist/index.html');
  const newest = (dir: string): number =>
    readdirSync(dir, { withFileTypes: true }).reduce((max, entry) => {
      const full = path.join(dir, entry.name);
      return Math.max(max, entry.isDirectory() ? newest(full) : statSync(full).mtimeMs);
    }, 0);
  const sources = Math.max(newest(path.join(web, 'src')), newest(path.join(web, 'public')), statSync(path.join(web, 'index.html')).mtimeMs);
  if (existsSync(built) && statSync(built).mtimeMs >= sources) return;
  execFileSync(process.execPath, [path.join(REPO_ROOT, 'node_modules/vite/bin/vite.js'), 'build', '--config', 'web/vite.config.ts', '--logLevel', 'warn'], {
    cwd: REPO_ROOT,
    stdio: 'inherit',
  });
}

/** A headless Chromium; `extraArgs` follow the usual switches (e.g. a host resolver rule). */
export function launchChromium(extraArgs: string[] = []): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--disable-quic',
      '--no-first-run',
      ...extraArgs,
    ],
  });
}

/**
 * Screenshots: to docs/screenshots/ with SCREENSHOTS=1 or when the file is missing there, else to `scratch`.
 * `maxHeight` clips the picture to the top of the page at the viewport's width.
 */
export async function screenshot(page: Page, name: string, scratch: string, options: { fullPage?: boolean; maxHeight?: number } = {}): Promise<void> {
  const target = path.join(REPO_ROOT, 'docs/screenshots', `${name}.png`);
  const file = process.env.SCREENSHOTS === '1' || !existsSync(target) ? target : path.join(scratch, `${name}.png`);
  mkdirSync(path.dirname(file), { recursive: true });
  const width = page.viewportSize()?.width ?? 1280;
  await page.screenshot({
    path: file,
    fullPage: options.fullPage ?? true,
    ...(options.maxHeight && { clip: { x: 0, y: 0, width, height: options.maxHeight } }),
  });
}

/** A new tab of `context` with the tests' default timeout, its errors collected into `errors`. */
export async function openPage(context: BrowserContext, errors: string[]): Promise<Page> {
  const page = await context.newPage();
  page.setDefaultTimeout(15_000);
  collectPageErrors(page, errors);
  return page;
}

/** Signs `page` in to the dashboard at `base` with `key` and waits for the copilots screen. */
export async function signIn(page: Page, base: string, key: string): Promise<void> {
  await page.goto(`${base}/`);
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Copilots', level: 1 }).waitFor();
}

/** Collects uncaught errors and console errors of a page (4xx answers the UI shows itself are not errors). */
export function collectPageErrors(page: Page, into: string[]): void {
  page.on('pageerror', (err) => into.push(err.message));
  page.on('console', (msg) => {
    if (msg.type() === 'error' && !msg.text().startsWith('Failed to load resource')) into.push(msg.text());
  });
}

/** The page scrolls sideways when its content is wider than its viewport. */
export async function horizontalOverflow(page: Page): Promise<{ scrollWidth: number; clientWidth: number }> {
  return page.evaluate(() => ({ scrollWidth: document.documentElement.scrollWidth, clientWidth: document.documentElement.clientWidth }));
}

/**
 * The service's build (global-setup.ts; its task threads need JavaScript) in process on SQLite in `dataDir`,
 * on a free loopback port, with `env` on top: the service, its address and the bootstrap admin key.
 */
export async function startE2eService(dataDir: string, env: Record<string, string> = {}): Promise<{ service: RunningService; base: string; adminKey: string }> {
  const { startService } = (await import(builtModule('server.js').href)) as typeof import('../../src/server.js');
  const service = await startService(loadConfig({ DATA_DIR: dataDir, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent', ...env }));
  return {
    service,
    base: service.address.replace('://0.0.0.0', '://127.0.0.1'),
    adminKey: readFileSync(path.join(dataDir, 'bootstrap-admin-key'), 'utf8').trim(),
  };
}

/** One API call with `key`: a string body is sent as it is (a raw document), anything else as JSON. */
export async function callApi(
  base: string,
  key: string,
  method: string,
  url: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; json: any }> {
  const res = await fetch(`${base}${url}`, {
    method,
    headers: {
      authorization: `Bearer ${key}`,
      ...(body !== undefined && typeof body !== 'string' && { 'content-type': 'application/json' }),
      ...headers,
    },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, json: text && /json/.test(res.headers.get('content-type') ?? '') ? JSON.parse(text) : text };
}

/**
 * Elements under `main` with a light, mostly opaque background: on a dark theme, a colour
 * written down instead of a theme variable. Named `tag.class` for the failure message.
 */
export function brightSurfaces(page: Page): Promise<string[]> {
  return page.evaluate(() =>
    [...document.querySelectorAll('main *')]
      .filter((el) => {
        const m = /rgba?\((\d+), (\d+), (\d+)(?:, ([\d.]+))?\)/.exec(getComputedStyle(el).backgroundColor);
        return m && (m[4] === undefined || Number(m[4]) > 0.5) && Number(m[1]) + Number(m[2]) + Number(m[3]) > 600;
      })
      .map((el) => `${el.tagName.toLowerCase()}.${el.className}`),
  );
}
