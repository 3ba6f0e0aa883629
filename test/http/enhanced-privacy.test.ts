/**
 * Issue 16 §2: `enhanced_privacy = 1` keeps no data beyond what search needs. The copilot's
 * passages are stored with e-mail addresses, phone numbers and credential-shaped strings
 * redacted (search terms too: they are computed from the redacted text), its URLs are logged
 * (and audited) without their query strings, and no raw page is kept. A copilot without the
 * flag keeps its text as it was.
 */
import type http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../support/app.js';
import { DIALECTS } from '../support/databases.js';
import { AUDIT_PATH, call, copilotPath, createCopilot } from '../support/http.js';
import { linkRows, postLinks, search, waitForLinks, waitUntil } from '../support/knowledge-base.js';
import { PageServer } from '../support/pages.js';

const SENSITIVE = {
  email: 'alice.smith@mail.example.com',
  phone: '+44 20 7946 0958',
  openai: 'sk-proj-Ab3dEf5hIj7lMn9pQr1tUv3x',
  github: 'ghp_16C7e42F292c6912E7710c838347Ae178B4a',
  aws: 'AKIAIOSFODNN7EXAMPLE',
  slack: 'xoxb-123456789012-1234567890123-AbCdEfGhIjKl',
  bearer: '4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c',
  jwt: 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U',
};

const PAGE = `<!doctype html><html><head><title>Contact</title></head><body><main>
<h1>Contact the platypus team</h1>
<p>Write to ${SENSITIVE.email} or call ${SENSITIVE.phone} about the platypus.</p>
<p>Example request: <code>Authorization: Bearer ${SENSITIVE.bearer}</code> with the platypus key ${SENSITIVE.openai}.</p>
<p>Leaked in an old release: ${SENSITIVE.github}, ${SENSITIVE.aws}, ${SENSITIVE.slack} and the session ${SENSITIVE.jwt}.</p>
</main></body></html>`;

const QUERY_SECRET = 'session=qs-secret-42';

interface Entry {
  level: string;
  fields: Record<string, unknown>;
  msg: string;
}

for (const dialect of DIALECTS) {
  describe(`enhanced_privacy (${dialect})`, () => {
    let t: TestApp;
    let pages: PageServer;
    const entries: Entry[] = [];
    const log = (level: string) => (fields: Record<string, unknown>, msg: string) => void entries.push({ level, fields, msg });
    const logger = { info: log('info'), warn: log('warn'), error: log('error') } as never;
    // Every request for /contact, whichever test's copilot made it: its URL and its If-None-Match.
    const conditions: Array<{ url: string; condition: string | undefined }> = [];
    beforeAll(async () => {
      pages = await PageServer.start();
      pages.set('/contact', (req: http.IncomingMessage, res: http.ServerResponse) => {
        const condition = req.headers['if-none-match'];
        conditions.push({ url: req.url ?? '', condition: typeof condition === 'string' ? condition : undefined });
        if (condition === '"c1"') return void res.writeHead(304, { etag: '"c1"' }).end();
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', etag: '"c1"' }).end(PAGE);
      });
      t = await buildTestApp(dialect);
      t.services.startJobs(logger);
    });
    afterAll(async () => {
      await t?.close();
      await pages?.close();
    });

    const passages = async (bot: string) =>
      (await t.rawStorage.db.selectFrom('kb_passages').select('content').where('bot_id', '=', bot).orderBy('seq').execute()).map((p) => p.content);
    const expectRedacted = (text: string) => {
      for (const value of Object.values(SENSITIVE)) expect(text).not.toContain(value);
      expect(text).toContain('[email]');
      expect(text).toContain('[phone]');
      expect(text).toContain('[secret]');
    };

    it('stores the passages redacted; search finds neither the values nor their parts', async () => {
      const bot = (await createCopilot(t, { enhanced_privacy: 1 })).id;
      const url = pages.url(`/contact?${QUERY_SECRET}`);
      expect((await postLinks(t, bot, [url])).statusCode).toBe(202);
      expect((await waitForLinks(t, bot, [url])).get(url)!.status).toBe('indexed');

      expectRedacted((await passages(bot)).join('\n'));
      // No hidden set (a staged copy) is left behind once the page is published.
      const [link] = await linkRows(t.rawStorage, bot);
      await waitUntil(
        async () => (await t.rawStorage.db.selectFrom('kb_hidden_passages').select('version').where('link_id', '=', link!.id).execute()).length === 0,
        'no hidden set',
      );
      expect(link!.redacted).toBe(1);

      const found = await search(t, bot, 'platypus');
      expect(found.results.length).toBeGreaterThan(0);
      expectRedacted(found.results.map((r) => r.content).join('\n'));
      for (const q of [
        'alice',
        'smith',
        SENSITIVE.aws,
        SENSITIVE.github,
        '7946',
        '0958',
        SENSITIVE.bearer,
        'AbCdEfGhIjKl',
        'dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U',
      ]) {
        expect((await search(t, bot, q)).results, q).toEqual([]);
      }
    });

    it('logs and audits its URLs without their query strings', async () => {
      const bot = (await createCopilot(t, { enhanced_privacy: 1 })).id;
      const urls = [pages.url(`/contact?${QUERY_SECRET}&n=2`), pages.url(`/missing?${QUERY_SECRET}`)];
      entries.length = 0;
      expect((await postLinks(t, bot, urls)).statusCode).toBe(202);
      await waitForLinks(t, bot, urls);
      expect((await call(t, 'DELETE', `/backend/knowledgebase/b/${bot}`, { payload: { links: [urls[1]] } })).statusCode).toBe(200);

      const logged = JSON.stringify(entries.filter((e) => e.fields.bot_id === bot));
      expect(logged).toContain(pages.url('/contact'));
      expect(logged).toContain(pages.url('/missing'));
      expect(logged).not.toContain('qs-secret-42');
      const audit = await call(t, 'GET', `${AUDIT_PATH}?bot_id=${bot}`);
      expect(audit.statusCode).toBe(200);
      expect(audit.body).toContain(pages.url('/contact'));
      expect(audit.body).not.toContain('qs-secret-42');
    });

    it('a copilot without the flag keeps the text and its audit entries as they were', async () => {
      const bot = (await createCopilot(t, { enhanced_privacy: 0 })).id;
      const url = pages.url(`/contact?${QUERY_SECRET}&plain=1`);
      await postLinks(t, bot, [url]);
      await waitForLinks(t, bot, [url]);
      const text = (await passages(bot)).join('\n');
      for (const value of Object.values(SENSITIVE)) expect(text).toContain(value);
      expect((await search(t, bot, 'alice')).results.length).toBeGreaterThan(0);
      expect((await call(t, 'GET', `${AUDIT_PATH}?bot_id=${bot}`)).body).toContain('qs-secret-42');
    });

    it('turned on later: turning it on is enough, every stored page is fetched again and stored redacted', async () => {
      const bot = (await createCopilot(t, { enhanced_privacy: 0 })).id;
      const url = pages.url('/contact?switched=1');
      await postLinks(t, bot, [url]);
      await waitForLinks(t, bot, [url]);
      expect((await passages(bot)).join('\n')).toContain(SENSITIVE.email);
      expect((await call(t, 'PATCH', copilotPath(bot), { payload: { enhanced_privacy: 1 } })).statusCode).toBe(200);
      await waitUntil(async () => !(await passages(bot)).join('\n').includes(SENSITIVE.email), 'the unredacted set to go');
      expectRedacted((await passages(bot)).join('\n'));
    });

    it('turned on later: the next refresh fetches the page in full (not conditionally) and stores it redacted', async () => {
      const bot = (await createCopilot(t, { enhanced_privacy: 0 })).id;
      const url = pages.url('/contact?later=1');
      await postLinks(t, bot, [url]);
      await waitForLinks(t, bot, [url]);
      expect((await passages(bot)).join('\n')).toContain(SENSITIVE.email);
      conditions.length = 0;
      expect((await call(t, 'PATCH', copilotPath(bot), { payload: { enhanced_privacy: 1 } })).statusCode).toBe(200);
      expect((await call(t, 'POST', `/backend/knowledgebase/b/${bot}/refresh`)).statusCode).toBe(202);
      await waitUntil(async () => (await linkRows(t.rawStorage, bot))[0]!.redacted === 1, 'the page stored redacted');
      // Turning the flag on checks the page at once, and the refresh asks again. The first of
      // them runs while the stored passages are unredacted: it must not send their validators
      // (a 304 would keep them). Once the page is stored redacted, a conditional request is
      // right, so a later check may send one. Only this copilot's page counts: another test's
      // copilot may check its own meanwhile.
      const ours = conditions.filter((c) => c.url.includes('later=1'));
      expect(ours.length).toBeGreaterThan(0);
      expect(ours[0]!.condition).toBeUndefined();
      await waitUntil(async () => !(await passages(bot)).join('\n').includes(SENSITIVE.email), 'the old set to go');
      expectRedacted((await passages(bot)).join('\n'));
    });
  });
}
