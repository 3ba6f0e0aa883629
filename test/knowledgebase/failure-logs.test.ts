/**
 * Issue 14 §5 (logs): every knowledge-base link failure is logged at warn with its bot, its
 * URL without the query string and the reason; a retry at info. Never as an error: the page
 * decided it.
 */
import { describe, expect, it } from 'vitest';
import { TaskThreadError } from '../../src/threads/task-threads.js';
import { useTestAppWithPages, type TestApp } from '../support/app.js';
import { DIALECTS } from '../support/databases.js';
import { createCopilot } from '../support/http.js';
import { postLinks, waitForLinks, waitUntil } from '../support/knowledge-base.js';
import type { PageServer } from '../support/pages.js';

interface Entry {
  level: 'info' | 'warn' | 'error';
  fields: Record<string, unknown>;
  msg: string;
}

for (const dialect of DIALECTS) {
  describe(`knowledge-base failures in the logs (${dialect})`, () => {
    let t!: TestApp;
    let site!: PageServer;
    const entries: Entry[] = [];
    const log = (level: Entry['level']) => (fields: Record<string, unknown>, msg: string) => void entries.push({ level, fields, msg });
    const logger = { info: log('info'), warn: log('warn'), error: log('error') } as never;
    // The first page's extraction finds the task threads busy (their queue full); the rest are extracted.
    let busy = 1;
    const taskThreads = {
      async passagesOnThread(...args: Parameters<TestApp['services']['taskThreads']['passagesOnThread']>) {
        if (busy-- > 0) throw new TaskThreadError('busy', 'The task threads have too much work queued.');
        return t.services.taskThreads.passagesOnThread(...args);
      },
    };
    useTestAppWithPages(dialect, { worker: { logger, maxAttempts: 2, backoffMs: 10, taskThreads } }, (made) => {
      ({ t, pages: site } = made);
      site.set('/gone', { status: 404, body: 'no' });
      site.set('/busy', { status: 503, body: 'later' });
      site.set('/image', { type: 'image/png', body: Buffer.from([0x89, 0x50]) });
    });

    it('logs each failure at warn with bot id, URL without its query and reason; retries at info', async () => {
      const bot = (await createCopilot(t)).id;
      const urls = [site.url('/gone?token=secret-1'), site.url('/busy?token=secret-2'), site.url('/image?x=secret-3')];
      expect((await postLinks(t, bot, urls)).statusCode).toBe(202);
      await waitForLinks(t, bot, urls);
      // The worker logs a failure once its write has committed: a poll may see the link failed first.
      const failures = await waitUntil(async () => {
        const logged = entries.filter((e) => e.msg === 'knowledge-base link failed');
        return logged.length >= urls.length ? logged : null;
      }, 'the three failures logged');
      expect(failures.map((e) => e.level)).toEqual(['warn', 'warn', 'warn']);
      expect(failures.map((e) => e.fields.url).sort()).toEqual([site.url('/busy'), site.url('/gone'), site.url('/image')]);
      for (const e of failures) {
        expect(e.fields.bot_id).toBe(bot);
        expect(typeof e.fields.reason).toBe('string');
      }
      const retries = entries.filter((e) => e.msg === 'knowledge-base link will be retried');
      expect(retries.map((e) => [e.level, e.fields.url])).toEqual([['info', site.url('/busy')]]);
      expect(entries.filter((e) => e.level === 'error')).toEqual([]);
      // Busy threads are load, not a fault: a warning, and the job retried (it was an error, "failed unexpectedly").
      expect(entries.filter((e) => e.msg === 'knowledge-base job waits: the task threads are busy').map((e) => [e.level, e.fields.retried])).toEqual([
        ['warn', true],
      ]);
      expect(JSON.stringify(entries)).not.toContain('secret-');
    });
  });
}
