/**
 * A knowledge base's search does work that grows with the copilot's passages (every passage
 * holding a common word is scored). On SQLite it ran on the main thread's read connection, so
 * one tenant's search of a large knowledge base held the event loop, and with it every other
 * tenant's requests, for as long as it ran. It runs on a scan connection (`storage.scan`:
 * threads of their own on SQLite, a pool of its own on PostgreSQL), in turns shared fairly
 * among knowledge bases: first come first served, one tenant's many slow searches held every
 * other tenant's searches behind them (and on PostgreSQL, past the pool's connect timeout, 503).
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SCAN_CONNECTIONS, SCAN_WAITING_PER_TENANT } from '../../src/storage/database.js';
import { buildTestApp, type TestApp } from '../support/app.js';
import { DIALECTS } from '../support/databases.js';
import { call, createCopilot, kbPath } from '../support/http.js';
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

    /** Another copilot's knowledge base of one passage holding "request". */
    async function smallKnowledgeBase(): Promise<string> {
      const small = (await createCopilot(t)).id;
      await t.storage.db
        .transaction()
        .execute((trx) => seedIndexedLinks(trx, small, [{ url: 'https://docs.example.com/small', passages: ['Each request names its body.'] }]));
      return small;
    }

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

    it("answers another knowledge base's search while one knowledge base's slow searches wait their turn", async () => {
      const small = await smallKnowledgeBase();
      const order: string[] = [];
      const slow = Array.from({ length: 4 }, (_, i) => search(t, bot, 'request', 10).then(() => order.push(`large ${i}`)));
      await new Promise((resolve) => setImmediate(resolve));
      const other = search(t, small, 'request', 10).then((answer) => {
        order.push('small');
        return answer;
      });
      const [answer] = await Promise.all([other, ...slow]);
      expect(answer.results).toHaveLength(1);
      // First come first served, it answered after all four (SQLite), or after three (PostgreSQL's pool of 2).
      expect(order.indexOf('small')).toBeLessThanOrEqual(1);
    });

    it("refuses a knowledge base's searches beyond its waiting limit with 429, and answers every other", async () => {
      const small = await smallKnowledgeBase();
      const get = (id: string) => call(t, 'GET', `${kbPath(id)}/search?q=request&limit=10`);
      const flood = Array.from({ length: SCAN_WAITING_PER_TENANT + 12 }, () => get(bot));
      const other = await get(small);
      const answers = await Promise.all(flood);
      expect(other.statusCode, other.body).toBe(200);
      expect(answers.every((res) => res.statusCode === 200 || res.statusCode === 429)).toBe(true);
      const refused = answers.filter((res) => res.statusCode === 429);
      expect(refused.length).toBeGreaterThan(0);
      expect(refused[0]!.json()).toEqual({
        error: 'quota_exceeded',
        message: expect.stringContaining('searches waiting'),
        details: { waiting: SCAN_WAITING_PER_TENANT },
      });
      expect(t.storage.scans()).toMatchObject({ running: 0, waiting: 0 });
      const metrics = (await call(t, 'GET', '/metrics', { key: null })).body;
      expect(metrics).toMatch(/^search_scans\{state="waiting"\} 0$/m);
      expect(Number(/^search_scans\{state="refused"\} (\d+)$/m.exec(metrics)?.[1])).toBe(refused.length);
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
