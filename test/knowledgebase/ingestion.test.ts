import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../support/app.js';
import { DIALECTS } from '../support/databases.js';
import { call, createCopilot, expectNoLeaks, kbPath, TIMESTAMP } from '../support/http.js';
import { indexHits, linkRows, passageRows, postLinks, search, waitForLinks, waitUntil, type WireLink } from '../support/knowledge-base.js';
import { MAX_HTML_CHARS } from '../../src/domain/knowledgebase/extract.js';
import { articlePage, PageServer } from '../support/pages.js';

const LINK_KEYS = ['url', 'status', 'error', 'passages', 'created_at', 'updated_at', 'truncated'];

// Every boilerplate word is one a search must not find; the article's words must be found.
const BOILERPLATE_PAGE = `<!doctype html>
<html><head><title>Headtitleword guide</title>
<style>.banner { color: red } /* stylewombat */ body::after { content: "stylewombat" }</style>
<script>var scriptquokka = "scriptquokka";</script>
</head><body>
<header><div class="logo">headerpangolin</div></header>
<nav><ul><li><a href="/a">navzebra</a></li><li><a href="/b">navzebra two</a></li></ul></nav>
<main><article>
<h1>Rotating keys</h1>
<p>The articleaardvark procedure explains how an operator rotates the signing keys of a copilot
without downtime. First create the new key, then publish it next to the old one, wait until every
client has fetched the new set, and only then retire the old key. Each step is logged.</p>
<p>Second paragraph about the articlebison checklist that follows the rotation and confirms that
the service still answers every request with the expected signature and headers.</p>
</article></main>
<aside>asidenarwhal related links</aside>
<footer>footerokapi copyright</footer>
<script>console.log("scriptquokka")</script>
<noscript>noscriptlemur</noscript>
</body></html>`;

for (const dialect of DIALECTS) {
  describe(`knowledge-base ingestion (${dialect})`, () => {
    let t: TestApp;
    let pages: PageServer;
    beforeAll(async () => {
      pages = await PageServer.start();
      t = await buildTestApp(dialect, { worker: { maxAttempts: 3, backoffMs: 60 } });
    });
    afterAll(async () => {
      await t?.close();
      await pages?.close();
    });

    it('POST answers 202 with the links pending; the worker indexes them (passages > 0, error null)', async () => {
      const bot = (await createCopilot(t)).id;
      pages.set('/ok/one', { body: articlePage('First page', 'Copilots answer questions about orders and refunds. '.repeat(20)) });
      pages.set('/ok/two', { body: articlePage('Second page', 'Shipping times depend on the carrier and the destination. '.repeat(20)) });
      const urls = [pages.url('/ok/one'), pages.url('/ok/two')];

      const res = await postLinks(t, bot, urls);
      expect(res.statusCode, res.body).toBe(202);
      const body = res.json() as { bot_id: string; links: WireLink[] };
      expect(Object.keys(body)).toEqual(['bot_id', 'links']);
      expect(body.bot_id).toBe(bot);
      expect(body.links.map((l) => l.url)).toEqual(urls);
      for (const link of body.links) {
        expect(Object.keys(link)).toEqual(LINK_KEYS);
        expect(link).toMatchObject({ status: 'pending', error: null, passages: 0, truncated: false });
        expect(link.created_at).toMatch(TIMESTAMP);
        expect(link.updated_at).toMatch(TIMESTAMP);
      }

      const done = await waitForLinks(t, bot, urls);
      for (const url of urls) {
        const link = done.get(url)!;
        expect(link.status, JSON.stringify(link)).toBe('indexed');
        expect(link.error).toBeNull();
        expect(link.passages).toBeGreaterThan(0);
        expect(Object.keys(link)).toEqual(LINK_KEYS);
      }
      const rows = await linkRows(t.storage, bot, urls);
      for (const row of rows) {
        expect(await passageRows(t.storage, [row.id])).toHaveLength(Number(row.passages));
        expect(row.lease_owner).toBeNull();
      }
      expect(pages.count('/ok/one')).toBe(1);
      expect((await search(t, bot, 'refunds')).results.map((r) => r.url)).toEqual([urls[0]]);
    });

    it('keeps only the readable text of HTML: navigation, script, style, header, footer and aside words are not searchable', async () => {
      const bot = (await createCopilot(t)).id;
      pages.set('/boilerplate', { body: BOILERPLATE_PAGE });
      const url = pages.url('/boilerplate');
      expect((await postLinks(t, bot, [url])).statusCode).toBe(202);
      const link = (await waitForLinks(t, bot, [url])).get(url)!;
      expect(link.status, JSON.stringify(link)).toBe('indexed');

      for (const word of ['articleaardvark', 'articlebison', 'rotates']) {
        const hits = await search(t, bot, word);
        expect(hits.results.length, word).toBeGreaterThan(0);
        expect(hits.results[0]!.url).toBe(url);
      }
      for (const word of ['stylewombat', 'scriptquokka', 'navzebra', 'headerpangolin', 'asidenarwhal', 'footerokapi', 'noscriptlemur', 'Headtitleword']) {
        expect((await search(t, bot, word)).results, word).toEqual([]);
      }
      const [row] = await linkRows(t.storage, bot, [url]);
      const text = (await passageRows(t.storage, [row!.id])).map((p) => p.content).join('\n');
      expect(text).toContain('articleaardvark');
      expect(text).not.toMatch(/stylewombat|scriptquokka|navzebra|headerpangolin|asidenarwhal|footerokapi|noscriptlemur|<p>|<\/?\w+>/);
    });

    it('accepts text/plain and text/markdown pages', async () => {
      const bot = (await createCopilot(t)).id;
      pages.set('/notes.txt', { type: 'text/plain; charset=utf-8', body: 'Plain notes about the plaintextmarmot release.\n\nSecond paragraph.' });
      pages.set('/guide.md', { type: 'text/markdown', body: '# Guide\n\nThe **markdownheron** section explains webhooks.\n\n- one\n- two\n' });
      const urls = [pages.url('/notes.txt'), pages.url('/guide.md')];
      await postLinks(t, bot, urls);
      const done = await waitForLinks(t, bot, urls);
      for (const url of urls) expect(done.get(url), url).toMatchObject({ status: 'indexed', error: null });
      expect((await search(t, bot, 'plaintextmarmot')).results.map((r) => r.url)).toEqual([urls[0]]);
      expect((await search(t, bot, 'markdownheron')).results.map((r) => r.url)).toEqual([urls[1]]);
    });

    it('fails an application/pdf page at once with a readable error (not retried)', async () => {
      const bot = (await createCopilot(t)).id;
      pages.set('/paper.pdf', { type: 'application/pdf', body: Buffer.from('%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<<>>\nendobj\n', 'latin1') });
      const url = pages.url('/paper.pdf');
      await postLinks(t, bot, [url]);
      const link = (await waitForLinks(t, bot, [url])).get(url)!;
      expect(link.status).toBe('failed');
      expect(link.passages).toBe(0);
      expect(link.error).toMatch(/application\/pdf/);
      expect(link.error).toMatch(/HTML, plain text and Markdown/);
      expectNoLeaks(link.error!);
      expect(pages.count('/paper.pdf')).toBe(1);
    });

    it('fails a page that answers 404 at once, naming the status', async () => {
      const bot = (await createCopilot(t)).id;
      const url = pages.url('/missing-page');
      await postLinks(t, bot, [url]);
      const link = (await waitForLinks(t, bot, [url])).get(url)!;
      expect(link.status).toBe('failed');
      expect(link.error).toMatch(/404/);
      expectNoLeaks(link.error!);
      expect(pages.count('/missing-page')).toBe(1);
    });

    it('retries a transient 503 with backoff, then fails after maxAttempts', async () => {
      const bot = (await createCopilot(t)).id;
      const times: number[] = [];
      pages.set('/flaky', (_req, res) => {
        times.push(performance.now());
        res.writeHead(503, { 'content-type': 'text/plain' }).end('busy');
      });
      const url = pages.url('/flaky');
      await postLinks(t, bot, [url]);
      const link = (await waitForLinks(t, bot, [url])).get(url)!;
      expect(link.status).toBe('failed');
      expect(link.error).toMatch(/503/);
      expect(pages.count('/flaky')).toBe(3);
      // Backoff 60 ms, doubling: the retries cannot come sooner (small slack for timer rounding).
      expect(times[1]! - times[0]!).toBeGreaterThanOrEqual(60 - 5);
      expect(times[2]! - times[1]!).toBeGreaterThanOrEqual(120 - 5);
      const [row] = await linkRows(t.storage, bot, [url]);
      expect(Number(row!.attempts)).toBe(3);
      expect(row!.lease_owner).toBeNull();
    });

    it('a 503 that recovers before the last attempt ends indexed, with the error cleared', async () => {
      const bot = (await createCopilot(t)).id;
      let n = 0;
      pages.set('/recovers', (_req, res) => {
        if (++n === 1) res.writeHead(503).end();
        else res.writeHead(200, { 'content-type': 'text/plain' }).end('Recovered page about the phoenixword.');
      });
      const url = pages.url('/recovers');
      await postLinks(t, bot, [url]);
      const link = (await waitForLinks(t, bot, [url])).get(url)!;
      expect(link).toMatchObject({ status: 'indexed', error: null });
      expect(pages.count('/recovers')).toBe(2);
    });

    it('re-POSTing a link re-queues it: pending again, then indexed with the new content and none of the old', async () => {
      const bot = (await createCopilot(t)).id;
      pages.set('/refresh', { type: 'text/plain', body: `Version one mentions the oldwordtapir.\n\n${'Filler sentence number one. '.repeat(30)}` });
      const url = pages.url('/refresh');
      await postLinks(t, bot, [url]);
      const first = (await waitForLinks(t, bot, [url])).get(url)!;
      expect(first.status).toBe('indexed');
      const [before] = await linkRows(t.storage, bot, [url]);
      const oldPassages = await passageRows(t.storage, [before!.id]);
      expect(oldPassages.length).toBeGreaterThan(0);
      expect((await search(t, bot, 'oldwordtapir')).results).toHaveLength(1);

      pages.set('/refresh', { type: 'text/plain', body: 'Version two mentions the newwordcapybara only.' });
      const again = await postLinks(t, bot, [url]);
      expect(again.statusCode).toBe(202);
      const requeued = (again.json() as { links: WireLink[] }).links[0]!;
      expect(requeued.status).toBe('pending');
      expect(requeued.error).toBeNull();
      expect(requeued.created_at).toBe(first.created_at);

      const second = (await waitForLinks(t, bot, [url], (l) => l.status !== 'pending' && pages.count('/refresh') === 2)).get(url)!;
      expect(second).toMatchObject({ status: 'indexed', error: null, passages: 1 });
      const [after] = await linkRows(t.storage, bot, [url]);
      expect(after!.id).toBe(before!.id);
      // Searches see the new version at once (the old one is retired with the publish) …
      expect((await search(t, bot, 'oldwordtapir')).results).toEqual([]);
      expect((await search(t, bot, 'newwordcapybara')).results.map((r) => r.url)).toEqual([url]);
      // … and the worker deletes the old version's passages right after it.
      const contents = async () => (await passageRows(t.storage, [after!.id])).map((p) => p.content);
      await waitUntil(async () => (await contents()).length === 1, 'the old version to be deleted');
      expect(await contents()).toEqual(['Version two mentions the newwordcapybara only.']);
      expect(await indexHits(t.storage, 'oldwordtapir')).toBe(0);
    });

    it('an HTML page longer than 4 Mi characters: its first part is indexed and the link says truncated; a check that finds the same text of the whole page clears it', async () => {
      const bot = (await createCopilot(t)).id;
      const article = articlePage('Long page', `The earlywordibis section comes first. ${'Filler sentence of the long page. '.repeat(40)}`);
      const [head, tail] = article.split('</body>');
      // Markup without text fills the page past MAX_HTML_CHARS; a paragraph after it is past the cut.
      const padding = `<!-- ${'x'.repeat(MAX_HTML_CHARS)} -->`;
      pages.set('/long', { body: `${head}${padding}<p>The latewordheron paragraph.</p></body>${tail}` });
      const url = pages.url('/long');
      await postLinks(t, bot, [url]);
      const long = (await waitForLinks(t, bot, [url])).get(url)!;
      expect(long).toMatchObject({ status: 'indexed', error: null, truncated: true });
      expect((await search(t, bot, 'earlywordibis')).results.map((r) => r.url)).toEqual([url]);
      expect((await search(t, bot, 'latewordheron')).results).toEqual([]);

      // The same text, the page now short: the passages' digest is the same, the link is not truncated any more.
      pages.set('/long', { body: article });
      const refreshed = await call(t, 'POST', `${kbPath(bot)}/refresh`);
      expect(refreshed.statusCode, refreshed.body).toBe(202);
      const short = (await waitForLinks(t, bot, [url], (l) => !l.truncated)).get(url)!;
      expect(short).toMatchObject({ status: 'indexed', error: null, passages: long.passages, truncated: false });
      expect((await search(t, bot, 'earlywordibis')).results.map((r) => r.url)).toEqual([url]);
    });
  });
}
