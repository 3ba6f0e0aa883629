/**
 * Issue 13 §9: the audit log records every sensitive action — key creation and revocation,
 * copilot create/update/delete/purge, API-description upload, link add and delete — with who
 * (key id), what, which bot and when; filters by bot, action and time, paged.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AUDIT_DETAILS_MAX_CHARS, AUDIT_PAGE_MAX_CHARS } from '../../src/domain/audit.js';
import { buildTestApp, keyIdOf, type TestApp } from '../support/app.js';
import { DIALECTS } from '../support/databases.js';
import { spec } from '../support/documents.js';
import { AUDIT_PATH, call, COPILOTS_PATH, copilotPath, expectError, KEYS_PATH, nextLink, swaggerPath, TIMESTAMP } from '../support/http.js';

interface Entry {
  id: number;
  at: string;
  actor_key_id: string | null;
  action: string;
  bot_id: string | null;
  details: Record<string, unknown>;
}

for (const dialect of DIALECTS) {
  describe(`audit log (${dialect})`, () => {
    let t: TestApp;
    let actor: string;
    let bot: string;
    let entries: Entry[];
    let mintedId: string;
    beforeAll(async () => {
      t = await buildTestApp(dialect);
      actor = await t.key(['admin']);
      bot = (await call(t, 'POST', COPILOTS_PATH, { key: actor, payload: { name: 'Audited' } })).json().id;
      expect((await call(t, 'PATCH', copilotPath(bot), { key: actor, payload: { name: 'Audited again', status: 'live' } })).statusCode).toBe(200);
      const up = await t.app.inject({
        method: 'PUT',
        url: swaggerPath(bot),
        headers: { authorization: actor, 'content-type': 'application/json' },
        payload: spec('petstore3.json'),
      });
      expect(up.statusCode, up.body).toBe(200);
      expect((await call(t, 'POST', `/backend/knowledgebase/b/${bot}`, { key: actor, payload: { links: ['https://docs.example/a'] } })).statusCode).toBe(202);
      expect((await call(t, 'DELETE', `/backend/knowledgebase/b/${bot}`, { key: actor, payload: { links: ['https://docs.example/a'] } })).statusCode).toBe(200);
      const minted = await call(t, 'POST', KEYS_PATH, { key: actor, payload: { scopes: ['copilots:read'], bots: [bot], name: 'reader' } });
      mintedId = minted.json().id;
      expect((await call(t, 'DELETE', `${KEYS_PATH}/${mintedId}`, { key: actor })).statusCode).toBe(204);
      expect((await call(t, 'DELETE', copilotPath(bot), { key: actor })).statusCode).toBe(200);
      expect((await call(t, 'POST', `${copilotPath(bot)}/purge`, { key: actor })).statusCode).toBe(200);
      const res = await call(t, 'GET', `${AUDIT_PATH}?limit=1000`);
      expect(res.statusCode, res.body).toBe(200);
      entries = (res.json() as Entry[]).filter((e) => e.actor_key_id === keyIdOf(actor));
    });
    afterAll(async () => t.close());

    it('records every sensitive action with who, what, which bot and when, newest first', async () => {
      expect(entries.map((e) => e.action).reverse()).toEqual([
        'copilot.create',
        'copilot.update',
        'api_description.upload',
        'knowledgebase.add_links',
        'knowledgebase.delete_links',
        'key.create',
        'key.revoke',
        'copilot.delete',
        'copilot.purge',
      ]);
      for (const e of entries) {
        expect(e.at).toMatch(TIMESTAMP);
        // The minted key is limited to the bot: its creation and revocation are the bot's entries too.
        expect(e.bot_id).toBe(bot);
      }
      const by = (action: string) => entries.find((e) => e.action === action)!.details;
      // Every entry of a request names the client's address (TRUST_PROXY: test/http/deployment-settings.test.ts).
      for (const e of entries) expect(e.details.client_ip, e.action).toBe('127.0.0.1');
      expect(by('copilot.update')).toEqual({ fields: ['name', 'status'], client_ip: '127.0.0.1' });
      expect(by('api_description.upload')).toMatchObject({ sha256: expect.stringMatching(/^[0-9a-f]{64}$/), size: spec('petstore3.json').length });
      expect(by('knowledgebase.add_links')).toMatchObject({ links: ['https://docs.example/a'] });
      expect(by('key.create')).toMatchObject({ key_id: mintedId, scopes: ['copilots:read'], bots: [bot] });
      expect(by('key.revoke')).toEqual({ key_id: mintedId, client_ip: '127.0.0.1' });
      expect(JSON.stringify(entries)).not.toMatch(/cms_[A-Za-z0-9]{16}_[A-Za-z0-9]{32}/);
    });

    it('filters by bot, action and time, and pages with a Link header', async () => {
      const byAction = await call(t, 'GET', `${AUDIT_PATH}?action=copilot.update`);
      expect((byAction.json() as Entry[]).map((e) => e.action)).toEqual(['copilot.update']);
      const byBot = (await call(t, 'GET', `${AUDIT_PATH}?bot_id=${bot}`)).json() as Entry[];
      expect(byBot.length).toBe(entries.filter((e) => e.bot_id === bot).length);
      const upload = entries.find((e) => e.action === 'api_description.upload')!;
      const since = (await call(t, 'GET', `${AUDIT_PATH}?since=${upload.at}&bot_id=${bot}`)).json() as Entry[];
      expect(since.map((e) => e.action).at(-1)).toBe('api_description.upload');
      const until = (await call(t, 'GET', `${AUDIT_PATH}?until=${upload.at}&bot_id=${bot}`)).json() as Entry[];
      expect(until.map((e) => e.action).reverse()).toEqual(['copilot.create', 'copilot.update']);
      expectError(await call(t, 'GET', `${AUDIT_PATH}?since=yesterday`), 400, 'invalid_request');
      expectError(await call(t, 'GET', `${AUDIT_PATH}?action=copilot.explode`), 400, 'invalid_request');
      // The edges of the time range: a fraction of a second in year 0, the last microsecond of year 9999, and an offset past it.
      const actions = async (query: string) => ((await call(t, 'GET', `${AUDIT_PATH}?bot_id=${bot}&${query}`)).json() as Entry[]).length;
      const all = byBot.length;
      expect(await actions('since=9999-12-31T23:59:59.999999Z')).toBe(0);
      expect(await actions('since=9999-12-31T23:59:59-01:00')).toBe(0);
      expect(await actions('since=0000-01-01T00:00:00.5Z')).toBe(all);
      expect(await actions('until=0000-01-01T00:00:00.5Z')).toBe(0);
      expect(await actions('until=9999-12-31T23:59:59.999999Z')).toBe(all);
      expect(await actions('until=9999-12-31T23:59:59-01:00')).toBe(all);
      expect(await actions('since=1969-12-31T23:59:59.25Z')).toBe(all);

      const first = await call(t, 'GET', `${AUDIT_PATH}?bot_id=${bot}&limit=2`);
      expect((first.json() as Entry[]).length).toBe(2);
      const next = nextLink(first);
      expect(next).toContain(`bot_id=${bot}`);
      const second = await call(t, 'GET', next!);
      expect((second.json() as Entry[])[0]!.id).toBeLessThan((first.json() as Entry[])[1]!.id);
    });
  });

  describe(`audit log: bounded entries and pages (${dialect})`, () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await buildTestApp(dialect);
    });
    afterAll(async () => t.close());

    it(`an entry keeps at most ${AUDIT_DETAILS_MAX_CHARS} characters of details: long lists keep their first items and say how many there were; a page stops at ${AUDIT_PAGE_MAX_CHARS} characters of details`, async () => {
      // A key that may only add and delete links of its own bot: each request names 1,000
      // made-up links of about 1,900 characters, which the entry listed whole (1.9 MB each).
      const bot = (await call(t, 'POST', COPILOTS_PATH, { payload: { name: 'Bloat' } })).json().id as string;
      const tenant = await t.key(['knowledgebase:write', 'knowledgebase:delete'], [bot]);
      expect((await call(t, 'POST', `/backend/knowledgebase/b/${bot}`, { key: tenant, payload: { links: ['https://docs.example/kept'] } })).statusCode).toBe(
        202,
      );
      const junk = (round: number) => Array.from({ length: 1000 }, (_, i) => `https://docs.example/${round}/${i}/${'x'.repeat(1900)}`);
      const rounds = Math.ceil((AUDIT_PAGE_MAX_CHARS / AUDIT_DETAILS_MAX_CHARS) * 1.5);
      for (let round = 0; round < rounds; round++) {
        const res = await call(t, 'DELETE', `/backend/knowledgebase/b/${bot}`, { key: tenant, payload: { links: junk(round) } });
        expect(res.statusCode, res.body).toBe(200);
      }
      const first = await call(t, 'GET', `${AUDIT_PATH}?bot_id=${bot}&action=knowledgebase.delete_links&limit=1000`);
      expect(first.statusCode, first.body.slice(0, 200)).toBe(200);
      const page = first.json() as Entry[];
      const detailsChars = page.reduce((sum, e) => sum + JSON.stringify(e.details).length, 0);
      expect(page.length).toBeGreaterThan(0);
      expect(page.length).toBeLessThan(rounds);
      expect(detailsChars).toBeLessThanOrEqual(AUDIT_PAGE_MAX_CHARS);
      const entry = page[0]!;
      expect(JSON.stringify(entry.details).length).toBeLessThanOrEqual(AUDIT_DETAILS_MAX_CHARS);
      expect(entry.details.not_found_links_total).toBe(1000);
      const kept = entry.details.not_found_links as string[];
      expect(kept.length).toBeGreaterThan(0);
      expect(kept).toEqual(junk(rounds - 1).slice(0, kept.length));
      expect(entry.details.deleted_links).toEqual([]);
      expect(entry.details.deleted_links_total).toBeUndefined();
      // The next pages hold the rest, each entry once.
      let seen = page.length;
      let next = nextLink(first);
      while (next !== null) {
        const more = await call(t, 'GET', next);
        expect(more.statusCode).toBe(200);
        seen += (more.json() as Entry[]).length;
        next = nextLink(more);
      }
      expect(seen).toBe(rounds);
    }, 120_000);
  });
}
