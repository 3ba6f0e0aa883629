/**
 * Issue 13 §3, §4 and §10: what one tenant may queue and store, and answers that fail at
 * once instead of holding a worker or being retried. Pending links per bot
 * (KB_MAX_PENDING_LINKS_PER_BOT: 429 quota_exceeded), passages per link and per bot
 * (KB_MAX_PASSAGES_PER_LINK, KB_MAX_PASSAGES_PER_BOT: the link fails naming the limit), a
 * body that drips (minimum transfer rate) and malformed answers (bad gzip).
 */
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { useTestAppWithPages, type TestApp } from '../support/app.js';
import { DIALECTS } from '../support/databases.js';
import { call, createCopilot, expectError } from '../support/http.js';
import { linkRows, links, passageRows, postLinks, search } from '../support/knowledge-base.js';
import type { PageServer } from '../support/pages.js';

/** Plain text that splits into exactly `n` passages (paragraphs of 150 words: two never fit one passage). */
function passagesText(n: number, word = 'filler'): string {
  return Array.from({ length: n }, (_, i) => `Paragraph ${i} mentions ${word}${i}x. ${'Some more words of the paragraph here. '.repeat(24)}`.trim()).join(
    '\n\n',
  );
}

for (const dialect of DIALECTS) {
  describe(`pending links per bot (${dialect})`, () => {
    let t!: TestApp;
    let pages!: PageServer;
    useTestAppWithPages(dialect, { env: { KB_MAX_PENDING_LINKS_PER_BOT: '3' } }, (made) => ({ t, pages } = made));

    it('over the limit: 429 quota_exceeded with {limit, pending, adding}; nothing is queued', async () => {
      const bot = (await createCopilot(t)).id;
      const [one, two, three, four] = ['/q/1', '/q/2', '/q/3', '/q/4'].map((p) => pages.url(p)) as [string, string, string, string];
      expect((await postLinks(t, bot, [one, two])).statusCode).toBe(202);

      const refused = expectError(await postLinks(t, bot, [one, two, three, four]), 429, 'quota_exceeded');
      expect(refused.details).toEqual({ limit: 3, pending: 2, adding: 2 });
      expect(refused.message).toBe(
        'This knowledge base has 2 links waiting to be indexed; adding 2 more would go over its limit of 3 pending links. Try again once some have been indexed.',
      );
      expect((await linkRows(t.storage, bot)).map((r) => r.url).sort()).toEqual([one, two].sort());

      // Links already pending do not count twice: re-sending them with one new link fits.
      expect((await postLinks(t, bot, [one, two, three])).statusCode).toBe(202);
      expectError(await postLinks(t, bot, [four]), 429, 'quota_exceeded');
      // Another bot has its own limit.
      expect((await postLinks(t, (await createCopilot(t)).id, [one, two, three])).statusCode).toBe(202);
    });

    it('links that are no longer pending free their place; re-queueing an indexed link takes one', async () => {
      const bot = (await createCopilot(t)).id;
      pages.set('/done/1', { type: 'text/plain', body: 'First page, soon indexed.' });
      const urls = ['/done/1', '/done/2', '/done/3'].map((p) => pages.url(p));
      expect((await postLinks(t, bot, urls)).statusCode).toBe(202);
      const worker = t.newWorker();
      while ((await links(t, bot))!.get(urls[0]!)!.status === 'pending') expect(await worker.runOne()).toBe(true);
      // Whichever links the worker took are not pending any more.
      const pendingNow = [...(await links(t, bot))!.values()].filter((l) => l.status === 'pending').length;
      const fresh = Array.from({ length: 3 - pendingNow }, (_, i) => pages.url(`/done/new/${i}`));
      expect((await postLinks(t, bot, fresh)).statusCode).toBe(202);
      // Full again: refreshing the indexed first link would make it pending once more.
      expect(expectError(await postLinks(t, bot, [urls[0]]), 429, 'quota_exceeded').details).toEqual({ limit: 3, pending: 3, adding: 1 });
    });

    it('the published OpenAPI document lists 429 quota_exceeded for POST', async () => {
      const doc = (await call(t, 'GET', '/backend/openapi.json', { key: null })).json() as {
        paths: Record<string, Record<string, { responses: Record<string, { description?: string }> }>>;
      };
      const post = doc.paths['/backend/knowledgebase/b/{bot_id}']!.post!;
      expect(post.responses['429']?.description).toContain('quota_exceeded');
    });
  });

  describe(`passages per link and per bot (${dialect})`, () => {
    let t!: TestApp;
    let pages!: PageServer;
    useTestAppWithPages(dialect, {}, (made) => ({ t, pages } = made));

    it('a page over the per-link limit fails at once, naming the limit and the numbers; nothing is stored', async () => {
      const worker = t.newWorker({ maxPassagesPerLink: 3 });
      const bot = (await createCopilot(t)).id;
      pages.set('/big', { type: 'text/plain', body: passagesText(5, 'bigpage') });
      pages.set('/fits', { type: 'text/plain', body: passagesText(3, 'fitspage') });
      const [big, fits] = [pages.url('/big'), pages.url('/fits')];
      await postLinks(t, bot, [big, fits]);
      while (await worker.runOne());

      const all = (await links(t, bot))!;
      expect(all.get(fits)).toMatchObject({ status: 'indexed', passages: 3 });
      const link = all.get(big)!;
      expect(link).toMatchObject({ status: 'failed', passages: 0 });
      expect(link.error).toBe('The page yields 5 passages, more than the limit of 3 passages per link.');
      const [row] = await linkRows(t.storage, bot, [big]);
      expect(await passageRows(t.storage, [row!.id])).toEqual([]);
      expect(pages.count('/big')).toBe(1); // final, not retried
    });

    it("a page that would take the bot over its limit fails; the bot's other passages stay, and a refresh counts only the new text", async () => {
      const worker = t.newWorker({ maxPassagesPerBot: 6 });
      const bot = (await createCopilot(t)).id;
      pages.set('/bot/one', { type: 'text/plain', body: passagesText(4, 'botone') });
      pages.set('/bot/two', { type: 'text/plain', body: passagesText(4, 'bottwo') });
      const [one, two] = [pages.url('/bot/one'), pages.url('/bot/two')];
      await postLinks(t, bot, [one]);
      expect(await worker.runOne()).toBe(true);
      await postLinks(t, bot, [two]);
      expect(await worker.runOne()).toBe(true);

      const all = (await links(t, bot))!;
      expect(all.get(one)).toMatchObject({ status: 'indexed', passages: 4 });
      expect(all.get(two)).toMatchObject({ status: 'failed', passages: 0 });
      expect(all.get(two)!.error).toBe('Indexing this page (4 passages) would bring the knowledge base to 8 passages, over its limit of 6 passages.');
      expect((await search(t, bot, 'botone0x')).results).toHaveLength(1);
      expect((await search(t, bot, 'bottwo0x')).results).toEqual([]);
      expect(pages.count('/bot/two')).toBe(1);

      // Refreshing the first link with 6 passages replaces its 4: 6 in all, within the limit.
      pages.set('/bot/one', { type: 'text/plain', body: passagesText(6, 'botonenew') });
      await postLinks(t, bot, [one]);
      expect(await worker.runOne()).toBe(true);
      expect((await links(t, bot))!.get(one)).toMatchObject({ status: 'indexed', passages: 6 });

      // Full now: a new link fails without its page being fetched (amplification sweep: 900
      // links past the limit were each fetched and extracted, then refused, minutes of a core).
      pages.set('/bot/three', { type: 'text/plain', body: passagesText(1, 'botthree') });
      const three = pages.url('/bot/three');
      await postLinks(t, bot, [three]);
      expect(await worker.runOne()).toBe(true);
      expect((await links(t, bot))!.get(three)).toMatchObject({ status: 'failed', passages: 0 });
      expect((await links(t, bot))!.get(three)!.error).toBe(
        'This knowledge base holds 6 passages, its limit of 6 passages: the page was not fetched. Delete links to make room.',
      );
      expect(pages.count('/bot/three')).toBe(0);
      // Its own link refreshed still fits: the first link's passages are not counted against it.
      pages.set('/bot/one', { type: 'text/plain', body: passagesText(5, 'botoneagain') });
      await postLinks(t, bot, [one]);
      expect(await worker.runOne()).toBe(true);
      expect((await links(t, bot))!.get(one)).toMatchObject({ status: 'indexed', passages: 5 });
    });
  });

  describe(`answers that fail at once (${dialect})`, () => {
    let t!: TestApp;
    let pages!: PageServer;
    useTestAppWithPages(dialect, {}, (made) => ({ t, pages } = made));

    it('a page that drips fails for being too slow, once, long before the fetch deadline', async () => {
      const worker = t.newWorker({ fetchPolicy: { ...t.workerOptions.fetchPolicy, timeoutMs: 60_000, minBytesPerSecond: 1024, minRateWindowMs: 200 } });
      const bot = (await createCopilot(t)).id;
      pages.set('/drip', (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/plain' });
        const timer = setInterval(() => res.write('x'), 50);
        res.on('close', () => clearInterval(timer));
      });
      const url = pages.url('/drip');
      await postLinks(t, bot, [url]);
      expect(await worker.runOne()).toBe(true);
      const link = (await links(t, bot))!.get(url)!;
      expect(link.status).toBe('failed');
      expect(link.error).toMatch(/too slowly \(less than 1 KiB per second over 200 ms\)/);
      expect(await worker.runOne()).toBe(false); // not retried
      expect(pages.count('/drip')).toBe(1);
    });

    it('a page with a broken gzip body, or a coding that cannot be decoded, fails at once instead of three times', async () => {
      const worker = t.newWorker();
      const bot = (await createCopilot(t)).id;
      pages.set('/bad-gzip', (_req, res) => void res.writeHead(200, { 'content-type': 'text/plain', 'content-encoding': 'gzip' }).end('not gzip'));
      // A coding the fetcher cannot decode would otherwise be indexed as the encoded bytes.
      pages.set(
        '/odd-coding',
        (_req, res) => void res.writeHead(200, { 'content-type': 'text/plain', 'content-encoding': 'x-snappy' }).end(gzipSync('hidden words')),
      );
      const urls = [pages.url('/bad-gzip'), pages.url('/odd-coding')];
      await postLinks(t, bot, urls);
      while (await worker.runOne());
      await new Promise((resolve) => setTimeout(resolve, 3 * (t.workerOptions.backoffMs ?? 50)));
      expect(await worker.runOne()).toBe(false);
      const all = (await links(t, bot))!;
      for (const url of urls) {
        expect(all.get(url)!.status, url).toBe('failed');
        expect(all.get(url)!.error, url).toMatch(/could not be decompressed|cannot be decoded/);
      }
      expect(pages.count('/bad-gzip')).toBe(1);
      expect(pages.count('/odd-coding')).toBe(1);
    });
  });
}
