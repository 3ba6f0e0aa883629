/**
 * Issue 16 §2: a knowledge base that stays current. Each link is fetched again with a
 * conditional GET (on a schedule with smart_sync = 1, and on POST …/refresh) through the
 * ingestion worker: an unchanged page writes nothing, a changed one has its passages replaced
 * in one transaction, a page gone makes its link failed with its passages kept, and adding a
 * link again refreshes it without indexing the page twice.
 */
import type http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IngestionWorker } from '../../src/jobs/ingestion-worker.js';
import { openStorage, type Storage } from '../../src/storage/database.js';
import { buildTestApp, type TestApp } from '../support/app.js';
import { DIALECTS } from '../support/databases.js';
import { AUDIT_PATH, call, createCopilot, expectError, kbPath } from '../support/http.js';
import { linkRows, passageRows, postLinks, search, waitForLinks, waitUntil } from '../support/knowledge-base.js';
import { PageServer } from '../support/pages.js';

const silent = { info: () => undefined, warn: () => undefined, error: () => undefined };

/** A page that answers with an ETag and honours If-None-Match; `seen` records each request's If-None-Match. */
class EtagPage {
  readonly seen: Array<string | undefined> = [];
  constructor(
    public body: string,
    public etag: string | null = '"v1"',
    public status = 200,
  ) {}
  readonly handler = (req: http.IncomingMessage, res: http.ServerResponse) => {
    const condition = req.headers['if-none-match'];
    this.seen.push(typeof condition === 'string' ? condition : undefined);
    if (this.status !== 200) {
      res.writeHead(this.status, { 'content-type': 'text/plain' }).end('gone');
      return;
    }
    if (this.etag !== null && condition === this.etag) {
      res.writeHead(304, { etag: this.etag }).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8', ...(this.etag !== null && { etag: this.etag }) }).end(this.body);
  };
}

/** `n` paragraphs, each long enough to be a passage of its own, all holding `word`. */
const manyPassages = (word: string, n: number) => Array.from({ length: n }, (_, i) => `${word} paragraph ${i} ${'filler '.repeat(190)}${word}.`).join('\n\n');

const refresh = (t: TestApp, bot: string, key?: string | null) => call(t, 'POST', `${kbPath(bot)}/refresh`, { key });

/** The value of one series in a Prometheus text answer, or 0. */
function series(body: string, name: string): number {
  const line = body.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? 0 : Number(line.slice(name.length + 1));
}

for (const dialect of DIALECTS) {
  describe(`knowledge-base re-sync (${dialect})`, () => {
    let t: TestApp;
    let pages: PageServer;
    beforeAll(async () => {
      pages = await PageServer.start();
      // One second between scheduled checks (the smallest SYNC_INTERVAL_MS); the service's own jobs run.
      t = await buildTestApp(dialect, { tap: true, env: { SYNC_INTERVAL_MS: '1000' } });
      t.services.startJobs(silent);
    });
    afterAll(async () => {
      await t?.close();
      await pages?.close();
    });

    let n = 0;
    /** A page of its own on the server, and a copilot with the link indexed. */
    async function indexedLink(page: EtagPage, copilot: Record<string, unknown> = {}) {
      const path = `/page-${++n}`;
      pages.set(path, page.handler);
      const bot = (await createCopilot(t, copilot)).id;
      const url = pages.url(path);
      expect((await postLinks(t, bot, [url])).statusCode).toBe(202);
      const link = (await waitForLinks(t, bot, [url])).get(url)!;
      expect(link.status).toBe('indexed');
      return { bot, url, path };
    }
    const row = async (bot: string, url: string) => (await linkRows(t.rawStorage, bot, [url]))[0]!;
    const passageIds = async (linkId: string) => (await passageRows(t.rawStorage, [linkId])).map((p) => Number(p.id));
    /** How many checks (and re-adds) ended with `result` in this instance so far. */
    const refreshes = async (result: string) => series((await call(t, 'GET', '/metrics', { key: null })).body, `kb_link_refreshes_total{result="${result}"}`);
    /** Runs `act` and waits until one more check ended unchanged (all it wrote is written by then); the link after it. */
    const unchangedAfter = async (bot: string, url: string, act: () => Promise<void>) => {
      const before = await refreshes('unchanged');
      await act();
      await waitUntil(async () => (await refreshes('unchanged')) > before, 'the check to end unchanged');
      return row(bot, url);
    };

    it('POST …/refresh of an unchanged page sends If-None-Match, gets 304 and writes nothing but the check time', async () => {
      const page = new EtagPage('Alpha beta gamma about unchanged pages.\n\nA second paragraph on refreshing.');
      const { bot, url } = await indexedLink(page);
      const before = await row(bot, url);
      expect(before.etag).toBe('"v1"');
      expect(before.content_sha256).toMatch(/^[0-9a-f]{64}$/);
      const ids = await passageIds(before.id);

      const after = await unchangedAfter(bot, url, async () => {
        const res = await refresh(t, bot);
        expect(res.statusCode, res.body).toBe(202);
        expect(res.json()).toEqual({ bot_id: bot, queued: 1, pending: 0 });
      });
      const audit = (await call(t, 'GET', `${AUDIT_PATH}?bot_id=${bot}&action=knowledgebase.refresh`)).json();
      expect(audit.map((e: { action: string; details: { queued: number } }) => [e.action, e.details.queued])).toEqual([['knowledgebase.refresh', 1]]);

      expect(page.seen).toEqual([undefined, '"v1"']);
      // The link as it was, but for when it was checked; the same passage rows.
      const { checked_at: _a, check_after: _b, ...same } = after;
      const { checked_at: _c, check_after: _d, ...was } = before;
      expect(same).toEqual(was);
      expect(await passageIds(before.id)).toEqual(ids);
      expect((await search(t, bot, 'gamma')).results).toHaveLength(1);
      const metrics = (await call(t, 'GET', '/metrics', { key: null })).body;
      expect(series(metrics, 'kb_link_refreshes_total{result="unchanged"}')).toBeGreaterThanOrEqual(1);
      expect(series(metrics, 'kb_fetch_duration_seconds_count{outcome="not_modified"}')).toBeGreaterThanOrEqual(1);
    });

    it('a page answered 200 with the same text (no validators, new markup) writes nothing either', async () => {
      let nonce = 0;
      const path = `/page-${++n}`;
      pages.set(path, (_req, res) => {
        nonce++;
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
        res.end(
          `<html><head><script>var nonce=${nonce}</script><title>Same</title></head><body><main><p>Delta epsilon zeta stays the same.</p></main></body></html>`,
        );
      });
      const bot = (await createCopilot(t)).id;
      const url = pages.url(path);
      await postLinks(t, bot, [url]);
      await waitForLinks(t, bot, [url]);
      const before = await row(bot, url);
      expect(before.status).toBe('indexed');
      const after = await unchangedAfter(bot, url, async () => {
        expect((await refresh(t, bot)).statusCode).toBe(202);
      });
      expect(nonce).toBe(2);
      expect(after.checked_at! > before.checked_at!).toBe(true);
      expect(after.version).toBe(before.version);
      expect(after.updated_at).toBe(before.updated_at);
    });

    it('a changed page has its passages replaced in one transaction: a search meanwhile sees the old set whole, then the new', async () => {
      const page = new EtagPage(manyPassages('oldword', 6));
      const { bot, url } = await indexedLink(page);
      const before = await row(bot, url);
      expect(before.passages).toBe(6);
      page.body = manyPassages('newword', 9);
      page.etag = '"v2"';
      // The first indexing's replaced set is deleted just after the link shows indexed: wait for it.
      await waitUntil(
        async () => (await t.rawStorage.db.selectFrom('kb_hidden_passages').select('link_id').where('link_id', '=', before.id).execute()).length === 0,
        'no hidden set left',
      );

      // Stops the transaction that stores and publishes the new set (a page this small is stored
      // at once: AT_ONCE_PASSAGES) after it wrote the new passages, before it commits.
      const paused = t.tap.pauseAfter({ kind: 'insert', table: 'kb_passages' });
      expect((await refresh(t, bot)).statusCode).toBe(202);
      await paused.reached;
      try {
        // The new set is written but not committed: the table and a search show the old one, whole.
        const stored = await t.rawStorage.readDb.selectFrom('kb_passages').select('content').where('link_id', '=', before.id).execute();
        expect(stored.map((p) => p.content.includes('oldword'))).toEqual(Array(6).fill(true));
        const during = await search(t, bot, 'oldword newword', 50);
        expect(during.results).toHaveLength(6);
        expect(during.results.every((r) => r.content.includes('oldword'))).toBe(true);
      } finally {
        paused.release();
      }
      await waitUntil(async () => (await row(bot, url)).etag === '"v2"' && (await row(bot, url)).status === 'indexed', 'the new version');
      const afterSearch = await search(t, bot, 'oldword newword', 50);
      expect(afterSearch.results).toHaveLength(9);
      expect(afterSearch.results.every((r) => r.content.includes('newword'))).toBe(true);
      // One set: the old one is gone from the table too.
      const after = await row(bot, url);
      await waitUntil(async () => (await passageRows(t.rawStorage, [after.id])).length === 9, 'the old set to be deleted');
      expect(page.seen.slice(0, 2)).toEqual([undefined, '"v1"']);
      const metrics = (await call(t, 'GET', '/metrics', { key: null })).body;
      expect(series(metrics, 'kb_link_refreshes_total{result="changed"}')).toBeGreaterThanOrEqual(1);
    });

    it('a page gone (404, 410) makes its link failed with the reason; its passages stay searchable until the link is deleted', async () => {
      for (const status of [404, 410]) {
        const page = new EtagPage(`Theta iota kappa${status} about a page that will go.`);
        const { bot, url } = await indexedLink(page);
        page.status = status;
        expect((await refresh(t, bot)).statusCode).toBe(202);
        const link = (await waitForLinks(t, bot, [url], (l) => l.status === 'failed')).get(url)!;
        expect(link.error).toContain(`HTTP status ${status}`);
        expect(link.passages).toBe(1);
        expect((await search(t, bot, `kappa${status}`)).results).toHaveLength(1);
        // Back again, unchanged: indexed again, nothing re-indexed.
        const version = (await row(bot, url)).version;
        page.status = 200;
        expect((await refresh(t, bot)).statusCode).toBe(202);
        await waitForLinks(t, bot, [url], (l) => l.status === 'indexed');
        expect((await row(bot, url)).version).toBe(version);
        // Deleted: the passages go with it, deleted in the background by the service's housekeeping.
        page.status = status;
        await refresh(t, bot);
        await waitForLinks(t, bot, [url], (l) => l.status === 'failed');
        expect((await call(t, 'DELETE', kbPath(bot), { payload: { links: [url] } })).statusCode).toBe(200);
        await waitUntil(
          async () => (await t.rawStorage.db.selectFrom('kb_passages').select('id').where('bot_id', '=', bot).execute()).length === 0,
          "the deleted link's passages to leave the database",
        );
      }
      const metrics = (await call(t, 'GET', '/metrics', { key: null })).body;
      expect(series(metrics, 'kb_link_refreshes_total{result="gone"}')).toBeGreaterThanOrEqual(2);
    });

    it('adding a link again refreshes it (conditionally) and never indexes the page twice', async () => {
      const page = new EtagPage('Lambda mu nu, a page added twice.\n\nIts second paragraph.');
      const { bot, url } = await indexedLink(page);
      const before = await row(bot, url);
      const ids = await passageIds(before.id);
      // The same page, spelled differently.
      const again = url.replace('http://127.0.0.1', 'HTTP://127.0.0.1').concat('#section');
      expect((await postLinks(t, bot, [url, again])).statusCode).toBe(202);
      await waitUntil(async () => (await row(bot, url)).status === 'indexed' && page.seen.length === 2, 'the re-add');
      expect(page.seen).toEqual([undefined, '"v1"']);
      expect(await passageIds(before.id)).toEqual(ids);
      expect((await row(bot, url)).version).toBe(before.version);
      expect((await search(t, bot, 'lambda')).results).toHaveLength(1);

      // Changed and added again: one set of passages, the new one.
      page.body = 'Lambda xi omicron, the page rewritten.';
      page.etag = '"v2"';
      await postLinks(t, bot, [url]);
      await waitUntil(async () => (await row(bot, url)).etag === '"v2"' && (await row(bot, url)).status === 'indexed', 'the second re-add');
      await waitUntil(async () => (await passageRows(t.rawStorage, [before.id])).length === 1, 'one set of passages');
      expect((await passageRows(t.rawStorage, [before.id]))[0]!.content).toContain('omicron');
      expect((await search(t, bot, 'lambda')).results).toHaveLength(1);
    });

    it('with smart_sync = 1 the links are checked on a schedule (conditionally); with 0 they are not scheduled', async () => {
      const page = new EtagPage('Pi rho sigma, kept in step on a schedule.');
      const { bot, url } = await indexedLink(page, { smart_sync: 1 });
      // Scheduled about one interval (1 s) after it was indexed; each check schedules the next.
      await waitUntil(() => page.seen.length >= 3, 'two scheduled checks', { timeoutMs: 20_000 });
      expect(page.seen.slice(1, 3)).toEqual(['"v1"', '"v1"']);
      const link = await row(bot, url);
      expect(link.check_after).not.toBeNull();
      expect(link.status).toBe('indexed');

      const quiet = new EtagPage('Tau upsilon phi, only on request.');
      const other = await indexedLink(quiet, { smart_sync: 0 });
      // A round of the schedule has run since (rounds come every 250 ms).
      await waitUntil(() => page.seen.length >= 4, 'another scheduled check of the first');
      expect((await row(other.bot, other.url)).check_after).toBeNull();
      expect(quiet.seen).toEqual([undefined]);
    });

    it('each requested check runs once across instances', async () => {
      const bot = (await createCopilot(t)).id;
      const list = Array.from({ length: 6 }, () => new EtagPage(`Chi psi omega ${++n}.`));
      const urls = list.map((page, i) => {
        pages.set(`/once-${n}-${i}`, page.handler);
        return pages.url(`/once-${n}-${i}`);
      });
      await postLinks(t, bot, urls);
      await waitForLinks(t, bot, urls);
      // Two more workers: on PostgreSQL one of them on a storage of its own (another instance).
      let other: Storage | null = null;
      if (dialect === 'postgres') other = openStorage({ databaseUrl: t.database.databaseUrl, dataDir: t.database.dataDir, poolSize: 2 });
      const workers = [new IngestionWorker(other ?? t.storage, t.workerOptions), t.newWorker()];
      for (const w of workers) w.start();
      try {
        expect((await refresh(t, bot)).json()).toMatchObject({ queued: 6 });
        await waitUntil(async () => {
          const rows = await linkRows(t.rawStorage, bot);
          return rows.every((r) => r.checked_at !== null && r.check_after === null) && list.every((p) => p.seen.length === 2);
        }, 'every link checked');
        // A claimed check is no longer due (smart_sync = 0: none scheduled): each page got one conditional request.
        for (const page of list) expect(page.seen).toEqual([undefined, '"v1"']);
      } finally {
        await workers[0]!.stop();
        await other?.close();
      }
    });

    it('answers 401, 403 (scope, other bot), 404 (unknown bot, no knowledge base) like the other knowledge-base routes', async () => {
      const { bot } = await indexedLink(new EtagPage('Access rules for refresh.'));
      const stranger = (await createCopilot(t)).id;
      expectError(await refresh(t, bot, null), 401, 'unauthorized');
      expectError(await refresh(t, bot, await t.key(['knowledgebase:read'], [bot])), 403, 'forbidden');
      expectError(await refresh(t, bot, await t.key(['knowledgebase:write'], [stranger])), 403, 'forbidden');
      expect((await refresh(t, bot, await t.key(['knowledgebase:write'], [bot]))).statusCode).toBe(202);
      expectError(await refresh(t, '00000000-0000-4000-8000-000000000000'), 404, 'knowledge_base_not_found');
      expectError(await refresh(t, 'not-a-uuid'), 404, 'knowledge_base_not_found');
      expectError(await refresh(t, stranger), 404, 'knowledge_base_not_found');
    });
  });
}

for (const dialect of DIALECTS) {
  describe(`knowledge-base checks and the fair queue (${dialect})`, () => {
    let t: TestApp;
    let pages: PageServer;
    /** Paths in the order their requests arrived. */
    const arrivals: string[] = [];
    beforeAll(async () => {
      pages = await PageServer.start();
      t = await buildTestApp(dialect);
    });
    afterAll(async () => {
      await t?.close();
      await pages?.close();
    });

    it("one bot's due checks never delay another bot's new link: the worker takes ingestion jobs first", async () => {
      const paths = Array.from({ length: 5 }, (_, i) => `/tenant-a/${i}`);
      for (const path of paths) {
        const page = new EtagPage(`Tenant A page ${path}.`);
        pages.set(path, (req, res) => {
          arrivals.push(path);
          page.handler(req, res);
        });
      }
      pages.set('/tenant-b/new', (req, res) => {
        arrivals.push('/tenant-b/new');
        new EtagPage('Tenant B, its new page.').handler(req, res);
      });
      // One worker, driven by hand: a's links are indexed, then all due for a check.
      const worker = t.newWorker({ concurrency: 1 });
      const a = (await createCopilot(t)).id;
      const b = (await createCopilot(t)).id;
      await postLinks(
        t,
        a,
        paths.map((p) => pages.url(p)),
      );
      while (await worker.runOne());
      expect((await refresh(t, a)).json()).toMatchObject({ queued: 5 });
      arrivals.length = 0;
      // The first check of a's is under way (its request held) when b adds a link.
      const holds = paths.map((path) => pages.hold(path));
      const first = worker.runOne();
      const held = await Promise.race(holds.map((h, i) => h.arrived.then(() => paths[i]!)));
      expect((await postLinks(t, b, [pages.url('/tenant-b/new')])).statusCode).toBe(202);
      for (const h of holds) h.release();
      await first;
      while (await worker.runOne());
      // b's page came right after the check in flight, before a's four other checks.
      expect(arrivals[0]).toBe(held);
      expect(arrivals[1]).toBe('/tenant-b/new');
      expect(arrivals.slice(2).sort()).toEqual(paths.filter((p) => p !== held).sort());
      expect((await waitForLinks(t, b, [pages.url('/tenant-b/new')])).get(pages.url('/tenant-b/new'))!.status).toBe('indexed');
    });
  });
}
