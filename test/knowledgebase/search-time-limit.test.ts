/**
 * A search past its time limit (SEARCH_TIMEOUT_MS) is stopped and answered 429 with the
 * contract's body, alike on both databases (the mechanism: test/storage/scan-time-limit.test.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../support/app.js';
import { DIALECTS } from '../support/databases.js';
import { call, createCopilot, kbPath } from '../support/http.js';
import { seedIndexedLinks } from '../support/seed.js';

for (const dialect of DIALECTS) {
  describe(`a search past its time limit (${dialect})`, () => {
    let t!: TestApp;
    let bot!: string;
    beforeAll(async () => {
      // 1 ms: no search of thousands of passages holding the word ends within it.
      t = await buildTestApp(dialect, { env: { SEARCH_TIMEOUT_MS: '1' } });
      bot = (await createCopilot(t)).id;
      await t.storage.db.transaction().execute((trx) =>
        seedIndexedLinks(
          trx,
          bot,
          Array.from({ length: 10 }, (_, l) => ({
            url: `https://docs.example.com/page-${l}`,
            passages: Array.from({ length: 500 }, (_, seq) => `Each request of item ${l * 500 + seq} names the request body ${seq % 97}.`),
          })),
        ),
      );
    }, 120_000);
    afterAll(async () => {
      await t?.close();
    });

    it('is answered 429 quota_exceeded with the limit, and counted', async () => {
      const res = await call(t, 'GET', `${kbPath(bot)}/search?q=request&limit=10`);
      expect(res.statusCode, res.body).toBe(429);
      expect(res.json()).toEqual({
        error: 'quota_exceeded',
        message: expect.stringContaining('time limit of 1 ms'),
        details: { time_limit_ms: 1 },
      });
      const metrics = (await call(t, 'GET', '/metrics', { key: null })).body;
      expect(Number(/^search_scans\{state="timed_out"\} (\d+)$/m.exec(metrics)?.[1])).toBe(1);
    });
  });
}
