/**
 * Issue 16 §2: a crawl goes through the fair queue and is polite per host. A crawl of bot A
 * keeps at most HOST_CONCURRENCY of its pages in the queue (one under a Crawl-delay, each due
 * the delay after the one before), so bot B's new link is served at the next claim, however
 * large A's crawl. The worker and the crawl runner are driven step by step, so the order is exact.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HOST_CONCURRENCY } from '../../src/domain/knowledgebase/crawl.js';
import type { IngestionWorker } from '../../src/jobs/ingestion-worker.js';
import { buildTestApp, type TestApp } from '../support/app.js';
import { DIALECTS } from '../support/databases.js';
import { call, createCopilot, kbPath } from '../support/http.js';
import { linkRows, postLinks } from '../support/knowledge-base.js';
import { PageServer } from '../support/pages.js';

const html = (title: string, hrefs: string[]) =>
  `<!doctype html><title>${title}</title><main><p>${title}: a page about fair crawling.</p>${hrefs.map((h) => `<a href="${h}">x</a>`).join('')}</main>`;

for (const dialect of DIALECTS) {
  describe(`crawls through the fair queue (${dialect})`, () => {
    let t: TestApp;
    let site: PageServer;
    let worker: IngestionWorker;
    const arrivals: string[] = [];

    beforeAll(async () => {
      site = await PageServer.start();
      t = await buildTestApp(dialect);
      worker = t.newWorker();
    });
    afterAll(async () => {
      await t?.close();
      await site?.close();
    });

    function serve(path: string, body: string, type = 'text/html') {
      site.set(path, (_req, res) => {
        arrivals.push(path);
        res.writeHead(200, { 'content-type': type }).end(body);
      });
    }
    const pendingOf = async (bot: string) => (await linkRows(t.storage, bot)).filter((r) => r.status === 'pending');

    it("another bot's link is served at the next claim while a large crawl runs; the crawl keeps a few pages in the queue", async () => {
      serve('/robots.txt', 'User-agent: *\nAllow: /\n', 'text/plain');
      const pages = Array.from({ length: 20 }, (_, i) => `/fair/p${i}`);
      serve('/fair/', html('Fair start', pages));
      for (const p of pages) serve(p, html(`Fair ${p}`, []));
      const [a, b] = [(await createCopilot(t, { name: 'Crawling tenant' })).id, (await createCopilot(t, { name: 'Quiet tenant' })).id];
      const res = await call(t, 'POST', `${kbPath(a)}/crawl`, { payload: { url: site.url('/fair/') } });
      expect(res.statusCode, res.body).toBe(202);
      expect(await t.services.crawls.startNext()).toBe(true);
      expect((await pendingOf(a)).map((r) => new URL(r.url).pathname)).toEqual(['/fair/']);

      arrivals.length = 0;
      expect(await worker.runOne()).toBe(true);
      expect(arrivals).toEqual(['/fair/']);
      // 20 pages found: the first HOST_CONCURRENCY of them are in the queue, the rest wait.
      expect((await pendingOf(a)).length).toBe(HOST_CONCURRENCY);

      const linkB = site.url('/quiet/only');
      serve('/quiet/only', html('Quiet', []));
      expect((await postLinks(t, b, [linkB])).statusCode).toBe(202);
      arrivals.length = 0;
      expect(await worker.runOne()).toBe(true);
      expect(arrivals).toEqual(['/quiet/only']);

      // Then A's crawl goes on to the end, never more than HOST_CONCURRENCY of its pages queued.
      while (await worker.runOne()) expect((await pendingOf(a)).length).toBeLessThanOrEqual(HOST_CONCURRENCY);
      expect([...arrivals.slice(1)].sort()).toEqual([...pages].sort());
      const crawl = (await call(t, 'GET', `${kbPath(a)}/crawls/${res.json().crawl_id}`)).json();
      expect(crawl).toMatchObject({ state: 'done', discovered: 21, fetched: 21, indexed: 21 });
    });

    it('bots take turns while both crawl', async () => {
      const [a, b] = [(await createCopilot(t, { name: 'Crawler A' })).id, (await createCopilot(t, { name: 'Crawler B' })).id];
      for (const name of ['ta', 'tb']) {
        const pages = Array.from({ length: 6 }, (_, i) => `/${name}/p${i}`);
        serve(`/${name}/`, html(`Turns ${name}`, pages));
        for (const p of pages) serve(p, html(`Turns ${p}`, []));
      }
      for (const [bot, name] of [
        [a, 'ta'],
        [b, 'tb'],
      ] as const) {
        expect((await call(t, 'POST', `${kbPath(bot)}/crawl`, { payload: { url: site.url(`/${name}/`) } })).statusCode).toBe(202);
        expect(await t.services.crawls.startNext()).toBe(true);
      }
      arrivals.length = 0;
      while (await worker.runOne());
      expect(arrivals).toHaveLength(14);
      // Served alternately: no two pages of one crawl in a row while the other has one due.
      const botOf = (path: string) => path.split('/')[1];
      for (let i = 0; i + 1 < 12; i += 2) expect(new Set([botOf(arrivals[i]!), botOf(arrivals[i + 1]!)]).size, arrivals.join(' ')).toBe(2);
    });

    it("the bot's pending links limit (KB_MAX_PENDING_LINKS_PER_BOT) holds the crawl's pages back until links are indexed", async () => {
      const limited = await buildTestApp(dialect, { env: { KB_MAX_PENDING_LINKS_PER_BOT: '2' } });
      try {
        const w = limited.newWorker();
        serve('/quota/', html('Quota start', ['/quota/a', '/quota/b', '/quota/c']));
        for (const p of ['/quota/a', '/quota/b', '/quota/c', '/quota/own1', '/quota/own2']) serve(p, html(`Quota ${p}`, []));
        const bot = (await createCopilot(limited)).id;
        expect((await postLinks(limited, bot, [site.url('/quota/own1'), site.url('/quota/own2')])).statusCode).toBe(202);
        const res = await call(limited, 'POST', `${kbPath(bot)}/crawl`, { payload: { url: site.url('/quota/') } });
        expect(await limited.services.crawls.startNext()).toBe(true);
        // Two links pending already: the crawl queues none of its pages.
        const pending = async () => (await linkRows(limited.storage, bot)).filter((r) => r.status === 'pending').map((r) => new URL(r.url).pathname);
        expect((await pending()).sort()).toEqual(['/quota/own1', '/quota/own2']);
        const crawlNow = async () => (await call(limited, 'GET', `${kbPath(bot)}/crawls/${res.json().crawl_id}`)).json();
        expect(await crawlNow()).toMatchObject({ state: 'running', discovered: 1, queued: 1 });
        // As the bot's links are indexed, the crawl goes on (the sweep queues what the limit held back) and never passes the limit.
        for (;;) {
          await limited.services.crawls.sweep();
          expect((await pending()).length).toBeLessThanOrEqual(2);
          if (!(await w.runOne())) break;
        }
        expect(await crawlNow()).toMatchObject({ state: 'done', indexed: 4 });
      } finally {
        await limited.close();
      }
    });

    it("robots.txt's Crawl-delay: one page of the crawl in the queue at a time, each due the delay after the one before ended", async () => {
      const host = await PageServer.start();
      try {
        host.set('/robots.txt', { type: 'text/plain', body: 'User-agent: copilot-management-service\nCrawl-delay: 30\n' });
        host.set('/slow/', { body: html('Slow start', ['/slow/a', '/slow/b']) });
        host.set('/slow/a', { body: html('Slow a', []) });
        host.set('/slow/b', { body: html('Slow b', []) });
        const bot = (await createCopilot(t)).id;
        const res = await call(t, 'POST', `${kbPath(bot)}/crawl`, { payload: { url: host.url('/slow/') } });
        expect(await t.services.crawls.startNext()).toBe(true);
        const crawl = (await call(t, 'GET', `${kbPath(bot)}/crawls/${res.json().crawl_id}`)).json();
        expect(crawl).toMatchObject({ state: 'running', crawl_delay_ms: 30_000 });
        const [start] = await pendingOf(bot);
        // The first page is claimed a while after it was due (a busy worker, the poll interval).
        await new Promise((resolve) => setTimeout(resolve, 1500));
        const claimedAt = Date.now();
        expect(await worker.runOne()).toBe(true);
        expect(host.count('/slow/')).toBe(1);
        const pending = await pendingOf(bot);
        expect(pending).toHaveLength(1);
        // The next page is scheduled 30 s after the first ended (not after it was due, which left
        // 28.5 s here): the worker will not claim it before.
        expect(Date.parse(pending[0]!.run_after) - claimedAt).toBeGreaterThanOrEqual(30_000);
        expect(Date.parse(pending[0]!.run_after) - Date.parse(start!.run_after)).toBeGreaterThanOrEqual(31_500);
        expect(await worker.runOne()).toBe(false);
        expect(host.count('/slow/a') + host.count('/slow/b')).toBe(0);
        expect((await call(t, 'DELETE', `${kbPath(bot)}/crawls/${crawl.crawl_id}`)).json().state).toBe('cancelled');
        expect(await pendingOf(bot)).toHaveLength(0);
      } finally {
        await host.close();
      }
    });
  });
}
