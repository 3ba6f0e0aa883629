/**
 * DESIGN §6: "A deletion that races an ingestion of the same link never leaves the link or
 * its passages behind." Each interleaving is forced: the page is held open by the local
 * server, or a transaction is stopped right after one of its statements by the query tap.
 * On PostgreSQL the test waits until the other transaction is seen waiting for the lock,
 * so each order really happens; on SQLite the one write connection serialises them.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IngestionWorker } from '../../src/jobs/ingestion-worker.js';
import { buildTestApp, type TestApp } from '../support/app.js';
import { DIALECTS } from '../support/databases.js';
import { call, createCopilot, kbPath } from '../support/http.js';
import {
  deleteLinks,
  indexHits,
  phantomPostings,
  linkRows,
  links,
  lockWaiters,
  orphanPassages,
  passageRows,
  sweepRetired,
  postLinks,
  search,
  seededRandom,
  waitUntil,
} from '../support/knowledge-base.js';
import { PageServer } from '../support/pages.js';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

// Several passages, so that storing them is more than one statement's work; `sections: 150`
// makes a page of more passages than one transaction stores at once (AT_ONCE_PASSAGES), so
// that it is staged.
const longText = (word: string, sections = 6) =>
  Array.from({ length: sections }, (_, i) => `Section ${i} about the ${word} topic. ${'More words of the section follow here. '.repeat(45)}`).join('\n\n');

for (const dialect of DIALECTS) {
  describe(`delete racing ingestion of the same link (${dialect})`, () => {
    let t: TestApp;
    let pages: PageServer;
    let worker: IngestionWorker;

    beforeAll(async () => {
      pages = await PageServer.start();
      // No worker of its own: each test drives one with runOne(), so it knows when the job is over.
      t = await buildTestApp(dialect, { tap: true });
      worker = t.newWorker();
    });
    afterAll(async () => {
      await t?.close();
      await pages?.close();
    });

    /** Waits (PostgreSQL) until a transaction is blocked on a row lock; on SQLite lets the other request queue up. */
    async function untilBlocked(alsoDone?: () => boolean): Promise<void> {
      if (dialect === 'postgres') {
        await waitUntil(async () => (alsoDone?.() ?? false) || (await lockWaiters(t.rawStorage)) > 0, 'a transaction waiting for a lock');
      } else {
        await sleep(20);
      }
    }

    /** The link is gone and no search sees its passages; once the housekeeping has run (sweepRetired), none is stored. */
    async function expectNothingLeft(bot: string, url: string, ids: string[], word: string): Promise<void> {
      expect(await linkRows(t.storage, bot, [url])).toEqual([]);
      expect(await orphanPassages(t.storage)).toBe(0);
      const remaining = await links(t, bot);
      if (remaining) {
        expect(remaining.has(url)).toBe(false);
        expect((await search(t, bot, word)).results).toEqual([]);
      }
      await sweepRetired(t.storage);
      expect(await passageRows(t.storage, ids)).toEqual([]);
      expect(await orphanPassages(t.storage)).toBe(0);
      expect(await indexHits(t.storage, word)).toBe(0);
      expect(await phantomPostings(t.storage)).toBe(0);
    }

    it('the page answers only after the DELETE has committed: the worker leaves neither the link nor passages', async () => {
      const bot = (await createCopilot(t)).id;
      pages.set('/held', { type: 'text/plain', body: longText('heldwordalpha') });
      const url = pages.url('/held');
      const hold = pages.hold('/held');
      await postLinks(t, bot, [url]);
      const [row] = await linkRows(t.storage, bot, [url]);

      const run = worker.runOne();
      await hold.arrived;
      const res = await deleteLinks(t, bot, [url]);
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toMatchObject({ deleted_links: [url], not_found_links: [] });
      hold.release();
      expect(await run).toBe(true);

      await expectNothingLeft(bot, url, [row!.id], 'heldwordalpha');
      expect(await call(t, 'GET', kbPath(bot)).then((r) => r.statusCode)).toBe(404); // it was the last link
      expect(await worker.runOne()).toBe(false); // no job left behind either
    });

    it('the same while the knowledge base keeps other links: only the deleted link is affected', async () => {
      const bot = (await createCopilot(t)).id;
      pages.set('/keeper', { type: 'text/plain', body: 'The keeperwordbeta page stays.' });
      pages.set('/held2', { type: 'text/plain', body: longText('heldwordgamma') });
      const keeper = pages.url('/keeper');
      const url = pages.url('/held2');
      await postLinks(t, bot, [keeper]);
      expect(await worker.runOne()).toBe(true);
      const hold = pages.hold('/held2');
      await postLinks(t, bot, [url]);
      const [row] = await linkRows(t.storage, bot, [url]);
      const run = worker.runOne();
      await hold.arrived;
      expect((await deleteLinks(t, bot, [url])).statusCode).toBe(200);
      hold.release();
      await run;
      await expectNothingLeft(bot, url, [row!.id], 'heldwordgamma');
      expect([...(await links(t, bot))!.values()].map((l) => [l.url, l.status])).toEqual([[keeper, 'indexed']]);
      expect((await search(t, bot, 'keeperwordbeta')).results).toHaveLength(1);
    });

    it('the worker is half-way through storing a small page (its one transaction not committed) when the DELETE runs', async () => {
      const bot = (await createCopilot(t)).id;
      pages.set('/storing-small', { type: 'text/plain', body: longText('smallwordkappa') });
      const url = pages.url('/storing-small');
      await postLinks(t, bot, [url]);
      const [row] = await linkRows(t.storage, bot, [url]);

      const paused = t.tap.pauseAfter({ kind: 'insert', table: 'kb_passages' });
      const run = worker.runOne();
      await paused.reached; // the page's passages inserted, the transaction that publishes them open
      let deleted = false;
      const del = deleteLinks(t, bot, [url]).then((r) => {
        deleted = true;
        return r;
      });
      // The store holds the knowledge base's lock (PostgreSQL) or the one writer (SQLite): the delete waits.
      await untilBlocked(() => deleted);
      expect(deleted).toBe(false);
      paused.release();
      expect(await run).toBe(true);
      const res = await del;
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toMatchObject({ deleted_links: [url] });
      await expectNothingLeft(bot, url, [row!.id], 'smallwordkappa');
    });

    it('the worker is half-way through storing passages (a batch of its hidden set not committed) when the DELETE runs', async () => {
      const bot = (await createCopilot(t)).id;
      pages.set('/storing', { type: 'text/plain', body: longText('storingworddelta', 150) });
      const url = pages.url('/storing');
      await postLinks(t, bot, [url]);
      const [row] = await linkRows(t.storage, bot, [url]);

      const paused = t.tap.pauseAfter({ kind: 'insert', table: 'kb_passages' });
      const run = worker.runOne();
      await paused.reached; // passages of a new hidden set inserted, their transaction open
      let deleted = false;
      const del = deleteLinks(t, bot, [url]).then((r) => {
        deleted = true;
        return r;
      });
      if (dialect === 'sqlite') {
        // One writer: the delete waits for the batch's transaction to end.
        await untilBlocked(() => deleted);
        expect(deleted).toBe(false);
      } else {
        // The batch holds nothing the delete needs: it is answered at once.
        expect((await del).statusCode).toBe(200);
      }
      paused.release();
      await run;
      const res = await del;
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toMatchObject({ deleted_links: [url] });
      await expectNothingLeft(bot, url, [row!.id], 'storingworddelta');
    });

    it('the DELETE is half-way (link rows gone, transaction open) when the worker stores its passages', async () => {
      const bot = (await createCopilot(t)).id;
      pages.set('/late', { type: 'text/plain', body: longText('latewordepsilon') });
      const url = pages.url('/late');
      const hold = pages.hold('/late');
      await postLinks(t, bot, [url]);
      const [row] = await linkRows(t.storage, bot, [url]);

      const run = worker.runOne();
      await hold.arrived;
      const paused = t.tap.pauseAfter({ kind: 'delete', table: 'kb_links' });
      const del = deleteLinks(t, bot, [url]);
      await paused.reached;
      let stored = false;
      const runDone = run.then((r) => {
        stored = true;
        return r;
      });
      hold.release();
      await untilBlocked(() => stored);
      paused.release();
      expect((await del).statusCode).toBe(200);
      await runDone;
      await expectNothingLeft(bot, url, [row!.id], 'latewordepsilon');
    });

    it('a refresh (re-POST) while the old fetch is in flight: the stale result is dropped, the new one stored', async () => {
      const bot = (await createCopilot(t)).id;
      pages.set('/refreshing', { type: 'text/plain', body: 'Old text with staleworddzeta.' });
      const url = pages.url('/refreshing');
      const hold = pages.hold('/refreshing');
      await postLinks(t, bot, [url]);
      const run = worker.runOne();
      await hold.arrived;
      pages.set('/refreshing', { type: 'text/plain', body: 'New text with freshwordeta.' });
      expect((await postLinks(t, bot, [url])).json().links[0].status).toBe('pending');
      // The page is answered with the new text but it was fetched for the old generation.
      hold.release();
      await run;
      expect((await links(t, bot))!.get(url)!.status).toBe('pending');
      expect(await worker.runOne()).toBe(true);
      const link = (await links(t, bot))!.get(url)!;
      expect(link).toMatchObject({ status: 'indexed', passages: 1 });
      expect((await search(t, bot, 'freshwordeta')).results).toHaveLength(1);
      expect(await orphanPassages(t.storage)).toBe(0);
    });

    it('a worker stopped mid-fetch hands its job back at once: pending, no lease, the attempt not counted', async () => {
      const bot = (await createCopilot(t)).id;
      pages.set('/stopped', { type: 'text/plain', body: 'The stoppedwordtheta page.' });
      const url = pages.url('/stopped');
      const hold = pages.hold('/stopped');
      await postLinks(t, bot, [url]);
      const stopping = t.newWorker();
      stopping.start();
      await hold.arrived;
      const [claimed] = await linkRows(t.storage, bot, [url]);
      expect(claimed!.lease_owner).not.toBeNull();
      await stopping.stop();
      hold.release();
      const [row] = await linkRows(t.storage, bot, [url]);
      expect(row).toMatchObject({ status: 'pending', lease_owner: null, lease_expires_at: null });
      expect(Number(row!.attempts)).toBe(0);
      // Another worker takes it at once (no lease to wait for).
      expect(await worker.runOne()).toBe(true);
      expect((await links(t, bot))!.get(url)).toMatchObject({ status: 'indexed', error: null });
    });

    it('a link added while the last one is being deleted keeps its knowledge base', async () => {
      const bot = (await createCopilot(t)).id;
      const first = pages.url('/kb-first');
      const second = pages.url('/kb-second');
      await postLinks(t, bot, [first]);
      // Stop the delete after it has counted the remaining links (none) and before it removes the knowledge base.
      const paused = t.tap.pauseAfter({ kind: 'select', table: 'kb_links', skip: 1 });
      const del = deleteLinks(t, bot, [first]);
      await paused.reached;
      let added = false;
      const add = postLinks(t, bot, [second]).then((r) => {
        added = true;
        return r;
      });
      await untilBlocked(() => added);
      paused.release();
      expect((await del).statusCode).toBe(200);
      expect((await add).statusCode).toBe(202);

      const listed = await links(t, bot);
      expect(listed, 'the knowledge base must still exist: it holds a link').not.toBeNull();
      expect([...listed!.keys()]).toEqual([second]);
      expect(await t.storage.db.selectFrom('knowledge_bases').select('bot_id').where('bot_id', '=', bot).execute()).toHaveLength(1);
    });

    it("two deletes of a bot's last two links at once: the knowledge base goes with them", async () => {
      const bot = (await createCopilot(t)).id;
      const [one, two] = [pages.url('/pair-one'), pages.url('/pair-two')];
      await postLinks(t, bot, [one, two]);
      // The first delete has removed its link and counted the rest (one left) when the second runs.
      const paused = t.tap.pauseAfter({ kind: 'select', table: 'kb_links', skip: 1 });
      const first = deleteLinks(t, bot, [one]);
      await paused.reached;
      let done = false;
      const second = deleteLinks(t, bot, [two]).then((r) => {
        done = true;
        return r;
      });
      await untilBlocked(() => done);
      paused.release();
      expect((await first).statusCode).toBe(200);
      expect((await second).statusCode).toBe(200);
      expect(await linkRows(t.storage, bot)).toEqual([]);
      expect(await t.storage.db.selectFrom('knowledge_bases').select('bot_id').where('bot_id', '=', bot).execute()).toEqual([]);
      expect(await call(t, 'GET', kbPath(bot)).then((r) => r.statusCode)).toBe(404);
    });

    it('many rounds with random timings: no orphan passages, no deleted link comes back', async () => {
      const seed = Number(process.env.KB_RACE_SEED ?? 20240611);
      const random = seededRandom(seed);
      const bot = (await createCopilot(t)).id;
      const rounds = 30;
      const ids: string[] = [];
      for (let i = 0; i < rounds; i++) {
        const path = `/random/${i}`;
        pages.set(path, { type: 'text/plain', body: longText(`randomword${i}x`), delayMs: Math.floor(random() * 8) });
        const url = pages.url(path);
        await postLinks(t, bot, [url]);
        ids.push((await linkRows(t.storage, bot, [url]))[0]!.id);
        const deleteAfter = Math.floor(random() * 14);
        const run = worker.runOne();
        await sleep(deleteAfter);
        const res = await deleteLinks(t, bot, [url]);
        expect(res.statusCode, `round ${i} (seed ${seed}): ${res.body}`).toBe(200);
        await run;
        expect(await linkRows(t.storage, bot, [url]), `round ${i} (seed ${seed})`).toEqual([]);
        expect(await orphanPassages(t.storage), `round ${i} (seed ${seed})`).toBe(0);
        await sweepRetired(t.storage);
        expect(await passageRows(t.storage, [ids[i]!]), `round ${i} (seed ${seed})`).toEqual([]);
      }
      expect(await orphanPassages(t.storage)).toBe(0);
      for (let i = 0; i < rounds; i++) expect(await indexHits(t.storage, `randomword${i}x`)).toBe(0);
      expect(await phantomPostings(t.storage)).toBe(0);
    });

    it('running workers and concurrent deletes of every link: nothing left behind', async () => {
      const seed = Number(process.env.KB_RACE_SEED ?? 7);
      const random = seededRandom(seed);
      const bot = (await createCopilot(t)).id;
      const running = t.newWorker({ concurrency: 4, pollIntervalMs: 5 });
      const urls = Array.from({ length: 40 }, (_, i) => pages.url(`/swarm/${i}`));
      for (const [i, u] of urls.entries())
        pages.set(new URL(u).pathname, { type: 'text/plain', body: longText(`swarmword${i}x`), delayMs: Math.floor(random() * 10) });
      await postLinks(t, bot, urls);
      const ids = (await linkRows(t.storage, bot)).map((r) => r.id);
      running.start();
      await Promise.all(
        urls.map(async (u) => {
          await sleep(Math.floor(random() * 40));
          const res = await deleteLinks(t, bot, [u]);
          expect(res.statusCode, res.body).toBe(200);
        }),
      );
      // Jobs still in flight are cancelled and handed back (nothing to hand back: their links are gone).
      await running.stop();
      expect(await linkRows(t.storage, bot)).toEqual([]);
      expect(await orphanPassages(t.storage)).toBe(0);
      await sweepRetired(t.storage);
      expect(await passageRows(t.storage, ids)).toEqual([]);
      expect(await orphanPassages(t.storage)).toBe(0);
      expect(await call(t, 'GET', kbPath(bot)).then((r) => r.statusCode)).toBe(404);
    });
  });
}
