/**
 * A knowledge base's search does work that grows with the copilot's passages (every passage
 * holding a common word is scored). On SQLite it ran on the main thread's read connection, so
 * one tenant's search of a large knowledge base held the event loop, and with it every other
 * tenant's requests, for as long as it ran. It runs on `storage.scanDb` (a connection on a
 * thread of its own on SQLite, a pool of its own on PostgreSQL).
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SCAN_CONNECTIONS } from '../../src/storage/database.js';
import { buildTestApp, type TestApp } from '../support/app.js';
import { DIALECTS } from '../support/databases.js';
import { createCopilot } from '../support/http.js';
import { search } from '../support/knowledge-base.js';
import { seedIndexedLinks } from '../support/seed.js';

const LINKS = 40;
const PASSAGES_PER_LINK = 500;

for (const dialect of DIALECTS) {
  describe(`a search of a large knowledge base (${dialect})`, () => {
    let t!: TestApp;
    let bot!: string;
    beforeAll(async () => {
      t = await buildTestApp(dialect);
      bot = (await createCopilot(t)).id;
      // Every passage holds "request".
      await t.storage.db.transaction().execute((trx) =>
        seedIndexedLinks(
          trx,
          bot,
          Array.from({ length: LINKS }, (_, l) => ({
            url: `https://docs.example.com/page-${l}`,
            passages: Array.from({ length: PASSAGES_PER_LINK }, (_, seq) => {
              const n = l * PASSAGES_PER_LINK + seq;
              return `Each request of item ${n} names the request body ${n % 97} and the page ${n % 13}.`;
            }),
          })),
        ),
      );
    }, 120_000);
    afterAll(async () => {
      await t?.close();
    });

    it('leaves the event loop turning while it scores every passage holding a common word', async () => {
      const order: string[] = [];
      const searching = search(t, bot, 'request', 10).then((answer) => {
        order.push('search answered');
        return answer;
      });
      const turning = (async () => {
        for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
        order.push('event loop turned 5 times');
      })();
      const [answer] = await Promise.all([searching, turning]);
      expect(answer.results).toHaveLength(10);
      expect(order).toEqual(['event loop turned 5 times', 'search answered']);
    });

    if (dialect === 'postgres')
      it("searches holding every connection searches may use leave the service's other connections free", async () => {
        // More slow searches than the process's pool holds (10 at most); before, they held all of it.
        const order: string[] = [];
        const searches = Array.from({ length: 12 }, () => sql`select pg_sleep(0.5)`.execute(t.storage.scanDb).then(() => order.push('a search done')));
        await new Promise((resolve) => setTimeout(resolve, 100));
        await sql`select 1`.execute(t.storage.db);
        order.push('another query done');
        await Promise.all(searches);
        expect(order[0]).toBe('another query done');
        expect(SCAN_CONNECTIONS).toBeLessThan(12);
      });
  });
}
