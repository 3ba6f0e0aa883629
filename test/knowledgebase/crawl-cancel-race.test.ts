/**
 * Issue 16 §2, a crawl's cancel that lands between a page's claim and its fetch: the cancel finds
 * the link claimed and leaves it to its worker, which must then take it out of the queue as the
 * cancel would have, without fetching it. The worker is held right after its claim committed
 * (the crawl hooks it is given wait before the page is looked up), so the race is the same on
 * every run: hold, cancel, release.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Crawl } from '../../src/domain/crawl-wire.js';
import { timestampIn } from '../../src/domain/ids.js';
import type { CrawlHooks } from '../../src/domain/knowledgebase/crawl.js';
import { buildTestApp, type TestApp } from '../support/app.js';
import { DIALECTS } from '../support/databases.js';
import { call, createCopilot, kbPath } from '../support/http.js';
import { crawlOf as crawlOfApp, crawlPath, links, waitUntil } from '../support/knowledge-base.js';
import { PageServer } from '../support/pages.js';

const page = (title: string, hrefs: string[]) =>
  `<!doctype html><html><head><title>${title}</title></head><body><main><h1>${title}</h1>` +
  `<p>${title} is a page of a crawl cancelled at an awkward moment, with enough words to be a passage.</p>` +
  hrefs.map((h) => `<a href="${h}">${h}</a>`).join(' ') +
  '</main></body></html>';

/** The app's crawl hooks, with a claimed job of a chosen URL held on its way to its fetch. */
function heldHooks(hooks: CrawlHooks) {
  let held: { url: string; reached: () => void; released: Promise<void> } | null = null;
  const wrapped: CrawlHooks = {
    async pageOf(...args: Parameters<CrawlHooks['pageOf']>) {
      const hold = held;
      if (hold && args[0].url === hold.url) {
        held = null;
        hold.reached();
        await hold.released;
      }
      return hooks.pageOf(...args);
    },
    examine: hooks.examine.bind(hooks),
    endJob: hooks.endJob.bind(hooks),
    settled: hooks.settled.bind(hooks),
  };
  /** The next job of `url` waits, once claimed, until `release()`; `reached` says it is waiting. */
  const hold = (url: string) => {
    let reached!: () => void;
    const reachedPromise = new Promise<void>((resolve) => (reached = resolve));
    let release!: () => void;
    held = { url, reached, released: new Promise<void>((resolve) => (release = resolve)) };
    return { reached: reachedPromise, release };
  };
  return { hooks: wrapped, hold };
}

for (const dialect of DIALECTS) {
  describe(`a crawl cancelled between a page's claim and its fetch (${dialect})`, () => {
    let t: TestApp;
    let site: PageServer;
    let held: ReturnType<typeof heldHooks>;

    beforeAll(async () => {
      site = await PageServer.start();
      // No worker of the app's own: each test drives one on the held hooks. No crawl job either:
      // each crawl is started by the test (startNext).
      t = await buildTestApp(dialect);
      held = heldHooks(t.services.crawls);
    });
    afterAll(async () => {
      await t?.close();
      await site?.close();
    });

    async function startCrawl(bot: string, url: string): Promise<Crawl> {
      const res = await call(t, 'POST', crawlPath(bot), { payload: { url } });
      expect(res.statusCode, res.body).toBe(202);
      expect(await t.services.crawls.startNext()).toBe(true);
      return res.json() as Crawl;
    }
    const crawlOf = (bot: string, id: string) => crawlOfApp(t, bot, id);

    /** Cancels the crawl while the worker holds the claimed job of `url`; the cancel finds it claimed and leaves it. */
    async function cancelWhileHeld(bot: string, crawl: Crawl, hold: { reached: Promise<void>; release(): void }) {
      await hold.reached;
      try {
        const res = await call(t, 'DELETE', crawlPath(bot, crawl.crawl_id));
        expect(res.statusCode, res.body).toBe(200);
        expect(res.json()).toMatchObject({ state: 'cancelled', queued: 1 });
      } finally {
        hold.release();
      }
    }

    it('a page claimed alone: never requested, its link (the crawl made it) deleted, the crawl counts nothing of it', async () => {
      site.set('/race1/', { body: page('Race one', []) });
      const bot = (await createCopilot(t)).id;
      const crawl = await startCrawl(bot, site.url('/race1/'));
      expect(await crawlOf(bot, crawl.crawl_id)).toMatchObject({ state: 'running', discovered: 1, queued: 1 });
      const worker = t.newWorker({ concurrency: 1, crawls: held.hooks });
      const hold = held.hold(site.url('/race1/'));
      const run = worker.runOne();
      await cancelWhileHeld(bot, crawl, hold);
      expect(await run).toBe(true);

      expect(site.count('/race1/')).toBe(0);
      expect([...(await links(t, bot))!.keys()]).toEqual([]);
      expect(await crawlOf(bot, crawl.crawl_id)).toMatchObject({ state: 'cancelled', discovered: 1, queued: 0, fetched: 0, indexed: 0, failed: 0, skipped: 0 });
    });

    it('a page claimed by the transaction that ended the page before it: never requested; the page before stays indexed', async () => {
      site.set('/race2/', { body: page('Race two', ['a']) });
      site.set('/race2/a', { body: page('Race two A', []) });
      const bot = (await createCopilot(t)).id;
      const hold = held.hold(site.url('/race2/a'));
      const worker = t.newWorker({ concurrency: 1, crawls: held.hooks });
      const crawl = await startCrawl(bot, site.url('/race2/'));
      worker.start();
      await cancelWhileHeld(bot, crawl, hold);
      await waitUntil(async () => [...(await links(t, bot))!.values()].every((l) => l.status !== 'pending'), 'no pending link');
      await worker.stop();

      expect(site.count('/race2/')).toBe(1);
      expect(site.count('/race2/a')).toBe(0);
      const kb = (await links(t, bot))!;
      expect([...kb.keys()]).toEqual([site.url('/race2/')]);
      expect(kb.get(site.url('/race2/'))!.status).toBe('indexed');
      expect(await crawlOf(bot, crawl.crawl_id)).toMatchObject({ state: 'cancelled', discovered: 2, queued: 0, fetched: 1, indexed: 1, failed: 0, skipped: 0 });
    });

    it('a link the bot had indexed, queued again by the crawl: not fetched again, back as it was with its passages', async () => {
      site.set('/race3/', { body: page('Race three', []) });
      const bot = (await createCopilot(t)).id;
      const worker = t.newWorker({ concurrency: 1, crawls: held.hooks });
      expect((await call(t, 'POST', kbPath(bot), { payload: { links: [site.url('/race3/')] } })).statusCode).toBe(202);
      expect(await worker.runOne()).toBe(true);
      const before = (await links(t, bot))!.get(site.url('/race3/'))!;
      expect(before.status).toBe('indexed');

      const crawl = await startCrawl(bot, site.url('/race3/'));
      expect((await links(t, bot))!.get(site.url('/race3/'))!.status).toBe('pending');
      const hold = held.hold(site.url('/race3/'));
      const run = worker.runOne();
      await cancelWhileHeld(bot, crawl, hold);
      expect(await run).toBe(true);

      expect(site.count('/race3/')).toBe(1);
      const after = (await links(t, bot))!.get(site.url('/race3/'))!;
      expect(after).toMatchObject({ status: 'indexed', passages: before.passages, error: null });
      expect(await crawlOf(bot, crawl.crawl_id)).toMatchObject({ state: 'cancelled', discovered: 1, queued: 0, fetched: 0, indexed: 0, failed: 0, skipped: 0 });
    });

    it('a page whose worker died past its last attempt, its crawl cancelled meanwhile: not fetched, the crawl counts nothing of it', async () => {
      site.set('/race4/', { body: page('Race four', []) });
      const bot = (await createCopilot(t)).id;
      const crawl = await startCrawl(bot, site.url('/race4/'));
      // Claimed by a worker that is gone, every attempt spent: the cancel finds it leased and leaves it.
      const lease = (expires: string) =>
        t.storage.db.updateTable('kb_links').set({ lease_owner: 'gone', lease_expires_at: expires, attempts: 3 }).where('bot_id', '=', bot).execute();
      await lease(timestampIn(60_000));
      const res = await call(t, 'DELETE', crawlPath(bot, crawl.crawl_id));
      expect(res.json()).toMatchObject({ state: 'cancelled', queued: 1 });
      // Its lease runs out; the next claim is past the last attempt (3).
      await lease(timestampIn(-1_000));
      expect(await t.newWorker({ concurrency: 1, crawls: t.services.crawls }).runOne()).toBe(true);

      expect(site.count('/race4/')).toBe(0);
      expect([...(await links(t, bot))!.keys()]).toEqual([]);
      expect(await crawlOf(bot, crawl.crawl_id)).toMatchObject({ state: 'cancelled', discovered: 1, queued: 0, fetched: 0, indexed: 0, failed: 0, skipped: 0 });
    });
  });
}
