/**
 * Issue 17 §2: what an operator sees in /metrics beyond HTTP — knowledge-base links by state,
 * fetches by outcome and duration, pages and passages indexed, failures by reason, task-thread
 * wait time, database connections — with the service's own jobs running.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../support/app.js';
import { DIALECTS } from '../support/databases.js';
import { call, createCopilot, kbPath } from '../support/http.js';
import { passageRows, postLinks, sweepRetired, waitForLinks, waitUntil } from '../support/knowledge-base.js';
import { PageServer } from '../support/pages.js';
import { seedIndexedLinks } from '../support/seed.js';

const silent = { info: () => undefined, warn: () => undefined, error: () => undefined };

/** The value of one series (`name{labels}`) in a Prometheus text answer, or null. */
function series(body: string, name: string): number | null {
  const line = body.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? null : Number(line.slice(name.length + 1));
}

for (const dialect of DIALECTS) {
  describe(`operator metrics (${dialect})`, () => {
    let t: TestApp;
    let pages: PageServer;
    beforeAll(async () => {
      pages = await PageServer.start();
      pages.set('/good', { type: 'text/plain', body: 'First passage about metrics.\n\nSecond passage about gauges.' });
      pages.set('/gone', { status: 404, body: 'no' });
      t = await buildTestApp(dialect);
      t.services.startJobs(silent);
    });
    afterAll(async () => {
      await t?.close();
      await pages?.close();
    });

    it('counts what the knowledge base did and shows its links by state', async () => {
      const bot = (await createCopilot(t)).id;
      const urls = [pages.url('/good'), pages.url('/gone')];
      expect((await postLinks(t, bot, urls)).statusCode).toBe(202);
      const done = await waitForLinks(t, bot, urls);
      expect(done.get(urls[0]!)?.status).toBe('indexed');
      expect(done.get(urls[1]!)?.status).toBe('failed');

      // The worker counts a page indexed or a link failed just after the transaction that says so
      // commits, so a scrape at that moment can come first: wait until both are counted.
      const body = await waitUntil(async () => {
        const text = (await call(t, 'GET', '/metrics', { key: null })).body;
        return series(text, 'kb_pages_indexed_total') !== 0 && series(text, 'kb_link_failures_total{reason="http_status"}') !== null && text;
      }, 'the page and the failure counted');
      expect(series(body, 'kb_links{state="indexed"}')).toBe(1);
      expect(series(body, 'kb_links{state="failed"}')).toBe(1);
      expect(series(body, 'kb_pages_indexed_total')).toBe(1);
      expect(series(body, 'kb_passages_stored_total')).toBe(done.get(urls[0]!)!.passages);
      expect(series(body, 'kb_link_failures_total{reason="http_status"}')).toBe(1);
      expect(series(body, 'kb_fetch_duration_seconds_count{outcome="ok"}')).toBe(1);
      expect(series(body, 'kb_fetch_duration_seconds_count{outcome="error"}')).toBe(1);
    });

    it('shows task-thread wait time and the database connections', async () => {
      // The jobs stopped first: with their workers polling, a connection can be waited for at the
      // scrape and no longer when the storage is asked right after (the scrape is one moment).
      await t.services.stopJobs();
      await t.taskThreads.run('ping', []);
      const body = (await call(t, 'GET', '/metrics', { key: null })).body;
      expect(series(body, 'task_threads_wait_milliseconds{quantile="0.5"}')).toBeGreaterThanOrEqual(0);
      expect(series(body, 'task_threads_wait_milliseconds{quantile="0.99"}')).toBeGreaterThanOrEqual(0);
      const { inUse, idle, waiting } = t.storage.connections();
      expect(series(body, 'database_connections{state="waiting"}')).toBe(waiting);
      const open = series(body, 'database_connections{state="in_use"}')! + series(body, 'database_connections{state="idle"}')!;
      expect(open).toBe(inUse + idle);
      // PostgreSQL's pool keeps the connections the jobs used, idle, once the app has queried.
      expect(open).toBeGreaterThanOrEqual(dialect === 'sqlite' ? 0 : 1);
    });

    it("shows a deleted link's passages until the housekeeping has deleted them", async () => {
      // The jobs are stopped (above): the housekeeping is run here, by hand.
      const bot = (await createCopilot(t)).id;
      const ids = await seedIndexedLinks(t.storage.db, bot, [{ url: 'https://metrics.example/page', passages: ['One passage.', 'Two passages.', 'Three.'] }]);
      const scrape = async () => series((await call(t, 'GET', '/metrics', { key: null })).body, 'kb_passages_to_delete');
      expect(await scrape()).toBe(0);
      expect((await call(t, 'DELETE', kbPath(bot), { payload: { links: ['https://metrics.example/page'] } })).statusCode).toBe(200);
      expect((await passageRows(t.storage, ids)).length).toBe(3);
      expect(await scrape()).toBe(3);
      await sweepRetired(t.storage);
      expect(await scrape()).toBe(0);
    });
  });
}
