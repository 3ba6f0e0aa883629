/**
 * A knowledge base's search does work that grows with the copilot's passages (every passage
 * holding a common word is scored). On SQLite it ran on the main thread's read connection, so
 * one tenant's search of a large knowledge base held the event loop, and with it every other
 * tenant's requests, for as long as it ran. It runs on `storage.scanDb` (a connection on a
 * thread of its own on SQLite, the pool on PostgreSQL).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
  });
}
