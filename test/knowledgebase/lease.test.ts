/**
 * Issue 13 §4: "each job runs once" holds while an instance is busy. The lease is kept alive
 * for as long as the job runs (a heartbeat extends it for its owner and generation); a job
 * whose link is deleted meanwhile is given up at the next heartbeat; a job cut off again and
 * again (its lease ran out without an outcome: the process died) is tried a bounded number of
 * times, then fails with the reason.
 */
import { describe, expect, it } from 'vitest';
import { nowTimestamp } from '../../src/domain/ids.js';
import * as kb from '../../src/storage/knowledge-base.repository.js';
import { useTestAppWithPages, type TestApp } from '../support/app.js';
import { DIALECTS } from '../support/databases.js';
import { createCopilot } from '../support/http.js';
import { deleteLinks, linkRows, links, postLinks } from '../support/knowledge-base.js';
import type { PageServer } from '../support/pages.js';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const LEASE_MS = 600;

for (const dialect of DIALECTS) {
  describe(`job leases (${dialect})`, () => {
    let t!: TestApp;
    let pages!: PageServer;
    useTestAppWithPages(dialect, {}, (made) => ({ t, pages } = made));

    it('a job running longer than its lease keeps it: another worker does not take the job, the page is fetched once', async () => {
      const busy = t.newWorker({ leaseMs: LEASE_MS });
      const other = t.newWorker({ leaseMs: LEASE_MS });
      const bot = (await createCopilot(t)).id;
      pages.set('/long-job', { type: 'text/plain', body: 'The longjobword page.' });
      const url = pages.url('/long-job');
      const hold = pages.hold('/long-job');
      await postLinks(t, bot, [url]);

      const run = busy.runOne();
      await hold.arrived;
      const [claimed] = await linkRows(t.storage, bot, [url]);
      // Several leases' worth: without a heartbeat the lease would have run out long ago.
      await sleep(4 * LEASE_MS);
      const [held] = await linkRows(t.storage, bot, [url]);
      expect(held!.lease_owner).toBe(claimed!.lease_owner);
      expect(held!.lease_expires_at! > claimed!.lease_expires_at!).toBe(true);
      expect(held!.lease_expires_at! > nowTimestamp()).toBe(true);

      const second = other.runOne();
      hold.release();
      expect(await run).toBe(true);
      expect(await second).toBe(false);
      expect((await links(t, bot))!.get(url)).toMatchObject({ status: 'indexed', error: null });
      expect(pages.count('/long-job')).toBe(1);
      const [row] = await linkRows(t.storage, bot, [url]);
      expect(Number(row!.attempts)).toBe(1);
      expect(row!.lease_owner).toBeNull();
    });

    it('a link deleted while its page is being fetched: the heartbeat gives the job up without waiting for the page', async () => {
      // A deadline far beyond the test's own timeout: only giving up ends this job in time.
      const worker = t.newWorker({ leaseMs: LEASE_MS, fetchPolicy: { ...t.workerOptions.fetchPolicy, timeoutMs: 120_000 } });
      const bot = (await createCopilot(t)).id;
      pages.set('/deleted-mid-fetch', { type: 'text/plain', body: 'Never stored.' });
      const url = pages.url('/deleted-mid-fetch');
      const hold = pages.hold('/deleted-mid-fetch');
      await postLinks(t, bot, [url]);
      try {
        const run = worker.runOne();
        await hold.arrived;
        expect((await deleteLinks(t, bot, [url])).statusCode).toBe(200);
        expect(await run).toBe(true);
        expect(await linkRows(t.storage, bot, [url])).toEqual([]);
      } finally {
        hold.release();
      }
    }, 20_000);

    it('a job cut off maxAttempts times (lease ran out, no outcome) fails with the reason, without another fetch', async () => {
      const worker = t.newWorker({ maxAttempts: 3 });
      const bot = (await createCopilot(t)).id;
      pages.set('/kills-the-process', { type: 'text/plain', body: 'Imagine this page crashed the process every time.' });
      const url = pages.url('/kills-the-process');
      await postLinks(t, bot, [url]);
      // Three claims by instances that died: each lease ran out without an outcome.
      for (let i = 0; i < 3; i++) {
        const now = nowTimestamp();
        const claimed = await kb.claimNextJob(t.storage.db, dialect, `dead-instance-${i}`, now, now);
        expect(claimed?.url).toBe(url);
      }
      expect(await worker.runOne()).toBe(true);
      const link = (await links(t, bot))!.get(url)!;
      expect(link.status).toBe('failed');
      expect(link.error).toBe(
        'The page was tried 3 times and its last attempt never finished (the service stopped or crashed while processing it); it is not tried again.',
      );
      expect(pages.count('/kills-the-process')).toBe(0);
      expect(await worker.runOne()).toBe(false);
    });

    it('a job cut off fewer times is taken again and indexed', async () => {
      const worker = t.newWorker({ maxAttempts: 3 });
      const bot = (await createCopilot(t)).id;
      pages.set('/cut-off-once', { type: 'text/plain', body: 'The cutoffonceword page.' });
      const url = pages.url('/cut-off-once');
      await postLinks(t, bot, [url]);
      const now = nowTimestamp();
      expect((await kb.claimNextJob(t.storage.db, dialect, 'dead-instance', now, now))?.url).toBe(url);
      expect(await worker.runOne()).toBe(true);
      expect((await links(t, bot))!.get(url)).toMatchObject({ status: 'indexed', error: null });
      expect(Number((await linkRows(t.storage, bot, [url]))[0]!.attempts)).toBe(2);
    });
  });
}
