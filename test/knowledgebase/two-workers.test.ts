/**
 * DESIGN §6: "with several instances on PostgreSQL each job runs once". Two storages (two
 * connection pools, as two instances would have) on one throw-away database, a worker on
 * each, 40 links: every page is fetched exactly once and every link ends indexed.
 * On SQLite (one instance per database file) the same holds for two workers sharing it.
 */
import { describe, expect, it } from 'vitest';
import { createCopilot } from '../../src/domain/copilots/copilot.service.js';
import { addLinks } from '../../src/domain/knowledgebase/knowledge-base.service.js';
import { IngestionWorker, type WorkerOptions } from '../../src/jobs/ingestion-worker.js';
import { DIALECTS } from '../support/databases.js';
import { linkRows, orphanPassages, passageRows, useTwoInstances, waitUntil } from '../support/knowledge-base.js';

const LINKS = 40;

for (const dialect of DIALECTS) {
  describe(`two workers on one database (${dialect})`, () => {
    const instances = useTwoInstances(dialect);
    const { storages, workers } = instances;

    it(`fetch each of ${LINKS} pages exactly once and index every link`, async () => {
      const bot = (await createCopilot(storages[0]!.db, { name: 'Two workers' })).id;
      const urls = Array.from({ length: LINKS }, (_, i) => instances.pages.url(`/job/${i}`));
      for (let i = 0; i < LINKS; i++) {
        instances.pages.set(`/job/${i}`, { type: 'text/plain', body: `Job page ${i} for the twoworkerword test.`, delayMs: 15 });
      }
      await addLinks(storages[0]!.db, bot, urls);

      const byWorker = [0, 0];
      const options = (n: number): WorkerOptions => ({
        concurrency: 2,
        pollIntervalMs: 10,
        fetchPolicy: { timeoutMs: 10_000, maxBytes: 1024 * 1024, maxRedirects: 0, allowNetworks: ['127.0.0.0/8', '::1/128'] },
        logger: { info: () => void byWorker[n]!++, warn: () => undefined, error: (obj: unknown) => console.error(obj) },
        taskThreads: instances.taskThreads[n]!,
      });
      workers.push(new IngestionWorker(storages[0]!, options(0)), new IngestionWorker(storages[1]!, options(1)));
      for (const w of workers) w.start();

      await waitUntil(async () => (await linkRows(storages[0]!, bot)).every((r) => r.status !== 'pending'), 'every link to be processed', {
        timeoutMs: 30_000,
        intervalMs: 50,
      });
      for (const w of workers) await w.stop();

      const rows = await linkRows(storages[0]!, bot);
      expect(rows).toHaveLength(LINKS);
      for (const row of rows) {
        expect(row.status, `${row.url}: ${row.error}`).toBe('indexed');
        expect(Number(row.attempts), row.url).toBe(1);
        expect(row.lease_owner).toBeNull();
        expect(await passageRows(storages[0]!, [row.id])).toHaveLength(1);
      }
      for (let i = 0; i < LINKS; i++) expect(instances.pages.count(`/job/${i}`), `/job/${i}`).toBe(1);
      expect([...instances.pages.requests.values()].reduce((a, b) => a + b, 0)).toBe(LINKS);
      expect(byWorker[0]! + byWorker[1]!).toBe(LINKS);
      expect(await orphanPassages(storages[0]!)).toBe(0);
    });
  });
}
