/**
 * DESIGN §3: with `enhanced_privacy = 1`, the copilot's URLs are logged (and audited) without
 * their query strings — not only its knowledge-base links (enhanced-privacy.test.ts), but a
 * crawl's start or sitemap URL in the `knowledgebase.crawl` audit entry, and its swagger_url
 * (or the address it redirected to) in the warning a failed fetch of it is logged with. The logs
 * are the app's own pino lines, jobs included; a copilot without the flag keeps its URLs whole.
 */
import type http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../support/app.js';
import { DIALECTS } from '../support/databases.js';
import { call, copilotPath, createCopilot, kbPath, validatorPath } from '../support/http.js';
import { crawlFinished, waitUntil } from '../support/knowledge-base.js';
import { PageServer } from '../support/pages.js';

interface LogLine {
  level: number;
  msg?: string;
  [field: string]: unknown;
}

const urlset = (urls: string[]) =>
  `<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${urls.map((u) => `<url><loc>${u}</loc></url>`).join('')}</urlset>`;

for (const dialect of DIALECTS) {
  describe(`enhanced_privacy: the copilot's URLs in the audit log and the logs (${dialect})`, () => {
    const lines: LogLine[] = [];
    let t: TestApp;
    let pages: PageServer;
    beforeAll(async () => {
      pages = await PageServer.start();
      t = await buildTestApp(dialect, {
        logger: { level: 'info', stream: { write: (line: string) => void lines.push(JSON.parse(line) as LogLine) } },
      });
      // The jobs log through the app's logger, as server.ts has them.
      t.services.startJobs(t.app.log);
    });
    afterAll(async () => {
      await t?.close();
      await pages?.close();
    });

    /** The details of the bot's `knowledgebase.crawl` audit entries, as stored. */
    const crawlAudit = async (bot: string) =>
      (
        await t.storage.db
          .selectFrom('audit_log')
          .select('details')
          .where('bot_id', '=', bot)
          .where('action', '=', 'knowledgebase.crawl')
          .orderBy('id')
          .execute()
      ).map((r) => JSON.parse(r.details) as Record<string, unknown>);
    const startCrawl = async (bot: string, body: Record<string, unknown>) => {
      const res = await call(t, 'POST', `${kbPath(bot)}/crawl`, { payload: body });
      expect(res.statusCode, res.body).toBe(202);
      return res.json() as { crawl_id: string };
    };
    const setSwaggerUrl = async (id: string, url: string) => {
      const res = await call(t, 'PATCH', copilotPath(id), { payload: { swagger_url: url } });
      expect(res.statusCode, res.body).toBe(200);
    };
    const logged = () => JSON.stringify(lines);

    it('the crawl audit entry keeps the start URL and the sitemap URL without their query strings', async () => {
      const bot = (await createCopilot(t, { enhanced_privacy: 1 })).id;
      const start = await startCrawl(bot, { url: pages.url('/private/start/?token=CRAWLSECRET1'), max_depth: 0 });
      const sitemap = await startCrawl(bot, { sitemap: pages.url('/private/sitemap.xml?token=CRAWLSECRET2') });
      const entries = await crawlAudit(bot);
      expect(entries).toEqual([
        expect.objectContaining({ crawl_id: start.crawl_id, url: pages.url('/private/start/') }),
        expect.objectContaining({ crawl_id: sitemap.crawl_id, sitemap: pages.url('/private/sitemap.xml') }),
      ]);
      expect(JSON.stringify(entries)).not.toMatch(/CRAWLSECRET|token=/);
      // The crawl itself still has its URL as given: it is what is fetched.
      const got = await call(t, 'GET', `${kbPath(bot)}/crawls/${start.crawl_id}`);
      expect(got.json().url).toBe(pages.url('/private/start/?token=CRAWLSECRET1'));
    });

    it('a copilot without the flag keeps the crawl URL whole in its audit entry', async () => {
      const bot = (await createCopilot(t, { enhanced_privacy: 0 })).id;
      await startCrawl(bot, { url: pages.url('/plain/start/?token=PLAINCRAWL'), max_depth: 0 });
      expect(await crawlAudit(bot)).toEqual([expect.objectContaining({ url: pages.url('/plain/start/?token=PLAINCRAWL') })]);
    });

    it('a swagger_url that cannot be fetched is logged without its query string (validator, tools, fixes)', async () => {
      const c = await createCopilot(t, { enhanced_privacy: 1 });
      await setSwaggerUrl(c.id, pages.url('/nothere.json?apikey=SWAGGERSECRET2'));
      for (const path of [validatorPath(c.id), `${copilotPath(c.id)}/tools?platform=openai`, `${copilotPath(c.id)}/fixes`]) {
        lines.length = 0;
        const res = await call(t, 'GET', path);
        expect(res.statusCode, path).toBe(502);
        const warning = lines.find((l) => /could not be fetched/.test(l.msg ?? ''));
        expect(warning, path).toMatchObject({ level: 40, details: { url: pages.url('/nothere.json'), reason: 'http_status', status: 404 } });
        expect(logged(), path).not.toContain('SWAGGERSECRET2');
      }
    });

    it('so is the address it redirected to, when that one fails', async () => {
      pages.set(
        '/moved.json',
        (_req: http.IncomingMessage, res: http.ServerResponse) => void res.writeHead(302, { location: '/gone.json?apikey=SWAGGERSECRET3' }).end(),
      );
      const c = await createCopilot(t, { enhanced_privacy: 1 });
      await setSwaggerUrl(c.id, pages.url('/moved.json?apikey=SWAGGERSECRET4'));
      lines.length = 0;
      expect((await call(t, 'GET', validatorPath(c.id))).statusCode).toBe(502);
      expect(lines.find((l) => /could not be fetched/.test(l.msg ?? ''))).toMatchObject({ details: { url: pages.url('/gone.json') } });
      expect(logged()).not.toMatch(/SWAGGERSECRET[34]/);
    });

    it('a copilot without the flag: the answer names the URL whole, the warning without its query string, as link URLs of every copilot (privacy sweep: a key in it was logged)', async () => {
      const c = await createCopilot(t, { enhanced_privacy: 0 });
      await setSwaggerUrl(c.id, pages.url('/nothere.json?apikey=PLAINSWAGGER'));
      lines.length = 0;
      const res = await call(t, 'GET', validatorPath(c.id));
      expect(res.statusCode).toBe(502);
      expect(res.json().details.url).toBe(pages.url('/nothere.json?apikey=PLAINSWAGGER'));
      expect(lines.find((l) => /could not be fetched/.test(l.msg ?? ''))).toMatchObject({ details: { url: pages.url('/nothere.json') } });
      expect(logged()).not.toContain('PLAINSWAGGER');
    });

    it('a sync of a swagger_url that cannot be fetched logs no query string', async () => {
      const c = await createCopilot(t, { enhanced_privacy: 1, smart_sync: 1 });
      await setSwaggerUrl(c.id, pages.url('/nothere.json?apikey=SWAGGERSECRET5'));
      lines.length = 0;
      const res = await call(t, 'POST', `${copilotPath(c.id)}/swagger/sync`);
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toMatchObject({ status: 'failed' });
      expect(res.body).not.toContain('SWAGGERSECRET5');
      expect(logged()).not.toContain('SWAGGERSECRET5');
    });

    /** The links of the bot's `knowledgebase.add_links` audit entry, as stored. */
    const addLinksAudit = async (bot: string) => {
      const row = await t.storage.db
        .selectFrom('audit_log')
        .select('details')
        .where('bot_id', '=', bot)
        .where('action', '=', 'knowledgebase.add_links')
        .executeTakeFirstOrThrow();
      return (JSON.parse(row.details) as { links: string[] }).links;
    };
    const failedLinkLine = (bot: string) => waitUntil(() => lines.find((l) => l.msg === 'knowledge-base link failed' && l.bot_id === bot), 'the link to fail');

    it("an e-mail address in a link's path is neither logged nor audited (privacy sweep: the path was kept whole)", async () => {
      const bot = (await createCopilot(t, { enhanced_privacy: 1 })).id;
      const res = await call(t, 'POST', kbPath(bot), { payload: { links: [pages.url('/team/alice.private@example.com/profile?token=PATHSECRET1')] } });
      expect(res.statusCode, res.body).toBe(202);
      expect(await addLinksAudit(bot)).toEqual([pages.url('/team/[email]/profile')]);
      expect(await failedLinkLine(bot)).toMatchObject({ url: pages.url('/team/[email]/profile') });
      expect(logged()).not.toMatch(/alice\.private|PATHSECRET1/);
      // The link itself keeps its URL: it is what is fetched and what the client sees.
      expect(res.json().links[0].url).toBe(pages.url('/team/alice.private@example.com/profile?token=PATHSECRET1'));
    });

    it('a copilot without the flag: the log names no address in a path either, its audit entry keeps the link whole', async () => {
      const bot = (await createCopilot(t, { enhanced_privacy: 0 })).id;
      const link = pages.url('/team/bob.plain@example.com/2024/11/28');
      expect((await call(t, 'POST', kbPath(bot), { payload: { links: [link] } })).statusCode).toBe(202);
      expect(await addLinksAudit(bot)).toEqual([link]);
      // The digits of a path are not taken for a phone number.
      expect(await failedLinkLine(bot)).toMatchObject({ url: pages.url('/team/[email]/2024/11/28') });
      expect(logged()).not.toContain('bob.plain');
    });

    it("turning enhanced_privacy on rewrites the URLs of the copilot's earlier audit entries as its new ones are written; other copilots' entries stay (DESIGN §3: they kept query strings and addresses)", async () => {
      const bot = (await createCopilot(t, { enhanced_privacy: 0 })).id;
      const other = (await createCopilot(t, { enhanced_privacy: 0 })).id;
      const link = pages.url('/team/carol.old@example.com/docs?token=OLDSECRET7');
      for (const b of [bot, other]) expect((await call(t, 'POST', kbPath(b), { payload: { links: [link] } })).statusCode).toBe(202);
      await startCrawl(bot, { url: pages.url('/old-crawl/?session=OLDSECRET8') });
      expect(await addLinksAudit(bot)).toEqual([link]);
      expect((await call(t, 'PATCH', copilotPath(bot), { payload: { enhanced_privacy: 1 } })).statusCode).toBe(200);
      expect(await addLinksAudit(bot)).toEqual([pages.url('/team/[email]/docs')]);
      expect(await crawlAudit(bot)).toEqual([expect.objectContaining({ url: pages.url('/old-crawl/') })]);
      const stored = JSON.stringify(await t.storage.db.selectFrom('audit_log').select('details').where('bot_id', '=', bot).execute());
      expect(stored).not.toMatch(/OLDSECRET|carol\.old/);
      expect(await addLinksAudit(other)).toEqual([link]);
    });

    it("a crawl's own log lines (a sitemap not read, pages failed) name no query string", async () => {
      pages.set('/site/index.xml', {
        type: 'text/xml',
        body: `<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><sitemap><loc>${pages.url('/site/gone.xml?token=CRAWLSECRET6')}</loc></sitemap><sitemap><loc>${pages.url('/site/pages.xml?token=CRAWLSECRET7')}</loc></sitemap></sitemapindex>`,
      });
      pages.set('/site/pages.xml', { type: 'text/xml', body: urlset([pages.url('/site/missing?token=CRAWLSECRET8')]) });
      const bot = (await createCopilot(t, { enhanced_privacy: 1 })).id;
      lines.length = 0;
      const crawl = await startCrawl(bot, { sitemap: pages.url('/site/index.xml?token=CRAWLSECRET9') });
      await crawlFinished(t, bot, crawl.crawl_id);
      await waitUntil(() => lines.some((l) => l.msg === 'knowledge-base link failed' && l.bot_id === bot), 'the page to fail');
      const ofBot = lines.filter((l) => l.bot_id === bot);
      expect(ofBot.find((l) => l.msg === 'sitemap not read')).toMatchObject({ sitemap: pages.url('/site/gone.xml') });
      expect(ofBot.find((l) => l.msg === 'knowledge-base link failed')).toMatchObject({ url: pages.url('/site/missing') });
      expect(logged()).not.toMatch(/CRAWLSECRET/);
    });
  });
}
