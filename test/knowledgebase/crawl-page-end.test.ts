/**
 * Issue 16 §2, a crawl's page as its job ends: the page's outcome, the links it found and the
 * crawl's next pages are written in one transaction (one commit per page on the writer instead of
 * three); the links survive a job that ends in failure, and a transaction that rolls back.
 * Statements are held or failed by the query tap (test/support/query-tap.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Crawl } from '../../src/domain/crawl-wire.js';
import { startCrawls } from '../../src/jobs/crawl.js';
import { buildTestApp, type TestApp } from '../support/app.js';
import { DIALECTS } from '../support/databases.js';
import { call, createCopilot, kbPath } from '../support/http.js';
import { crawlFinished, crawlOf as crawlOfApp, crawlPath, links } from '../support/knowledge-base.js';
import { PageServer } from '../support/pages.js';

const page = (title: string, hrefs: string[], words = 1) =>
  `<!doctype html><html><head><title>${title}</title></head><body><main><h1>${title}</h1>` +
  Array.from({ length: words }, (_, i) => `<p>${title} paragraph ${i} says enough about ${title.toLowerCase()} to be a passage of its own.</p>`).join('') +
  hrefs.map((h) => `<a href="${h}">${h}</a>`).join(' ') +
  '</main></body></html>';

for (const dialect of DIALECTS) {
  describe(`a crawl page's job ends in one transaction (${dialect})`, () => {
    let t: TestApp;
    let site: PageServer;
    let crawlJob: ReturnType<typeof startCrawls>;

    beforeAll(async () => {
      site = await PageServer.start();
      // One worker, and at most 3 passages per link: the over-limit page fails after it was read.
      t = await buildTestApp(dialect, { tap: true, worker: { concurrency: 1, maxPassagesPerLink: 3 } });
      crawlJob = startCrawls(t.services.crawls, {
        intervalMs: 20,
        logger: { error: (obj: unknown) => console.error(obj), warn: (obj: unknown) => console.error(obj) },
      });
    });
    afterAll(async () => {
      await crawlJob?.stop();
      await t?.close();
      await site?.close();
    });

    async function startCrawl(bot: string, url: string): Promise<Crawl> {
      const res = await call(t, 'POST', crawlPath(bot), { payload: { url } });
      expect(res.statusCode, res.body).toBe(202);
      return res.json() as Crawl;
    }
    const crawlOf = (bot: string, id: string) => crawlOfApp(t, bot, id);
    const finished = (bot: string, id: string) => crawlFinished(t, bot, id);

    it('while the page is being stored, the crawl shows nothing of it: not fetched, its links not found; then all at once', async () => {
      site.set('/one/', { body: page('One', ['a', 'b']) });
      site.set('/one/a', { body: page('One A', []) });
      site.set('/one/b', { body: page('One B', []) });
      const bot = (await createCopilot(t)).id;
      // The start page's publish (its link made indexed), inside the transaction that ends its job.
      const paused = t.tap.pauseAfter({ kind: 'update', table: 'kb_links' });
      const crawl = await startCrawl(bot, site.url('/one/'));
      await paused.reached;
      try {
        expect(await crawlOf(bot, crawl.crawl_id)).toMatchObject({ state: 'running', discovered: 1, fetched: 0, indexed: 0, queued: 1 });
        expect((await links(t, bot))!.get(site.url('/one/'))!.status).toBe('pending');
      } finally {
        paused.release();
      }
      const done = await finished(bot, crawl.crawl_id);
      expect(done).toMatchObject({ state: 'done', discovered: 3, fetched: 3, indexed: 3, failed: 0 });
    });

    it('a page that fails after it was read (over the passage limit) still adds the links it found', async () => {
      site.set('/two/', { body: page('Two', ['a', 'b'], 80) });
      site.set('/two/a', { body: page('Two A', []) });
      site.set('/two/b', { body: page('Two B', []) });
      const bot = (await createCopilot(t)).id;
      const crawl = await startCrawl(bot, site.url('/two/'));
      const done = await finished(bot, crawl.crawl_id);
      expect(done).toMatchObject({ state: 'done', discovered: 3, fetched: 3, indexed: 2, failed: 1 });
      const kb = (await links(t, bot))!;
      expect(kb.get(site.url('/two/'))).toMatchObject({ status: 'failed' });
      expect(kb.get(site.url('/two/'))!.error).toMatch(/passages per link/);
      for (const p of ['/two/a', '/two/b']) expect(kb.get(site.url(p))!.status).toBe('indexed');
    });

    it('when the transaction that ends the page fails, nothing of it is written there; the page fails and its links are still crawled', async () => {
      site.set('/three/', { body: page('Three', ['a']) });
      site.set('/three/a', { body: page('Three A', []) });
      const bot = (await createCopilot(t)).id;
      // The start page's publish fails: its transaction, with the links it found, rolls back.
      const failed = t.tap.failAfter({ kind: 'update', table: 'kb_links' });
      const crawl = await startCrawl(bot, site.url('/three/'));
      await failed;
      const done = await finished(bot, crawl.crawl_id);
      expect(done).toMatchObject({ state: 'done', discovered: 2, fetched: 2, indexed: 1, failed: 1 });
      const kb = (await links(t, bot))!;
      expect(kb.get(site.url('/three/'))).toMatchObject({ status: 'failed', passages: 0 });
      expect(kb.get(site.url('/three/a'))!.status).toBe('indexed');
      const search = await call(t, 'GET', `${kbPath(bot)}/search?q=three`);
      expect(search.json().results.map((r: { url: string }) => r.url)).toEqual([site.url('/three/a')]);
    });
  });
}
