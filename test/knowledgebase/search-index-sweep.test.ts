import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSearchIndexHousekeeping } from '../../src/jobs/search-index-housekeeping.js';
import { insertPassages, sweepSearchIndex } from '../../src/storage/knowledge-base.repository.js';
import { buildTestApp, type TestApp } from '../support/app.js';
import { createCopilot } from '../support/http.js';
import { deleteLinks, ftsHits, postLinks, rawFtsHits, search, waitForLinks, waitUntil } from '../support/knowledge-base.js';
import { PageServer } from '../support/pages.js';

// SQLite only: a deletion leaves the FTS5 entries of its passages behind (removing them
// one by one would make a large deletion many times slower); they are never returned by
// a search, and the search-index housekeeping sweeps them out, with or without an ingestion worker.
describe('stale entries of the SQLite search index', () => {
  let pages: PageServer;
  beforeAll(async () => {
    pages = await PageServer.start();
    pages.set('/kb/sweep', { type: 'text/plain', body: `A page about sweepmarkerword.\n\n${'Filler text for the page. '.repeat(60)}` });
    pages.set('/kb/keep', { type: 'text/plain', body: `A page that stays.\n\n${'Other filler text. '.repeat(60)}` });
  });
  afterAll(async () => pages.close());

  async function indexedThenDeleted(t: TestApp, beforeDelete: () => Promise<void> = async () => undefined): Promise<string> {
    const bot = (await createCopilot(t)).id;
    const url = pages.url('/kb/sweep');
    const keep = pages.url('/kb/keep');
    expect((await postLinks(t, bot, [url, keep])).statusCode).toBe(202);
    await waitForLinks(t, bot, [url, keep], (link) => link.status === 'indexed');
    expect(await ftsHits(t.storage, 'sweepmarkerword')).toBeGreaterThan(0);
    await beforeDelete();
    expect((await deleteLinks(t, bot, [url])).statusCode).toBe(200);
    return bot;
  }

  const garbage = async (t: TestApp) => Number((await sql<{ n: number }>`select count(*) as n from kb_fts_garbage`.execute(t.storage.db)).rows[0]!.n);

  it('are never returned, and sweepSearchIndex removes them in batches', async () => {
    const t = await buildTestApp('sqlite', { worker: true });
    try {
      // No idle sweeping in this test: the sweep is called by hand.
      const bot = await indexedThenDeleted(t, () => t.worker!.stop());
      // The deletion itself left the index entries: they match, but no search returns them.
      expect(await rawFtsHits(t.storage, 'sweepmarkerword')).toBeGreaterThan(0);
      expect(await ftsHits(t.storage, 'sweepmarkerword')).toBe(0);
      expect((await search(t, bot, 'sweepmarkerword')).results).toEqual([]);
      expect(await garbage(t)).toBeGreaterThan(0);

      let swept = 0;
      for (let n = await sweepSearchIndex(t.storage.db, 'sqlite', 1); n > 0; n = await sweepSearchIndex(t.storage.db, 'sqlite', 1)) swept += n;
      expect(swept).toBeGreaterThan(0);
      expect(await rawFtsHits(t.storage, 'sweepmarkerword')).toBe(0);
      expect(await garbage(t)).toBe(0);
    } finally {
      await t.close();
    }
  });

  it('housekeeping sweeps them by itself, also with no ingestion worker running (KB_WORKERS=0)', async () => {
    const t = await buildTestApp('sqlite', { worker: true });
    const housekeeping = startSearchIndexHousekeeping(t.storage, { intervalMs: 50 });
    try {
      await indexedThenDeleted(t, () => t.worker!.stop());
      await waitUntil(async () => (await rawFtsHits(t.storage, 'sweepmarkerword')) === 0 && (await garbage(t)) === 0, 'housekeeping to sweep the index', {
        timeoutMs: 10_000,
      });
    } finally {
      await housekeeping.stop();
      await t.close();
    }
  });

  it('sweeping a large backlog leaves the event loop free between batches', async () => {
    const t = await buildTestApp('sqlite');
    let housekeeping: { stop(): Promise<void> } | null = null;
    try {
      // 5,000 stale entries: 25 batches of the sweep.
      await t.storage.db.transaction().execute(async (trx) => {
        for (let i = 0; i < 5000; i += 500) {
          const rows = Array.from({ length: 500 }, (_, k) => ({
            link_id: 'gone',
            bot_id: 'gone',
            seq: i + k,
            content: `stale passage ${i + k} sweepbacklogword`,
          }));
          await insertPassages(trx, rows);
        }
        await trx.deleteFrom('kb_passages').where('link_id', '=', 'gone').execute();
      });
      const initial = await garbage(t);
      expect(initial).toBe(5000);
      housekeeping = startSearchIndexHousekeeping(t.storage, { intervalMs: 50 });
      // Timers run only when the event loop turns: the first time this poll sees progress,
      // the sweep must still be under way (a sweep that never yields would be finished).
      const seen = await waitUntil(
        async () => {
          const left = await garbage(t);
          return left < initial ? { left } : null;
        },
        'the sweep to start',
        { intervalMs: 1 },
      );
      expect(seen.left).toBeGreaterThan(0);
      await waitUntil(async () => (await garbage(t)) === 0, 'the sweep to finish', { timeoutMs: 20_000 });
    } finally {
      await housekeeping?.stop();
      await t.close();
    }
  });
});
