/**
 * Issue 16 §2, crawls: a local site on loopback crawled from a start URL (links within its origin
 * and path prefix, depth, budget, include/exclude, robots.txt, canonical duplicates) or from a
 * sitemap index pointing at a gzipped sitemap; cancel; the crawl's pages are ordinary links.
 */
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Crawl } from '../../src/domain/crawl-wire.js';
import { FINISHED_PAGES_KEPT_MS } from '../../src/domain/knowledgebase/crawl.js';
import { startCrawls } from '../../src/jobs/crawl.js';
import { buildTestApp, type TestApp } from '../support/app.js';
import { DIALECTS } from '../support/databases.js';
import { call, createCopilot, kbPath } from '../support/http.js';
import { crawlFinished, crawlOf as crawlOfApp, crawlPath, links, waitUntil } from '../support/knowledge-base.js';
import { PageServer } from '../support/pages.js';

const page = (title: string, hrefs: string[], extra = '') =>
  `<!doctype html><html><head><title>${title}</title>${extra}</head><body><main><h1>${title}</h1>` +
  `<p>${title} explains the crawler's behaviour in enough words to be a passage of its own, about ${title.toLowerCase()}.</p>` +
  hrefs.map((h) => `<a href="${h}">${h}</a>`).join(' ') +
  '</main></body></html>';

for (const dialect of DIALECTS) {
  describe(`crawls (${dialect})`, () => {
    let t: TestApp;
    let site: PageServer;
    let other: PageServer;
    let crawlJob: ReturnType<typeof startCrawls>;

    beforeAll(async () => {
      site = await PageServer.start();
      other = await PageServer.start();
      t = await buildTestApp(dialect, { worker: true });
      crawlJob = startCrawls(t.services.crawls, {
        intervalMs: 20,
        logger: { error: (obj: unknown) => console.error(obj), warn: (obj: unknown) => console.error(obj) },
      });
    });
    afterAll(async () => {
      await crawlJob?.stop();
      await t?.close();
      await site?.close();
      await other?.close();
    });

    async function startCrawl(bot: string, body: Record<string, unknown>): Promise<Crawl> {
      const res = await call(t, 'POST', crawlPath(bot), { payload: body });
      expect(res.statusCode, res.body).toBe(202);
      return res.json() as Crawl;
    }
    const crawlOf = (bot: string, id: string) => crawlOfApp(t, bot, id);
    const finished = (bot: string, id: string) => crawlFinished(t, bot, id);

    it('follows links within the origin and path prefix, to the depth; honours robots.txt and canonical links; each page indexed once', async () => {
      const root = '/site1';
      site.set('/robots.txt', {
        type: 'text/plain',
        body: `User-agent: *\nDisallow: ${root}/docs/private\n\nUser-agent: copilot-management-service\nDisallow: ${root}/docs/secret\nAllow: /\n`,
      });
      site.set(`${root}/docs/`, {
        body: page('Start', [
          'a',
          'b?x=1#frag',
          `${root}/docs/dup`,
          `${root}/docs/private/p`,
          `${root}/docs/secret`,
          `${root}/outside`,
          `${other.origin}/elsewhere`,
          'mailto:someone@example.com',
        ]),
      });
      site.set(`${root}/docs/a`, { body: page('Page A', ['a/deep', './']) });
      site.set(`${root}/docs/b`, { body: page('Page B', [`${root}/docs/a`]) });
      // A duplicate of A: its canonical link names A.
      site.set(`${root}/docs/dup`, { body: page('Page A copy', [], `<link rel="canonical" href="${site.url(`${root}/docs/a`)}">`) });
      site.set(`${root}/docs/a/deep`, { body: page('Deep', ['deeper']) });
      site.set(`${root}/docs/a/deeper`, { body: page('Deeper', []) });
      site.set(`${root}/docs/private/p`, { body: page('Private', []) });
      site.set(`${root}/docs/secret`, { body: page('Secret', []) });
      site.set(`${root}/outside`, { body: page('Outside', []) });
      other.set('/elsewhere', { body: page('Elsewhere', []) });
      const bot = (await createCopilot(t)).id;

      const queued = await startCrawl(bot, { url: site.url(`${root}/docs/`), max_depth: 2 });
      expect(queued).toMatchObject({ bot_id: bot, url: site.url(`${root}/docs/`), sitemap: null, max_depth: 2, max_pages: 500, state: 'queued' });
      const done = await finished(bot, queued.crawl_id);

      const b = site.url(`${root}/docs/b?x=1`);
      // The group naming the service applies, not `*` (RFC 9309): /docs/private is allowed, /docs/secret is not.
      const expected = [`${root}/docs/`, `${root}/docs/a`, `${root}/docs/a/deep`, `${root}/docs/private/p`].map((p) => site.url(p)).concat(b);
      const kb = (await links(t, bot))!;
      expect([...kb.keys()].sort()).toEqual([...expected].sort());
      for (const link of kb.values()) expect(link.status, `${link.url}: ${link.error}`).toBe('indexed');
      expect(done).toMatchObject({ state: 'done', discovered: 6, fetched: 6, indexed: 5, failed: 0, skipped: 1, blocked: 1, queued: 0, error: null });
      expect(done.finished_at).not.toBeNull();
      // Depth 2 reaches /docs/a/deep (depth 2) but not /docs/a/deeper (3).
      expect(site.count(`${root}/docs/a/deeper`)).toBe(0);
      expect(site.count(`${root}/docs/secret`)).toBe(0);
      expect(site.count(`${root}/outside`)).toBe(0);
      expect(other.count('/elsewhere')).toBe(0);
      // Each page fetched once; the canonical duplicate fetched, not indexed.
      for (const p of ['/docs/', '/docs/a', '/docs/b', '/docs/dup', '/docs/a/deep']) expect(site.count(`${root}${p}`), p).toBe(1);
      expect(kb.has(site.url(`${root}/docs/dup`))).toBe(false);

      // The crawl's pages are ordinary links: search finds them, delete removes them.
      const search = await call(t, 'GET', `${kbPath(bot)}/search?q=deep`);
      expect(search.json().results.map((r: { url: string }) => r.url)).toContain(site.url(`${root}/docs/a/deep`));
      const del = await call(t, 'DELETE', kbPath(bot), { payload: { links: [site.url(`${root}/docs/a/deep`)] } });
      expect(del.json().deleted_links).toEqual([site.url(`${root}/docs/a/deep`)]);

      // The list shows it, newest first.
      const list = await call(t, 'GET', `${kbPath(bot)}/crawls`);
      expect(list.statusCode).toBe(200);
      expect(list.json().crawls.map((c: Crawl) => c.crawl_id)).toEqual([queued.crawl_id]);
    });

    it('stops at the budget, and include/exclude patterns choose the pages', async () => {
      const root = '/site2';
      const hrefs = Array.from({ length: 8 }, (_, i) => `${root}/p${i}`);
      site.set(`${root}/`, { body: page('Index two', [...hrefs, `${root}/skip/x`, `${root}/guide/y`]) });
      for (const h of [...hrefs, `${root}/skip/x`, `${root}/guide/y`]) site.set(h, { body: page(`Page ${h}`, []) });
      const bot = (await createCopilot(t)).id;
      const budget = await finished(bot, (await startCrawl(bot, { url: site.url(`${root}/`), max_pages: 4 })).crawl_id);
      expect(budget).toMatchObject({ state: 'done', discovered: 4, fetched: 4, indexed: 4 });
      expect((await links(t, bot))!.size).toBe(4);
      const fetched = hrefs.filter((h) => site.count(h) > 0);
      expect(fetched).toHaveLength(3); // the start page and the first three it links to

      const bot2 = (await createCopilot(t)).id;
      const patterned = await finished(
        bot2,
        (await startCrawl(bot2, { url: site.url(`${root}/`), include: [`${root}/$`, `${root}/p*`, `${root}/guide/`], exclude: [`${root}/p1$`, '*/p2'] }))
          .crawl_id,
      );
      const kb = [...(await links(t, bot2))!.keys()].map((u) => new URL(u).pathname).sort();
      expect(kb).toEqual([`${root}/`, `${root}/guide/y`, `${root}/p0`, `${root}/p3`, `${root}/p4`, `${root}/p5`, `${root}/p6`, `${root}/p7`]);
      expect(patterned.indexed).toBe(8);
      expect(site.count(`${root}/skip/x`)).toBe(0);
    });

    it('an hour after it finished, the crawl job deletes the crawl’s pages; its progress is still answered', async () => {
      const root = '/site-kept';
      site.set(`${root}/`, { body: page('Kept index', [`${root}/a`, `${root}/b`]) });
      for (const h of [`${root}/a`, `${root}/b`]) site.set(h, { body: page(`Page ${h}`, []) });
      const bot = (await createCopilot(t)).id;
      const done = await finished(bot, (await startCrawl(bot, { url: site.url(`${root}/`) })).crawl_id);
      expect(done).toMatchObject({ state: 'done', discovered: 3, fetched: 3, indexed: 3 });
      const pages = () => t.storage.db.selectFrom('crawl_pages').select('url').where('crawl_id', '=', done.crawl_id).execute();
      await t.services.crawls.sweep();
      expect(await pages()).toHaveLength(3); // finished just now: kept
      const longAgo = new Date(Date.parse(done.finished_at!) - FINISHED_PAGES_KEPT_MS - 1000).toISOString().replace('Z', '000Z');
      await t.storage.db.updateTable('crawls').set({ finished_at: longAgo }).where('id', '=', done.crawl_id).execute();
      await waitUntil(async () => ((await pages()).length === 0 ? true : null), 'the crawl job to delete the pages', { timeoutMs: 10_000 });
      expect(await crawlOf(bot, done.crawl_id)).toEqual({ ...done, finished_at: longAgo });
    });

    it('reads a sitemap index pointing at a gzipped sitemap (and a plain one)', async () => {
      const root = '/site3';
      const urlset = (paths: string[]) =>
        `<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${paths
          .map((p) => `<url><loc>${site.url(p)}</loc><lastmod>2026-01-01</lastmod></url>`)
          .join('')}</urlset>`;
      site.set(`${root}/sitemap-index.xml`, {
        type: 'application/xml',
        body: `<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><sitemap><loc>${site.url(`${root}/one.xml.gz`)}</loc></sitemap><sitemap><loc>${site.url(`${root}/two.xml`)}</loc></sitemap><sitemap><loc>${other.url('/foreign.xml')}</loc></sitemap></sitemapindex>`,
      });
      site.set(`${root}/one.xml.gz`, { type: 'application/x-gzip', body: zlib.gzipSync(urlset([`${root}/a`, `${root}/b`, `${root}/private/c`])) });
      site.set(`${root}/two.xml`, {
        type: 'text/xml',
        body: urlset([`${root}/d`, `${root}/a`]).replace(`${site.url(`${root}/d`)}`, `${site.url(`${root}/d`)}`),
      });
      other.set('/foreign.xml', { type: 'text/xml', body: urlset(['/x']) });
      site.set('/robots.txt', { type: 'text/plain', body: `User-agent: *\nDisallow: ${root}/private\n` });
      for (const p of ['/a', '/b', '/d', '/private/c']) site.set(`${root}${p}`, { body: page(`Sitemap page ${p}`, [`${root}/linked-not-followed`]) });
      site.set(`${root}/linked-not-followed`, { body: page('Not followed', []) });
      const bot = (await createCopilot(t)).id;
      const queued = await startCrawl(bot, { sitemap: site.url(`${root}/sitemap-index.xml`) });
      expect(queued).toMatchObject({ url: null, sitemap: site.url(`${root}/sitemap-index.xml`), max_depth: 0 });
      const done = await finished(bot, queued.crawl_id);
      expect(done).toMatchObject({ state: 'done', discovered: 3, indexed: 3, blocked: 1 });
      expect([...(await links(t, bot))!.keys()].sort()).toEqual([`${root}/a`, `${root}/b`, `${root}/d`].map((p) => site.url(p)));
      expect(other.count('/foreign.xml')).toBe(0);
      expect(site.count(`${root}/linked-not-followed`)).toBe(0);
      expect(site.count(`${root}/private/c`)).toBe(0);
    });

    it('a sitemap index whose sitemaps are indexes themselves, or cannot be read, fails saying so, not done with no page and no word (outbound sweep)', async () => {
      const root = '/site-nested';
      const index = (locs: string[]) =>
        `<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${locs.map((l) => `<sitemap><loc>${site.url(l)}</loc></sitemap>`).join('')}</sitemapindex>`;
      site.set(`${root}/index.xml`, { type: 'application/xml', body: index([`${root}/inner-1.xml`, `${root}/inner-2.xml`, `${root}/gone.xml`]) });
      site.set(`${root}/inner-1.xml`, { type: 'application/xml', body: index([`${root}/deep.xml`]) });
      site.set(`${root}/inner-2.xml`, { type: 'application/xml', body: index([`${root}/deep.xml`]) });
      const bot = (await createCopilot(t)).id;
      const done = await finished(bot, (await startCrawl(bot, { sitemap: site.url(`${root}/index.xml`) })).crawl_id);
      expect(done).toMatchObject({ state: 'failed', discovered: 0 });
      expect(done.error).toMatch(/3 of its sitemaps could not be read/);
    });

    it('a crawl that finds a link the bot has already refreshes it: still one link, indexed once', async () => {
      const root = '/site4';
      site.set(`${root}/`, { body: page('Four', ['kept']) });
      site.set(`${root}/kept`, { body: page('Kept', []) });
      const bot = (await createCopilot(t)).id;
      expect((await call(t, 'POST', kbPath(bot), { payload: { links: [site.url(`${root}/kept`)] } })).statusCode).toBe(202);
      await waitUntil(async () => (await links(t, bot))!.get(site.url(`${root}/kept`))?.status === 'indexed', 'the link to be indexed');
      const done = await finished(bot, (await startCrawl(bot, { url: site.url(`${root}/`) })).crawl_id);
      expect(done).toMatchObject({ state: 'done', indexed: 2 });
      const kb = (await links(t, bot))!;
      expect(kb.size).toBe(2);
      expect(kb.get(site.url(`${root}/kept`))!.status).toBe('indexed');
      const rows = await t.storage.db.selectFrom('kb_passages').select('link_id').where('bot_id', '=', bot).execute();
      expect(new Set(rows.map((r) => r.link_id)).size).toBe(2);
    });

    it('a redirect to a page in scope is indexed once under its target; noindex is not indexed; a canonical outside the scope is ignored', async () => {
      const root = '/site7';
      site.set('/robots.txt', { type: 'text/plain', body: 'User-agent: *\nAllow: /\n' });
      site.set(`${root}/`, { body: page('Seven', ['old', 'target', 'hidden', 'foreign', 'away']) });
      site.set(`${root}/old`, (_req, res) => {
        res.writeHead(301, { location: `${root}/target` }).end();
      });
      site.set(`${root}/away`, (_req, res) => {
        res.writeHead(302, { location: '/elsewhere/page' }).end();
      });
      site.set('/elsewhere/page', { body: page('Elsewhere', []) });
      site.set(`${root}/target`, { body: page('Target', []) });
      site.set(`${root}/hidden`, { body: page('Hidden', ['target'], '<meta name="robots" content="noindex">') });
      site.set(`${root}/foreign`, { body: page('Foreign', [], `<link rel="canonical" href="${other.url('/copy')}">`) });
      const bot = (await createCopilot(t)).id;
      const done = await finished(bot, (await startCrawl(bot, { url: site.url(`${root}/`) })).crawl_id);
      const kb = [...(await links(t, bot))!.keys()].map((u) => new URL(u).pathname).sort();
      expect(kb).toEqual([`${root}/`, `${root}/foreign`, `${root}/target`]);
      // /old (a redirect to /target), /hidden (noindex) and /away (out of scope) were fetched and not indexed.
      expect(done).toMatchObject({ state: 'done', indexed: 3, skipped: 3, failed: 0 });
      expect(site.count(`${root}/target`)).toBe(2); // once through /old's redirect, once itself
      expect(other.count('/copy')).toBe(0);
    });

    it('a robots.txt holding U+0000 is kept as any other: the crawl runs on both databases', async () => {
      // The crawl keeps the site's robots.txt in a text column; PostgreSQL refuses U+0000 there
      // (the crawl failed as "could not be started" on PostgreSQL only).
      const root = '/site8';
      site.set('/robots.txt', { type: 'text/plain', body: `User-agent: *\nDisallow: ${root}/private\u0000\nAllow: /\n` });
      site.set(`${root}/`, { body: page('Eight', ['next']) });
      site.set(`${root}/next`, { body: page('Next', []) });
      const bot = (await createCopilot(t)).id;
      const done = await finished(bot, (await startCrawl(bot, { url: site.url(`${root}/`) })).crawl_id);
      expect(done).toMatchObject({ state: 'done', indexed: 2, failed: 0 });
      const stored = await t.storage.db.selectFrom('crawls').select('robots_txt').where('id', '=', done.crawl_id).executeTakeFirstOrThrow();
      expect(stored.robots_txt).toContain(`Disallow: ${root}/private\ufffd`);
    });

    it('a robots.txt that disallows the start URL fails the crawl; a 404 robots.txt allows everything', async () => {
      site.set('/robots.txt', { type: 'text/plain', body: 'User-agent: *\nDisallow: /site6/\n' });
      site.set('/site6/start', { body: page('Blocked start', []) });
      const bot = (await createCopilot(t)).id;
      const blocked = await finished(bot, (await startCrawl(bot, { url: site.url('/site6/start') })).crawl_id);
      expect(blocked.state).toBe('failed');
      expect(blocked.error).toMatch(/robots\.txt disallows the start URL/);
      expect((await links(t, bot))?.size ?? 0).toBe(0);
      expect(site.count('/site6/start')).toBe(0);
      other.set('/free/', { body: page('Free', []) });
      const free = await finished(bot, (await startCrawl(bot, { url: other.url('/free/') })).crawl_id);
      expect(free).toMatchObject({ state: 'done', indexed: 1 });
    });

    it('a robots.txt whose rules would cost seconds a URL to check fails the crawl, and its start URL is never checked against them', async () => {
      const rules = Array.from({ length: 400 }, (_, i) => `Disallow: /*${'a*'.repeat(24)}x${i}`).join('\n');
      const heavy = await PageServer.start();
      try {
        heavy.set('/robots.txt', { type: 'text/plain', body: `User-agent: *\n${rules}\n` });
        heavy.set('/docs/', { body: page('Heavy', []) });
        const bot = (await createCopilot(t)).id;
        const done = await finished(bot, (await startCrawl(bot, { url: heavy.url('/docs/') })).crawl_id);
        expect(done.state).toBe('failed');
        expect(done.error).toMatch(/^The site's robots\.txt holds \d+ characters of rules after a "\*", more than the 16384 the service reads/);
        expect(heavy.count('/docs/')).toBe(0);
      } finally {
        await heavy.close();
      }
    });

    it('a robots.txt larger than MAX_DOCUMENT_BYTES is read to its first 500 KiB, not a failure', async () => {
      const big = await PageServer.start();
      try {
        const padding = '# a comment line of the robots.txt\n'.repeat(Math.ceil((26 * 1024 * 1024) / 36));
        big.set('/robots.txt', { type: 'text/plain', body: `User-agent: *\nDisallow: /r/private\n${padding}` });
        big.set('/r/', { body: page('Root', ['private/x', 'ok']) });
        big.set('/r/ok', { body: page('Ok', []) });
        big.set('/r/private/x', { body: page('Private', []) });
        const bot = (await createCopilot(t)).id;
        const done = await finished(bot, (await startCrawl(bot, { url: big.url('/r/') })).crawl_id);
        expect(done).toMatchObject({ state: 'done', indexed: 2, blocked: 1 });
        expect(big.count('/r/private/x')).toBe(0);
      } finally {
        await big.close();
      }
    });

    describe('a site slow to start (a Crawl-delay between the sitemaps of an index)', () => {
      const index = (server: PageServer, n: number) =>
        `<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${Array.from(
          { length: n },
          (_, i) => `<sitemap><loc>${server.url(`/sm/${i}.xml`)}</loc></sitemap>`,
        ).join('')}</sitemapindex>`;
      const urlset = (urls: string[]) =>
        `<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${urls.map((u) => `<url><loc>${u}</loc></url>`).join('')}</urlset>`;

      it('holds no other crawl: one of another bot starts and ends meanwhile; cancelled, it fetches no further sitemap', async () => {
        const slow = await PageServer.start();
        const quick = await PageServer.start();
        try {
          slow.set('/robots.txt', { type: 'text/plain', body: 'User-agent: *\nCrawl-delay: 2\n' });
          slow.set('/sm/index.xml', { type: 'application/xml', body: index(slow, 20) });
          for (let i = 0; i < 20; i++) slow.set(`/sm/${i}.xml`, { type: 'application/xml', body: urlset([slow.url(`/p${i}`)]) });
          quick.set('/q/', { body: page('Quick', []) });
          const slowBot = (await createCopilot(t)).id;
          const quickBot = (await createCopilot(t)).id;
          const slowCrawl = (await startCrawl(slowBot, { sitemap: slow.url('/sm/index.xml') })).crawl_id;
          await waitUntil(() => slow.count('/sm/0.xml') === 1 || null, 'the first sitemap read', { timeoutMs: 10_000 });
          // Before: the round that started the slow crawl waited out its delays, and this one waited with it.
          const done = await finished(quickBot, (await startCrawl(quickBot, { url: quick.url('/q/') })).crawl_id);
          expect(done).toMatchObject({ state: 'done', indexed: 1 });
          expect((await crawlOf(slowBot, slowCrawl)).state).toBe('queued');
          // Before: the start read the index's sitemaps to the end, cancelled or not.
          expect((await call(t, 'DELETE', crawlPath(slowBot, slowCrawl))).statusCode).toBe(200);
          const read = Array.from({ length: 20 }, (_, i) => slow.count(`/sm/${i}.xml`)).reduce((a, b) => a + b, 0);
          await new Promise((resolve) => setTimeout(resolve, 4500));
          const after = Array.from({ length: 20 }, (_, i) => slow.count(`/sm/${i}.xml`)).reduce((a, b) => a + b, 0);
          expect(after - read).toBeLessThanOrEqual(1); // one fetch may have been under way at the cancel
          expect((await crawlOf(slowBot, slowCrawl)).state).toBe('cancelled');
        } finally {
          await slow.close();
          await quick.close();
        }
      });

      it('a Crawl-delay over an hour (or one no timer holds) fails the crawl, saying why', async () => {
        const far = await PageServer.start();
        try {
          for (const [delay, shown] of [
            ['3601', '3601'],
            ['10000000000000', '10000000000000'],
          ]) {
            far.set('/robots.txt', { type: 'text/plain', body: `User-agent: *\nCrawl-delay: ${delay}\n` });
            far.set('/f/', { body: page('Far', []) });
            const bot = (await createCopilot(t)).id;
            const done = await finished(bot, (await startCrawl(bot, { url: far.url('/f/') })).crawl_id);
            expect(done.state).toBe('failed');
            expect(done.error).toBe(
              `The site's robots.txt asks for ${shown} s between requests; the service waits at most 3600 s, so it does not crawl the site.`,
            );
          }
          expect(far.count('/f/')).toBe(0);
        } finally {
          await far.close();
        }
      });
    });

    it('cancel: no new fetch starts, the pages not fetched leave the queue, state cancelled', async () => {
      const root = '/site5';
      const hrefs = Array.from({ length: 12 }, (_, i) => `${root}/c${i}`);
      site.set(`${root}/`, { body: page('Five', hrefs) });
      for (const h of hrefs) site.set(h, { body: page(`Cancel ${h}`, []) });
      // Every page is held, and the crawl is cancelled once each of the worker's fetch slots
      // waits on one: no fetch is then on its way to the site, so any request that arrives
      // later was started after the cancel. (With only c0 held, the other slot's next fetch
      // could be under way at the cancel and arrive after it: the test failed under load.)
      const holds = hrefs.map((h) => site.hold(h));
      const requested = () => hrefs.filter((h) => site.count(h) > 0).length;
      const bot = (await createCopilot(t)).id;
      const crawl = await startCrawl(bot, { url: site.url(`${root}/`) });
      await waitUntil(() => requested() === t.workerOptions.concurrency, 'each fetch slot to wait on a held page');
      const res = await call(t, 'DELETE', crawlPath(bot, crawl.crawl_id));
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toMatchObject({ state: 'cancelled' });
      const requestedAtCancel = requested();
      for (const hold of holds) hold.release();
      // The pages being fetched finish; nothing else of the crawl is fetched or left pending.
      await waitUntil(async () => [...(await links(t, bot))!.values()].every((l) => l.status !== 'pending'), 'no pending link');
      expect(requested()).toBe(requestedAtCancel);
      expect(requestedAtCancel).toBeLessThan(hrefs.length);
      const after = await crawlOf(bot, crawl.crawl_id);
      expect(after.state).toBe('cancelled');
      // Cancelling again answers the crawl as it is.
      expect((await call(t, 'DELETE', crawlPath(bot, crawl.crawl_id))).json().state).toBe('cancelled');
    });
  });
}
