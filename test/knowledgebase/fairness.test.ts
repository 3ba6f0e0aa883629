/**
 * Issue 13 §3: one tenant cannot stall every other tenant's knowledge base. Jobs are claimed
 * fairly across bots — the bot with the fewest jobs running, then the one whose jobs were
 * claimed least recently, then its oldest due job — on one instance and on several instances
 * of one PostgreSQL database.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCopilot as createCopilotRow } from '../../src/domain/copilots/copilot.service.js';
import { addLinks } from '../../src/domain/knowledgebase/knowledge-base.service.js';
import { nowTimestamp, timestampIn } from '../../src/domain/ids.js';
import { IngestionWorker, type WorkerOptions } from '../../src/jobs/ingestion-worker.js';
import * as kb from '../../src/storage/knowledge-base.repository.js';
import type { KbLinkRow } from '../../src/storage/schema.js';
import { buildTestApp, type TestApp } from '../support/app.js';
import { DIALECTS } from '../support/databases.js';
import { createCopilot } from '../support/http.js';
import { linkRows, links, postLinks, useTwoInstances, waitUntil } from '../support/knowledge-base.js';
import { PageServer } from '../support/pages.js';

for (const dialect of DIALECTS) {
  describe(`fair claiming across bots (${dialect})`, () => {
    let t: TestApp;
    let pages: PageServer;
    let worker: IngestionWorker;
    /** Paths in the order their requests arrived. */
    const arrivals: string[] = [];

    beforeAll(async () => {
      pages = await PageServer.start();
      // No worker of its own: each test drives one with runOne(), so the order is exact.
      t = await buildTestApp(dialect);
      worker = t.newWorker();
    });
    afterAll(async () => {
      await t?.close();
      await pages?.close();
    });

    function page(path: string): string {
      pages.set(path, (_req, res) => {
        arrivals.push(path);
        res.writeHead(200, { 'content-type': 'text/plain' }).end(`The page ${path} about fairness.`);
      });
      return pages.url(path);
    }

    it("a bot's new link goes before the rest of another bot's long queue", async () => {
      const [a, b] = [(await createCopilot(t, { name: 'Busy tenant' })).id, (await createCopilot(t, { name: 'Quiet tenant' })).id];
      const queueA = Array.from({ length: 5 }, (_, i) => page(`/first/a/${i}`));
      expect((await postLinks(t, a, queueA)).statusCode).toBe(202);
      expect(await worker.runOne()).toBe(true); // one of A's: A was claimed most recently
      const linkB = page('/first/b/0');
      expect((await postLinks(t, b, [linkB])).statusCode).toBe(202);

      arrivals.length = 0;
      expect(await worker.runOne()).toBe(true);
      expect(arrivals).toEqual(['/first/b/0']);
      expect((await links(t, b))!.get(linkB)!.status).toBe('indexed');
      // Then A's queue goes on.
      while (await worker.runOne());
      expect(arrivals).toHaveLength(5);
      const rest = queueA.map((u) => new URL(u).pathname).filter((p) => pages.count(p) === 1);
      expect(rest).toHaveLength(5);
    });

    it('bots take turns: every run of three claims serves each of three bots once', async () => {
      const bots = [(await createCopilot(t, { name: 'One' })).id, (await createCopilot(t, { name: 'Two' })).id, (await createCopilot(t, { name: 'Three' })).id];
      // Queued one bot after the other: oldest-first would serve them one bot at a time.
      for (const [n, bot] of bots.entries()) {
        expect(
          (
            await postLinks(
              t,
              bot,
              [0, 1, 2].map((i) => page(`/turns/${n}/${i}`)),
            )
          ).statusCode,
        ).toBe(202);
      }
      arrivals.length = 0;
      while (await worker.runOne());
      expect(arrivals).toHaveLength(9);
      const botOf = (path: string) => path.split('/')[2];
      for (let round = 0; round < 3; round++) {
        const served = arrivals.slice(round * 3, round * 3 + 3);
        expect(new Set(served.map(botOf)).size, served.join(', ')).toBe(3);
      }
    });

    /** Copilots named `names`, each with two links queued (paths under `prefix`); their ids. */
    async function botsWithTwoLinks(prefix: string, names: string[]): Promise<string[]> {
      const bots: string[] = [];
      for (const [n, name] of names.entries()) {
        const bot = (await createCopilot(t, { name })).id;
        expect(
          (
            await postLinks(
              t,
              bot,
              [0, 1].map((i) => page(`${prefix}/${n}/${i}`)),
            )
          ).statusCode,
        ).toBe(202);
        bots.push(bot);
      }
      return bots;
    }

    const claimAs = (owner: string, on = t.storage.db) => kb.claimJob(on, t.storage.dialect, owner, nowTimestamp(), timestampIn(60_000));

    /** The jobs given back, and the queue run to its end for the tests after. */
    async function giveBack(owner: string, jobs: readonly KbLinkRow[]): Promise<void> {
      for (const job of jobs) await kb.releaseJob(t.storage.db, { id: job.id, owner, generation: Number(job.generation) });
      while (await worker.runOne());
    }

    it('claims made before the turn moves on take different bots: the bot with the fewest jobs running goes first', async () => {
      // Two workers whose fetches timed out together claim at once, and a chained claim's turn moves
      // on only after its transaction: claims can come before the turn of the previous one moves.
      // Both bots never claimed, so the turns alone tie; the first claim's running job must count.
      const bots = await botsWithTwoLinks('/tie', ['Tie one', 'Tie two']);
      const first = await claimAs('tie-test');
      const second = await claimAs('tie-test');
      expect([first?.bot_id, second?.bot_id].sort()).toEqual([...bots].sort());
      await giveBack('tie-test', [first!, second!]);
    });

    // Claims at the very same moment: the first one's transaction has not committed when the
    // second runs, so the second cannot see its running job. Only PostgreSQL runs claims at once
    // (SQLite's single writer runs one statement after the other: the test above covers it).
    it.runIf(dialect === 'postgres')(
      'claims at the same moment take different bots: a claim not yet committed holds its bot; with one bot, both take its jobs',
      async () => {
        const both = async (): Promise<KbLinkRow[]> =>
          t.storage.db.transaction().execute(async (trx) => {
            const first = await claimAs('moment-test', trx);
            const second = await claimAs('moment-test'); // another connection, while the first is not committed
            return [first!, second!];
          });
        const bots = await botsWithTwoLinks('/moment', ['Same moment one', 'Same moment two']);
        const taken = await both();
        expect(taken.map((job) => job.bot_id).sort()).toEqual([...bots].sort());
        await giveBack('moment-test', taken);
        // One bot with due jobs: the second claim still takes its other job (no worker idles).
        const [sole] = await botsWithTwoLinks('/moment-sole', ['Same moment alone']);
        const alone = await both();
        expect(alone.map((job) => job.bot_id)).toEqual([sole, sole]);
        expect(alone[0]!.id).not.toBe(alone[1]!.id);
        await giveBack('moment-test', alone);
      },
    );

    it('a job waiting for its retry (run_after in the future) does not hold its bot: the next due job of the bot goes', async () => {
      const bot = (await createCopilot(t, { name: 'Retrying' })).id;
      const [later, now] = [page('/retry/later'), page('/retry/now')];
      await postLinks(t, bot, [later, now]);
      const [row] = await linkRows(t.storage, bot, [later]);
      await t.storage.db.updateTable('kb_links').set({ run_after: '2999-01-01T00:00:00.000000Z' }).where('id', '=', row!.id).execute();
      arrivals.length = 0;
      expect(await worker.runOne()).toBe(true);
      expect(await worker.runOne()).toBe(false);
      expect(arrivals).toEqual(['/retry/now']);
    });
  });

  describe(`fair claiming with several instances on one database (${dialect})`, () => {
    const instances = useTwoInstances(dialect);
    const { storages, workers } = instances;

    it('three bots with 12 links each: every page fetched exactly once, every link indexed', async () => {
      const bots: string[] = [];
      for (let n = 0; n < 3; n++) bots.push((await createCopilotRow(storages[0]!.db, { name: `Instance bot ${n}` })).id);
      for (const [n, bot] of bots.entries()) {
        const urls = Array.from({ length: 12 }, (_, i) => {
          instances.pages.set(`/multi/${n}/${i}`, { type: 'text/plain', body: `Page ${i} of bot ${n}.`, delayMs: 5 });
          return instances.pages.url(`/multi/${n}/${i}`);
        });
        await addLinks(storages[0]!.db, bot, urls);
      }
      const options: Omit<WorkerOptions, 'taskThreads'> = {
        concurrency: 3,
        pollIntervalMs: 10,
        fetchPolicy: { timeoutMs: 10_000, maxBytes: 1024 * 1024, maxRedirects: 0, allowNetworks: ['127.0.0.0/8', '::1/128'] },
        logger: { info: () => undefined, warn: () => undefined, error: (obj: unknown) => console.error(obj) },
      };
      const [first, second] = instances.taskThreads;
      workers.push(
        new IngestionWorker(storages[0]!, { ...options, taskThreads: first! }),
        new IngestionWorker(storages[1]!, { ...options, taskThreads: second! }),
      );
      for (const w of workers) w.start();
      await waitUntil(
        async () => {
          for (const bot of bots) if ((await linkRows(storages[0]!, bot)).some((r) => r.status === 'pending')) return false;
          return true;
        },
        'every link to be processed',
        { timeoutMs: 30_000, intervalMs: 50 },
      );
      for (const w of workers) await w.stop();
      for (const bot of bots) {
        for (const row of await linkRows(storages[0]!, bot)) {
          expect(row.status, `${row.url}: ${row.error}`).toBe('indexed');
          expect(Number(row.attempts), row.url).toBe(1);
        }
      }
      for (let n = 0; n < 3; n++) for (let i = 0; i < 12; i++) expect(instances.pages.count(`/multi/${n}/${i}`), `/multi/${n}/${i}`).toBe(1);
    });
  });
}
