import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Storage } from '../../src/storage/database.js';
import {
  cancelCrawlsOfBot,
  cancelWaitingPages,
  deleteCrawlsOfBot,
  deleteFinishedPages,
  insertCrawl,
  insertNewPages,
  updatePage,
} from '../../src/storage/crawl.repository.js';
import { crawlCounts } from '../../src/storage/migrations/015-crawl-counts.js';
import type { CrawlRow } from '../../src/storage/schema.js';
import { inTransaction } from '../../src/storage/transaction.js';
import { createTestStorage, DIALECTS } from '../support/databases.js';

const T = '2024-01-01T00:00:00.000000Z';
const STATES = ['waiting', 'queued', 'indexed', 'failed', 'duplicate', 'skipped', 'cancelled'] as const;

// Migration 015: each crawl row keeps its pages' counts by state, which GET …/crawls/:id answers
// instead of grouping the crawl's pages on every poll; a finished crawl's pages can then go.
for (const dialect of DIALECTS) {
  describe(`crawl counts (${dialect})`, () => {
    let storage: Storage;
    let cleanup: () => Promise<void>;
    beforeAll(async () => {
      ({ storage, cleanup } = await createTestStorage(dialect));
    });
    afterAll(async () => cleanup?.());

    async function crawl(botId = randomUUID()): Promise<CrawlRow> {
      const row: CrawlRow = {
        id: randomUUID(),
        bot_id: botId,
        mode: 'links',
        start_url: 'https://docs.example/',
        origin: 'https://docs.example',
        path_prefix: '/',
        max_pages: 1000,
        max_depth: 3,
        include_patterns: '[]',
        exclude_patterns: '[]',
        state: 'running',
        discovered: 0,
        blocked: 0,
        pages_queued: 0,
        pages_indexed: 0,
        pages_failed: 0,
        pages_skipped: 0,
        pages_fetched: 0,
        robots_txt: null,
        crawl_delay_ms: 0,
        next_fetch_at: T,
        error: null,
        attempts: 0,
        run_after: T,
        lease_owner: null,
        lease_expires_at: null,
        created_at: T,
        started_at: T,
        finished_at: null,
        updated_at: T,
      };
      await insertCrawl(storage.db, row);
      return row;
    }

    const add = (c: CrawlRow, urls: string[], state: (typeof STATES)[number] = 'waiting') =>
      insertNewPages(
        storage.db,
        urls.map((url, i) => ({
          crawl_id: c.id,
          url,
          bot_id: c.bot_id,
          seq: i,
          depth: 0,
          via_canonical: 0,
          state,
          fetched: 0,
          prior_status: null,
          prior_error: null,
          updated_at: T,
        })),
      );

    /** What the row keeps. */
    const kept = async (id: string) => {
      const r = await storage.db
        .selectFrom('crawls')
        .select(['pages_queued', 'pages_indexed', 'pages_failed', 'pages_skipped', 'pages_fetched'])
        .where('id', '=', id)
        .executeTakeFirstOrThrow();
      return {
        queued: Number(r.pages_queued),
        indexed: Number(r.pages_indexed),
        failed: Number(r.pages_failed),
        skipped: Number(r.pages_skipped),
        fetched: Number(r.pages_fetched),
      };
    };
    /** The same counts, from the pages themselves. */
    const counted = async (id: string) => {
      const pages = await storage.db.selectFrom('crawl_pages').select(['state', 'fetched']).where('crawl_id', '=', id).execute();
      const n = (...states: string[]) => pages.filter((p) => states.includes(p.state)).length;
      return {
        queued: n('waiting', 'queued'),
        indexed: n('indexed'),
        failed: n('failed'),
        skipped: n('duplicate', 'skipped'),
        fetched: pages.reduce((sum, p) => sum + Number(p.fetched), 0),
      };
    };

    it('follows pages added, moved between states, fetched and cancelled, and no other crawl’s', async () => {
      const [a, b] = [await crawl(), await crawl()];
      await add(b, ['https://docs.example/b']);
      expect(await add(a, ['https://docs.example/1', 'https://docs.example/2', 'https://docs.example/3', 'https://docs.example/4'])).toBe(4);
      // A page the crawl has already is skipped by the insert: counted once.
      expect(await add(a, ['https://docs.example/1', 'https://docs.example/5'])).toBe(1);
      await updatePage(storage.db, a.id, 'https://docs.example/1', { state: 'queued' });
      await updatePage(storage.db, a.id, 'https://docs.example/1', { fetched: 1 });
      await updatePage(storage.db, a.id, 'https://docs.example/1', { state: 'indexed' });
      await updatePage(storage.db, a.id, 'https://docs.example/2', { state: 'duplicate', fetched: 1 });
      await updatePage(storage.db, a.id, 'https://docs.example/3', { state: 'failed' });
      // An update that changes neither state nor fetched leaves the counts alone.
      await updatePage(storage.db, a.id, 'https://docs.example/3', { updated_at: '2024-01-02T00:00:00.000000Z' });
      expect(await kept(a.id)).toEqual({ queued: 2, indexed: 1, failed: 1, skipped: 1, fetched: 2 });
      await cancelWaitingPages(storage.db, a.id, T);
      expect(await kept(a.id)).toEqual({ queued: 0, indexed: 1, failed: 1, skipped: 1, fetched: 2 });
      expect(await kept(a.id)).toEqual(await counted(a.id));
      expect(await kept(b.id)).toEqual({ queued: 1, indexed: 0, failed: 0, skipped: 0, fetched: 0 });
    });

    it('equals the counts of the pages after any sequence of changes', async () => {
      const command = fc.oneof(
        fc.record({ kind: fc.constant('add' as const), n: fc.integer({ min: 1, max: 4 }), state: fc.constantFrom(...STATES) }),
        fc.record({ kind: fc.constant('state' as const), pick: fc.nat(), state: fc.constantFrom(...STATES) }),
        fc.record({ kind: fc.constant('fetched' as const), pick: fc.nat(), fetched: fc.constantFrom(0, 1) }),
        fc.record({ kind: fc.constant('cancel' as const) }),
      );
      await fc.assert(
        fc.asyncProperty(fc.array(command, { maxLength: 12 }), async (commands) => {
          const c = await crawl();
          const urls: string[] = [];
          for (const step of commands) {
            if (step.kind === 'add') {
              const fresh = Array.from({ length: step.n }, () => `https://docs.example/${randomUUID()}`);
              await add(c, fresh, step.state);
              urls.push(...fresh);
            } else if (step.kind === 'cancel') {
              await cancelWaitingPages(storage.db, c.id, T);
            } else if (urls.length === 0) {
            } else if (step.kind === 'state') {
              await updatePage(storage.db, c.id, urls[step.pick % urls.length]!, { state: step.state });
            } else {
              await updatePage(storage.db, c.id, urls[step.pick % urls.length]!, { fetched: step.fetched });
            }
          }
          expect(await kept(c.id)).toEqual(await counted(c.id));
        }),
        { numRuns: 25 },
      );
    });

    it('a deleted bot’s crawls are cancelled with their pages counted out; a purge removes both', async () => {
      const botId = randomUUID();
      const c = await crawl(botId);
      await add(c, ['https://docs.example/w']);
      await add(c, ['https://docs.example/q'], 'queued');
      await add(c, ['https://docs.example/i'], 'indexed');
      await inTransaction(storage.db, (trx) => cancelCrawlsOfBot(trx, botId, 'The copilot was deleted.', T));
      expect(await kept(c.id)).toEqual({ queued: 0, indexed: 1, failed: 0, skipped: 0, fetched: 0 });
      await inTransaction(storage.db, (trx) => deleteCrawlsOfBot(trx, botId));
      expect(await storage.db.selectFrom('crawls').select('id').where('bot_id', '=', botId).execute()).toEqual([]);
      expect(await storage.db.selectFrom('crawl_pages').select('url').where('bot_id', '=', botId).execute()).toEqual([]);
    });

    it('the pages of a crawl finished long enough ago are deleted a batch at a time; its counts stay', async () => {
      const finished = async (state: string, at: string) => {
        const c = await crawl();
        await add(c, ['https://docs.example/1', 'https://docs.example/2', 'https://docs.example/3'], 'indexed');
        await storage.db.updateTable('crawls').set({ state, finished_at: at }).where('id', '=', c.id).execute();
        return c;
      };
      const pagesOf = async (c: CrawlRow) => (await storage.db.selectFrom('crawl_pages').select('url').where('crawl_id', '=', c.id).execute()).length;
      const old = await finished('done', '2024-01-01T00:00:00.000000Z');
      const recent = await finished('cancelled', '2024-01-03T00:00:00.000000Z');
      const running = await crawl();
      await add(running, ['https://docs.example/r'], 'queued');
      const before = '2024-01-02T00:00:00.000000Z';
      // Other tests' crawls finished long ago may go first: delete until this one is empty.
      while ((await pagesOf(old)) === 3) expect(await deleteFinishedPages(storage.db, before, 2)).toBeLessThanOrEqual(2);
      expect(await pagesOf(old)).toBe(1);
      while ((await deleteFinishedPages(storage.db, before, 2)) > 0);
      expect(await pagesOf(old)).toBe(0);
      expect(await kept(old.id)).toEqual({ queued: 0, indexed: 3, failed: 0, skipped: 0, fetched: 0 });
      expect(await pagesOf(recent)).toBe(3);
      expect(await pagesOf(running)).toBe(1);
    });

    it('is computed by the migration for crawls stored before it', async () => {
      const migration = crawlCounts(dialect);
      const c = await crawl();
      await add(c, ['https://docs.example/1', 'https://docs.example/2'], 'queued');
      await migration.down!(storage.db);
      try {
        // Stored while no trigger keeps the counts (and the columns are gone).
        await storage.db
          .updateTable('crawl_pages')
          .set({ state: 'indexed', fetched: 1 })
          .where('crawl_id', '=', c.id)
          .where('url', '=', 'https://docs.example/1')
          .execute();
      } finally {
        await migration.up(storage.db);
      }
      expect(await kept(c.id)).toEqual({ queued: 1, indexed: 1, failed: 0, skipped: 0, fetched: 1 });
      await updatePage(storage.db, c.id, 'https://docs.example/2', { state: 'failed', fetched: 1 });
      expect(await kept(c.id)).toEqual({ queued: 0, indexed: 1, failed: 1, skipped: 0, fetched: 2 });
    });
  });
}
