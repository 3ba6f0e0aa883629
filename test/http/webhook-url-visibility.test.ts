/**
 * WEBHOOK_URL is the operator's: its path and query are often the hook's secret (Slack-style
 * `/services/T…/B…/<token>`, `?sig=…`). A key limited to some bots — an admin key included —
 * sees a delivery's URL as its origin and `/…` only; an unlimited admin key sees it as configured.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webhookUrlOrigin } from '../../src/domain/webhooks/webhook.service.js';
import { buildTestApp, type TestApp } from '../support/app.js';
import { DIALECTS } from '../support/databases.js';
import { apiOfPaths as api, putRaw } from '../support/documents.js';
import { call, createCopilot } from '../support/http.js';
import { PageServer } from '../support/pages.js';

const DELIVERIES = '/backend/api/webhooks/deliveries';
const HOOK_PATH = '/hook/T0001/HOOKPATHSECRET?sig=HOOKQUERYSECRET';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

for (const dialect of DIALECTS) {
  describe(`webhook deliveries: the URL a bot-limited key sees (${dialect})`, () => {
    let t: TestApp;
    let pages: PageServer;
    let hookUrl: string;
    beforeAll(async () => {
      pages = await PageServer.start();
      hookUrl = pages.url(HOOK_PATH);
      t = await buildTestApp(dialect, { env: { WEBHOOK_URL: hookUrl, WEBHOOK_SECRET: 'a-webhook-secret-of-some-length' } });
    });
    afterAll(async () => {
      await t?.close();
      await pages?.close();
    });

    /** Copilot A with one breaking change, its delivery queued. */
    async function breakingChange(): Promise<string> {
      const copilot = await createCopilot(t);
      expect((await putRaw(t, copilot.id, api(['/a', '/b']), 'application/json')).statusCode).toBe(200);
      expect((await putRaw(t, copilot.id, api(['/a']), 'application/json')).statusCode).toBe(200);
      for (let i = 0; i < 50; i++) {
        const rows = await t.storage.db.selectFrom('webhook_deliveries').select('id').where('copilot_id', '=', copilot.id).execute();
        if (rows.length > 0) return copilot.id;
        await sleep(20);
      }
      throw new Error('no delivery was queued');
    }

    it('a key limited to bots sees the origin only; an unlimited admin key sees the URL as configured', async () => {
      const a = await breakingChange();
      const origin = new URL(hookUrl).origin;
      expect(origin).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);

      const limited = await call(t, 'GET', DELIVERIES, { key: await t.key(['admin'], [a]) });
      expect(limited.statusCode, limited.body).toBe(200);
      expect(limited.json()).toEqual([expect.objectContaining({ copilot_id: a, url: `${origin}/…` })]);
      expect(limited.body).not.toMatch(/HOOKPATHSECRET|HOOKQUERYSECRET|T0001/);

      const unlimited = await call(t, 'GET', DELIVERIES);
      expect(unlimited.statusCode).toBe(200);
      expect(unlimited.json().find((d: { copilot_id: string }) => d.copilot_id === a)).toMatchObject({ url: hookUrl });
    });

    it('the stored delivery keeps the whole URL: it is what is POSTed to', async () => {
      const a = await breakingChange();
      const row = await t.storage.db.selectFrom('webhook_deliveries').select('url').where('copilot_id', '=', a).executeTakeFirstOrThrow();
      expect(row.url).toBe(hookUrl);
    });
  });
}

describe('webhookUrlOrigin', () => {
  it('keeps scheme, host and port, and shows `/…` for the rest, whatever the rest is', () => {
    expect(webhookUrlOrigin('https://hooks.example.com/services/T0001/B0002/XyZ?sig=abc')).toBe('https://hooks.example.com/…');
    expect(webhookUrlOrigin('https://hooks.example.com')).toBe('https://hooks.example.com/…');
    expect(webhookUrlOrigin('HTTPS://Hooks.Example.com:443/x')).toBe('https://hooks.example.com/…');
    expect(webhookUrlOrigin('http://127.0.0.2:18151/hook/T0001/HOOKPATHSECRET?sig=HOOKQUERYSECRET')).toBe('http://127.0.0.2:18151/…');
    expect(webhookUrlOrigin('http://[::1]:9000/hook#frag')).toBe('http://[::1]:9000/…');
    // A row stored before WEBHOOK_URL was checked at start: never its credentials.
    expect(webhookUrlOrigin('http://hookuser:HOOKPASSWORD@127.0.0.2:18151/hook')).toBe('http://127.0.0.2:18151/…');
    expect(webhookUrlOrigin('not a url')).toBe('…');
  });
});
