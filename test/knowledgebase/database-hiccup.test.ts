/**
 * A link whose storing meets the database out of reach or busy (SQLite's "database is locked",
 * a PostgreSQL connection lost) is the service's moment, not the page's: it is retried, as a
 * busy task thread is, and indexed once the database answers. It was failed for good with "The
 * page could not be processed." (ops sweep: two SQLite instances on one file failed a third of
 * their links so).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../support/app.js';
import { DIALECTS } from '../support/databases.js';
import { createCopilot } from '../support/http.js';
import { postLinks, search, waitForLinks } from '../support/knowledge-base.js';
import { articlePage, PageServer } from '../support/pages.js';

for (const dialect of DIALECTS) {
  describe(`a database hiccup while a page is stored (${dialect})`, () => {
    let t: TestApp;
    let pages: PageServer;
    beforeAll(async () => {
      pages = await PageServer.start();
      t = await buildTestApp(dialect, { tap: true, worker: { maxAttempts: 3, backoffMs: 50 } });
    });
    afterAll(async () => {
      await t?.close();
      await pages?.close();
    });

    it('is retried, and the page indexed, never failed as a page that could not be processed', async () => {
      const bot = (await createCopilot(t)).id;
      pages.set('/hiccup', { body: articlePage('Hiccup', 'The hiccupwordemu paragraph is stored on the second try. '.repeat(10)) });
      const url = pages.url('/hiccup');
      const code = dialect === 'sqlite' ? 'SQLITE_BUSY' : '57P01';
      const failed = t.tap.failAfter({ kind: 'insert', table: 'kb_passages' }, Object.assign(new Error('database is locked'), { code }));
      expect((await postLinks(t, bot, [url])).statusCode).toBe(202);
      await failed;
      const link = (await waitForLinks(t, bot, [url])).get(url)!;
      expect(link).toMatchObject({ status: 'indexed', error: null });
      expect(pages.count('/hiccup')).toBe(2);
      expect((await search(t, bot, 'hiccupwordemu')).results.map((r) => r.url)).toEqual([url]);
    });
  });
}
