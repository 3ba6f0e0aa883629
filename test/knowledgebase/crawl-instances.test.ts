/**
 * Issue 16 §2 with several instances on one database: each runs the crawl job and an ingestion
 * worker; a crawl is started once (a lease), and every page of it is fetched and indexed once.
 */
import { describe, expect, it } from 'vitest';
import { createCopilot } from '../../src/domain/copilots/copilot.service.js';
import { checkCrawlRequest, createCrawl, CrawlRunner, getCrawl } from '../../src/domain/knowledgebase/crawl.js';
import { IngestionWorker } from '../../src/jobs/ingestion-worker.js';
import { startCrawls } from '../../src/jobs/crawl.js';
import type { FetchPolicy } from '../../src/net/guarded-fetch.js';
import { DIALECTS } from '../support/databases.js';
import { linkRows, useTwoInstances, waitUntil } from '../support/knowledge-base.js';

const policy: FetchPolicy = { timeoutMs: 10_000, maxBytes: 1024 * 1024, maxRedirects: 5, allowNetworks: ['127.0.0.0/8', '::1/128'] };
const quiet = { info: () => undefined, warn: () => undefined, error: (obj: unknown) => console.error(obj) };

for (const dialect of DIALECTS) {
  describe(`a crawl with two instances on one database (${dialect})`, () => {
    const instances = useTwoInstances(dialect);
    const { storages, workers, taskThreads } = instances;

    it('is started once, and each of its 30 pages is fetched once and indexed', async () => {
      const { pages } = instances;
      let robots = 0;
      pages.set('/robots.txt', (_req, res) => {
        robots++;
        res.writeHead(200, { 'content-type': 'text/plain' }).end('User-agent: *\nAllow: /\n');
      });
      const paths = Array.from({ length: 30 }, (_, i) => `/multi/p${i}`);
      const body = (title: string, hrefs: string[]) =>
        `<main><p>${title}, a page of a crawl shared by two instances.</p>${hrefs.map((h) => `<a href="${h}">x</a>`).join('')}</main>`;
      pages.set('/multi/', { body: body('Start', paths.slice(0, 10)) });
      // Each page links to the next ten: most links are found more than once.
      for (const [i, p] of paths.entries()) pages.set(p, { body: body(`Page ${i}`, paths.slice(i + 1, i + 11)), delayMs: 5 });
      const bot = (await createCopilot(storages[0]!.db, { name: 'Shared crawl' })).id;
      const crawl = await createCrawl(storages[0]!.db, bot, checkCrawlRequest({ url: pages.url('/multi/') }, policy.allowNetworks));

      const jobs = storages.map((storage, n) => {
        const runner = new CrawlRunner({ storage, fetchPolicy: policy, taskThreads: taskThreads[n]!, maxPendingLinks: 1000 });
        workers.push(
          new IngestionWorker(storage, {
            concurrency: 2,
            pollIntervalMs: 10,
            fetchPolicy: policy,
            logger: quiet,
            taskThreads: taskThreads[n]!,
            crawls: runner,
          }),
        );
        return startCrawls(runner, { intervalMs: 10, logger: quiet });
      });
      for (const w of workers) w.start();
      try {
        const done = await waitUntil(
          async () => {
            const c = await getCrawl(storages[0]!.db, bot, crawl.crawl_id);
            return c.state === 'done' ? c : null;
          },
          'the crawl to finish',
          { timeoutMs: 60_000, intervalMs: 50 },
        );
        expect(done).toMatchObject({ discovered: 31, fetched: 31, indexed: 31, failed: 0 });
      } finally {
        for (const job of jobs) await job.stop();
        for (const w of workers) await w.stop();
      }
      expect(robots).toBe(1);
      for (const p of ['/multi/', ...paths]) expect(pages.count(p), p).toBe(1);
      const rows = await linkRows(storages[0]!, bot);
      expect(rows).toHaveLength(31);
      for (const row of rows) expect(row.status, `${row.url}: ${row.error}`).toBe('indexed');
    });

    it("a crawl that fails to start for the service's own fault is logged as an error with its cause, not only as a client outcome", async () => {
      // A robots.txt PostgreSQL could not store failed crawls there with "could not be started"
      // and a warning that named no cause: nothing told the operator why.
      const { pages } = instances;
      pages.set('/broken/sitemap.xml', { type: 'application/xml', body: '<urlset/>' });
      const logged: Array<{ level: string; obj: Record<string, unknown>; msg: string }> = [];
      const log = (level: string) => (obj: object, msg: string) => logged.push({ level, obj: obj as Record<string, unknown>, msg });
      const cause = new Error('the sitemap reader broke');
      const runner = new CrawlRunner({
        storage: storages[0]!,
        fetchPolicy: policy,
        taskThreads: { ...taskThreads[0]!, sitemapOnThread: async () => Promise.reject(cause) } as unknown as (typeof taskThreads)[number],
        maxPendingLinks: 1000,
        logger: { info: log('info'), warn: log('warn'), error: log('error') },
      });
      const bot = (await createCopilot(storages[0]!.db, { name: 'Broken start' })).id;
      const crawl = await createCrawl(storages[0]!.db, bot, checkCrawlRequest({ sitemap: pages.url('/broken/sitemap.xml') }, policy.allowNetworks));
      expect(await runner.startNext()).toBe(true);
      expect(await getCrawl(storages[0]!.db, bot, crawl.crawl_id)).toMatchObject({ state: 'failed', error: 'The crawl could not be started.' });
      const errors = logged.filter((l) => l.level === 'error');
      expect(errors).toHaveLength(1);
      expect(errors[0]!.obj).toMatchObject({ err: cause, bot_id: bot, crawl_id: crawl.crawl_id });
    });
  });
}
