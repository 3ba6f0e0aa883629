import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { formatMicros } from '../../src/domain/ids.js';
import { insertCopilot } from '../../src/storage/copilot.repository.js';
import type { CopilotRow } from '../../src/storage/schema.js';
import { buildTestApp, type TestApp } from '../support/app.js';
import { DIALECTS } from '../support/databases.js';
import { call, COPILOTS_PATH, copilotPath, createCopilot, expectCanonicalJson, expectCopilot, expectError, nextLink, TIMESTAMP } from '../support/http.js';

const b64url = (text: string) => Buffer.from(text).toString('base64url');

for (const dialect of DIALECTS) {
  describe(`copilots (${dialect})`, () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await buildTestApp(dialect);
    });
    afterAll(async () => t.close());

    describe('create', () => {
      it('answers 201 with every field in the wire format, flags given as booleans', async () => {
        const res = await call(t, 'POST', COPILOTS_PATH, {
          payload: {
            name: 'Shop helper',
            website: 'https://shop.example.com',
            prompt_message: 'Line one\nLine two',
            enhanced_privacy: true,
            smart_sync: false,
            swagger_url: 'mbWwCbhHXqffJLEU98I8.json',
            is_premade_demo_template: true,
          },
        });
        expect(res.statusCode, res.body).toBe(201);
        expect(res.headers['content-type']).toMatch(/^application\/json/);
        expectCanonicalJson(res);
        const c = expectCopilot(res.json());
        expect(res.headers.location).toBe(copilotPath(c.id as string));
        expect(c).toMatchObject({
          name: 'Shop helper',
          website: 'https://shop.example.com',
          status: 'draft',
          prompt_message: 'Line one\nLine two',
          enhanced_privacy: 1,
          smart_sync: 0,
          swagger_url: 'mbWwCbhHXqffJLEU98I8.json',
          is_premade_demo_template: 1,
          deleted_at: null,
        });
        expect(c.updated_at).toBe(c.created_at);
        // The integers are integers in the bytes too, not true/false or "1".
        expect(res.body).toContain('"enhanced_privacy":1,"smart_sync":0,');
        expect(res.body).toContain('"is_premade_demo_template":1,');
        expect(res.body).toContain('"deleted_at":null}');
      });

      it('accepts 0/1 for the flags', async () => {
        const c = await createCopilot(t, { enhanced_privacy: 0, smart_sync: 1, is_premade_demo_template: 0 });
        expect(c).toMatchObject({ enhanced_privacy: 0, smart_sync: 1, is_premade_demo_template: 0 });
      });

      it('fills in defaults: draft, a default prompt, empty website and swagger_url, flags 0', async () => {
        const c = expectCopilot(await createCopilot(t, { name: 'Defaults' }));
        expect(c.status).toBe('draft');
        expect(typeof c.prompt_message).toBe('string');
        expect((c.prompt_message as string).trim().length).toBeGreaterThan(20);
        expect(c).toMatchObject({ website: '', swagger_url: '', enhanced_privacy: 0, smart_sync: 0, is_premade_demo_template: 0, deleted_at: null });
      });

      it('gives every copilot its own id and token', async () => {
        const a = await createCopilot(t);
        const b = await createCopilot(t);
        expect(a.id).not.toBe(b.id);
        expect(a.token).not.toBe(b.token);
      });

      it('accepts an http(s) URL as swagger_url', async () => {
        const c = await createCopilot(t, { swagger_url: 'https://api.example.com/openapi.yaml' });
        expect(c.swagger_url).toBe('https://api.example.com/openapi.yaml');
      });

      // One shared check with knowledge-base links (issue 13 §6): control and invisible
      // formatting characters are refused in a copilot's URLs too, on create and on update.
      it.each([
        ['website', 'https://e.example/\u202egnp.exe', 'U+202E'],
        ['swagger_url', 'https://api.example/\u2066openapi.json', 'U+2066'],
        ['swagger_url', 'https://api.example/open\u200fapi.json', 'U+200F'],
        ['website', 'https://e.example/\u061c', 'U+061C'],
        ['website', 'https://e.example/\u0085', 'U+0085'],
        ['swagger_url', 'https://api.exa\tmple/openapi.json', 'U+0009'],
        ['website', 'https://e.example/a\nb', 'U+000A'],
      ])('refuses a %s holding a control or invisible formatting character (%j → %s)', async (field, value, codePoint) => {
        const res = await call(t, 'POST', COPILOTS_PATH, { payload: { name: 'x', [field]: value } });
        const error = expectError(res, 400, 'invalid_request');
        expect(error.message).toBe(`The field ${field} must not contain control or invisible formatting characters (${codePoint}).`);
        expect(error.details).toEqual({ field });
        const c = await createCopilot(t);
        const patched = await call(t, 'PATCH', copilotPath(c.id), { payload: { [field]: value } });
        expectError(patched, 400, 'invalid_request');
        expect((await call(t, 'GET', copilotPath(c.id))).json()).toEqual(c);
      });

      it.each([
        ['no name', {}],
        ['empty name', { name: '' }],
        ['blank name', { name: '   ' }],
        ['name not a string', { name: 42 }],
        ['unknown field', { name: 'x', colour: 'blue' }],
        ['id is not writable', { name: 'x', id: randomUUID() }],
        ['token is not writable', { name: 'x', token: 'A'.repeat(20) }],
        ['bad status', { name: 'x', status: 'archived' }],
        ['flag 2', { name: 'x', enhanced_privacy: 2 }],
        ['flag as string', { name: 'x', smart_sync: '1' }],
        ['flag null', { name: 'x', is_premade_demo_template: null }],
        ['website not a URL', { name: 'x', website: 'not a url' }],
        ['website not http(s)', { name: 'x', website: 'ftp://example.com' }],
        ['swagger_url a local file', { name: 'x', swagger_url: 'file:///etc/passwd' }],
        ['swagger_url a bare name', { name: 'x', swagger_url: 'openapi.json' }],
        ['body is an array', [{ name: 'x' }]],
      ])('rejects %s with 400 invalid_request', async (_label, payload) => {
        const res = await call(t, 'POST', COPILOTS_PATH, { payload });
        expectError(res, 400, 'invalid_request');
      });
    });

    describe('get', () => {
      it('returns the copilot in the wire format', async () => {
        const created = await createCopilot(t, { name: 'Getter' });
        const res = await call(t, 'GET', copilotPath(created.id));
        expect(res.statusCode).toBe(200);
        expectCanonicalJson(res);
        expect(expectCopilot(res.json())).toEqual(created);
      });

      it('finds the copilot by its id written in upper case', async () => {
        const created = await createCopilot(t);
        const res = await call(t, 'GET', copilotPath(created.id.toUpperCase()));
        expect(res.statusCode).toBe(200);
        expect(res.json().id).toBe(created.id);
      });

      it.each(['not-a-uuid', '123', 'zzzzzzzz-zzzz-zzzz-zzzz-zzzzzzzzzzzz', "1' or '1'='1", '%00'])(
        'answers 404 copilot_not_found for the malformed id %s',
        async (id) => {
          const res = await call(t, 'GET', copilotPath(encodeURIComponent(id)));
          expectError(res, 404, 'copilot_not_found');
        },
      );

      it('answers 404 copilot_not_found for an unknown id', async () => {
        expectError(await call(t, 'GET', copilotPath(randomUUID())), 404, 'copilot_not_found');
      });
    });

    describe('update', () => {
      const changes: Array<[string, unknown, unknown]> = [
        ['name', 'Renamed', 'Renamed'],
        ['website', 'https://new.example.org/path?x=1', 'https://new.example.org/path?x=1'],
        ['website', '', ''],
        ['prompt_message', 'Be brief.\nBe kind.', 'Be brief.\nBe kind.'],
        ['enhanced_privacy', true, 1],
        ['enhanced_privacy', 0, 0],
        ['smart_sync', 1, 1],
        ['smart_sync', false, 0],
        ['swagger_url', 'https://api.example.com/v3/openapi.json', 'https://api.example.com/v3/openapi.json'],
        ['swagger_url', 'AbCdEfGhIjKlMnOpQrSt.yaml', 'AbCdEfGhIjKlMnOpQrSt.yaml'],
        ['is_premade_demo_template', true, 1],
        ['status', 'live', 'live'],
      ];

      it.each(changes)('PATCH %s = %j changes only that field and moves updated_at forward', async (field, value, expected) => {
        const before = await createCopilot(t, { name: 'Before' });
        const res = await call(t, 'PATCH', copilotPath(before.id), { payload: { [field]: value } });
        expect(res.statusCode, res.body).toBe(200);
        expectCanonicalJson(res);
        const after = expectCopilot(res.json());
        expect(after[field]).toEqual(expected);
        expect(after.updated_at).not.toBe(before.updated_at);
        expect((after.updated_at as string) > (before.updated_at as string)).toBe(true);
        const untouched = Object.fromEntries(Object.entries(before).filter(([k]) => k !== field && k !== 'updated_at'));
        expect(after).toMatchObject(untouched);
        // Stored, not just echoed.
        expect((await call(t, 'GET', copilotPath(before.id))).json()).toEqual(after);
      });

      it('updates several fields at once', async () => {
        const before = await createCopilot(t);
        const res = await call(t, 'PATCH', copilotPath(before.id), { payload: { name: 'Both', smart_sync: true, status: 'live' } });
        expect(res.statusCode).toBe(200);
        expect(res.json()).toMatchObject({ name: 'Both', smart_sync: 1, status: 'live', id: before.id, token: before.token, created_at: before.created_at });
      });

      it('moves status draft → live → draft, updated_at growing each time', async () => {
        const c = await createCopilot(t);
        expect(c.status).toBe('draft');
        const live = (await call(t, 'PATCH', copilotPath(c.id), { payload: { status: 'live' } })).json();
        expect(live.status).toBe('live');
        const draft = (await call(t, 'PATCH', copilotPath(c.id), { payload: { status: 'draft' } })).json();
        expect(draft.status).toBe('draft');
        expect(c.updated_at < live.updated_at && live.updated_at < draft.updated_at).toBe(true);
        for (const x of [live, draft]) expect(x.updated_at).toMatch(TIMESTAMP);
      });

      it.each([
        ['an unknown status', { status: 'archived' }],
        ['status in upper case', { status: 'LIVE' }],
        ['status null', { status: null }],
        ['an unknown field', { nickname: 'x' }],
        ['id', { id: randomUUID() }],
        ['token', { token: 'B'.repeat(20) }],
        ['created_at', { created_at: '2020-01-01T00:00:00.000000Z' }],
        ['deleted_at', { deleted_at: null }],
        ['an empty object', {}],
        ['name as a number', { name: 5 }],
        ['an empty name', { name: '' }],
        ['enhanced_privacy "yes"', { enhanced_privacy: 'yes' }],
        ['smart_sync 2', { smart_sync: 2 }],
        ['is_premade_demo_template -1', { is_premade_demo_template: -1 }],
        ['website null', { website: null }],
        ['website javascript:', { website: 'javascript:alert(1)' }],
        ['prompt_message as an array', { prompt_message: ['a'] }],
        ['a JSON array', [{ name: 'x' }]],
        ['a JSON string', 'name'],
      ])('rejects %s with 400 invalid_request and changes nothing', async (_label, payload) => {
        const c = await createCopilot(t);
        const res = await call(t, 'PATCH', copilotPath(c.id), { payload: JSON.stringify(payload), headers: { 'content-type': 'application/json' } });
        expectError(res, 400, 'invalid_request');
        expect((await call(t, 'GET', copilotPath(c.id))).json()).toEqual(c);
      });

      it('answers 404 for an unknown or malformed id', async () => {
        expectError(await call(t, 'PATCH', copilotPath(randomUUID()), { payload: { name: 'x' } }), 404, 'copilot_not_found');
        expectError(await call(t, 'PATCH', copilotPath('nope'), { payload: { name: 'x' } }), 404, 'copilot_not_found');
      });
    });

    describe('soft delete', () => {
      it('sets deleted_at; then GET/PATCH/DELETE answer 404; hidden from the list unless include_deleted=true', async () => {
        const c = await createCopilot(t, { name: 'Doomed copilot' });
        const res = await call(t, 'DELETE', copilotPath(c.id));
        expect(res.statusCode).toBe(200);
        expectCanonicalJson(res);
        const deleted = expectCopilot(res.json());
        expect(deleted.deleted_at).toMatch(TIMESTAMP);
        expect(deleted.id).toBe(c.id);
        expect((deleted.deleted_at as string) >= (c.updated_at as string)).toBe(true);

        expectError(await call(t, 'GET', copilotPath(c.id)), 404, 'copilot_not_found');
        expectError(await call(t, 'PATCH', copilotPath(c.id), { payload: { name: 'back' } }), 404, 'copilot_not_found');
        expectError(await call(t, 'DELETE', copilotPath(c.id)), 404, 'copilot_not_found');

        const listed = (await call(t, 'GET', `${COPILOTS_PATH}?q=Doomed&limit=1000`)).json() as Array<{ id: string }>;
        expect(listed.map((x) => x.id)).not.toContain(c.id);

        const withDeleted = await call(t, 'GET', `${COPILOTS_PATH}?q=Doomed&include_deleted=true`);
        expect(withDeleted.statusCode).toBe(200);
        const found = (withDeleted.json() as Array<Record<string, unknown>>).find((x) => x.id === c.id);
        expect(found).toBeDefined();
        expectCopilot(found);
        expect(found!.deleted_at).toBe(deleted.deleted_at);
      });

      it('answers 404 for an unknown or malformed id', async () => {
        expectError(await call(t, 'DELETE', copilotPath(randomUUID())), 404, 'copilot_not_found');
        expectError(await call(t, 'DELETE', copilotPath('x')), 404, 'copilot_not_found');
      });
    });

    describe('list parameters', () => {
      it('returns a plain JSON array of copilots in the wire format', async () => {
        await createCopilot(t, { enhanced_privacy: true });
        const res = await call(t, 'GET', COPILOTS_PATH);
        expect(res.statusCode).toBe(200);
        expect(res.headers['content-type']).toMatch(/^application\/json/);
        expectCanonicalJson(res);
        const body = res.json();
        expect(Array.isArray(body)).toBe(true);
        expect(body.length).toBeGreaterThan(0);
        for (const c of body) expectCopilot(c);
      });

      it.each(['0', '1001', 'abc', '-1', '1.5', '', '10abc'])('rejects limit=%j with 400 invalid_request', async (limit) => {
        expectError(await call(t, 'GET', `${COPILOTS_PATH}?limit=${limit}`), 400, 'invalid_request');
      });

      it('accepts limit 1 and 1000', async () => {
        await createCopilot(t);
        const first = await call(t, 'GET', `${COPILOTS_PATH}?limit=1`);
        expect(first.statusCode).toBe(200);
        expect(first.json()).toHaveLength(1);
        expect(nextLink(first)).not.toBeNull();
        const all = await call(t, 'GET', `${COPILOTS_PATH}?limit=1000`);
        expect(all.statusCode).toBe(200);
        expect(all.headers.link).toBeUndefined();
      });

      it.each([
        ['garbage', 'not a cursor!'],
        ['base64 of text', b64url('hello world')],
        ['base64 of an object', b64url('{"created_at":"2024-01-01T00:00:00.000000Z","id":"x"}')],
        ['base64 of a short array', b64url('["2024-01-01T00:00:00.000000Z"]')],
        ['base64 of a bad timestamp', b64url(`["yesterday","${randomUUID()}"]`)],
        ['base64 of numbers', b64url('[1,2]')],
        ['base64 of an empty id', b64url('["2024-01-01T00:00:00.000000Z",""]')],
        ['padding characters', `${b64url('["2024-01-01T00:00:00.000000Z","a"]')}==`],
      ])('rejects a cursor that is %s with 400 invalid_cursor', async (_label, cursor) => {
        expectError(await call(t, 'GET', `${COPILOTS_PATH}?cursor=${encodeURIComponent(cursor)}`), 400, 'invalid_cursor');
      });

      it('rejects an over-long cursor with 400', async () => {
        const res = await call(t, 'GET', `${COPILOTS_PATH}?cursor=${'A'.repeat(2000)}`);
        expect(res.statusCode).toBe(400);
        expect(['invalid_cursor', 'invalid_request']).toContain(res.json().error);
      });

      it.each([['status=archived'], ['unknown=1'], ['include_deleted=maybe']])('rejects %s with 400 invalid_request', async (query) => {
        expectError(await call(t, 'GET', `${COPILOTS_PATH}?${query}`), 400, 'invalid_request');
      });
    });
  });

  describe(`copilot list: order, paging, filters (${dialect})`, () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await buildTestApp(dialect);
    });
    afterAll(async () => t.close());

    const row = (overrides: Partial<CopilotRow>): CopilotRow => ({
      id: randomUUID(),
      name: 'Tied',
      token: Math.random().toString(36).slice(2, 12).padEnd(10, 'x') + Math.random().toString(36).slice(2, 12).padEnd(10, 'y'),
      website: '',
      status: 'draft',
      prompt_message: 'p',
      enhanced_privacy: 0,
      smart_sync: 0,
      swagger_url: '',
      is_premade_demo_template: 0,
      created_at: '2024-01-01T00:00:00.000000Z',
      updated_at: '2024-01-01T00:00:00.000000Z',
      deleted_at: null,
      ...overrides,
    });

    it('orders newest first, then by id descending, and pages through ties without loss or repeat', async () => {
      // 40 rows on 4 distinct timestamps: 10 rows share each created_at.
      const base = Date.UTC(2024, 0, 1) * 1000;
      const rows: CopilotRow[] = [];
      for (let i = 0; i < 40; i++) {
        const at = formatMicros(base + (i % 4) * 1_000_001);
        rows.push(row({ created_at: at, updated_at: at, status: i % 3 === 0 ? 'live' : 'draft' }));
      }
      for (const r of rows) await insertCopilot(t.storage.db, r);
      const expected = [...rows]
        .sort((a, b) => (a.created_at === b.created_at ? (a.id < b.id ? 1 : -1) : a.created_at < b.created_at ? 1 : -1))
        .map((r) => r.id);

      // The whole list at once.
      const whole = await call(t, 'GET', `${COPILOTS_PATH}?limit=1000`);
      expect((whole.json() as Array<{ id: string }>).map((c) => c.id)).toEqual(expected);

      // Page sizes that split tie groups at different places.
      for (const limit of [1, 3, 7, 10, 39]) {
        const seen: string[] = [];
        let url: string | null = `${COPILOTS_PATH}?limit=${limit}`;
        let pages = 0;
        while (url) {
          const res = await call(t, 'GET', url);
          expect(res.statusCode, res.body).toBe(200);
          const page = res.json() as Array<Record<string, unknown>>;
          expect(page.length).toBeLessThanOrEqual(limit);
          for (const c of page) expectCopilot(c);
          seen.push(...page.map((c) => c.id as string));
          url = nextLink(res);
          if (url) {
            expect(page).toHaveLength(limit);
            expect(url.startsWith(`${COPILOTS_PATH}?`)).toBe(true);
            expect(new URL(url, 'http://x').searchParams.get('limit')).toBe(String(limit));
          }
          expect(++pages).toBeLessThanOrEqual(41);
        }
        expect(seen, `limit ${limit}`).toEqual(expected);
        expect(new Set(seen).size).toBe(rows.length);
      }
    });

    it('a page boundary falling exactly on the last row has no next link', async () => {
      const res = await call(t, 'GET', `${COPILOTS_PATH}?limit=40`);
      expect(res.json()).toHaveLength(40);
      expect(res.headers.link).toBeUndefined();
    });

    it('filters by status across pages, and the Link header keeps the filter', async () => {
      const live = (await call(t, 'GET', `${COPILOTS_PATH}?status=live&limit=1000`)).json() as Array<{ id: string; status: string }>;
      expect(live.length).toBeGreaterThan(3);
      expect(live.every((c) => c.status === 'live')).toBe(true);

      const seen: string[] = [];
      let url: string | null = `${COPILOTS_PATH}?status=live&limit=2`;
      while (url) {
        const res = await call(t, 'GET', url);
        expect(res.statusCode).toBe(200);
        const page = res.json() as Array<{ id: string; status: string }>;
        expect(page.every((c) => c.status === 'live')).toBe(true);
        seen.push(...page.map((c) => c.id));
        url = nextLink(res);
        if (url) expect(new URL(url, 'http://x').searchParams.get('status')).toBe('live');
      }
      expect(seen).toEqual(live.map((c) => c.id));

      const drafts = (await call(t, 'GET', `${COPILOTS_PATH}?status=draft&limit=1000`)).json() as Array<{ status: string }>;
      expect(drafts.every((c) => c.status === 'draft')).toBe(true);
      expect(drafts.length + live.length).toBe(40);
    });

    it('q matches names case-insensitively, containing the text anywhere', async () => {
      const names = ['Alpha Shop', 'the ALPHABET', 'Beta alp', 'Gamma'];
      const ids = new Map<string, string>();
      for (const name of names) ids.set(name, (await createCopilot(t, { name })).id);
      const found = async (q: string) =>
        ((await call(t, 'GET', `${COPILOTS_PATH}?q=${encodeURIComponent(q)}&limit=1000`)).json() as Array<{ name: string }>).map((c) => c.name).sort();
      expect(await found('alpha')).toEqual(['Alpha Shop', 'the ALPHABET']);
      expect(await found('ALPHA')).toEqual(['Alpha Shop', 'the ALPHABET']);
      expect(await found('aLp')).toEqual(['Alpha Shop', 'Beta alp', 'the ALPHABET']);
      expect(await found('shop')).toEqual(['Alpha Shop']);
      expect(await found('nothing like it')).toEqual([]);
    });

    it("an audit time range reads as a scan: off the event loop on SQLite, in the key's fair turns, within SEARCH_TIMEOUT_MS; a plain page does not (scale sweep: a range that matched little read the whole log on SQLite's main thread)", async () => {
      const scan = vi.spyOn(t.storage, 'scan');
      try {
        const key = await t.key(['admin']);
        const keyId = ((await call(t, 'GET', '/backend/api/keys/me', { key })).json() as { id: string }).id;
        expect((await call(t, 'GET', '/backend/api/audit?limit=5', { key })).statusCode).toBe(200);
        expect((await call(t, 'GET', `${COPILOTS_PATH}?q=alpha&limit=5`, { key })).statusCode).toBe(200);
        expect(scan).not.toHaveBeenCalled();
        expect((await call(t, 'GET', '/backend/api/audit?since=2020-01-01T00:00:00Z&limit=5', { key })).statusCode).toBe(200);
        expect((await call(t, 'GET', '/backend/api/audit?until=2020-01-01T00:00:00Z&limit=5', { key })).statusCode).toBe(200);
        expect(scan.mock.calls.map(([tenant]) => tenant)).toEqual([`key:${keyId}`, `key:${keyId}`]);
      } finally {
        scan.mockRestore();
      }
    });

    it('q treats %, _ and \\ literally', async () => {
      for (const name of ['100% sure', '100 percent', 'snake_case', 'snakeXcase', 'back\\slash', 'backslash']) await createCopilot(t, { name });
      const found = async (q: string) =>
        ((await call(t, 'GET', `${COPILOTS_PATH}?q=${encodeURIComponent(q)}&limit=1000`)).json() as Array<{ name: string }>).map((c) => c.name).sort();
      expect(await found('%')).toEqual(['100% sure']);
      expect(await found('100%')).toEqual(['100% sure']);
      expect(await found('_')).toEqual(['snake_case']);
      expect(await found('e_c')).toEqual(['snake_case']);
      expect(await found('k\\s')).toEqual(['back\\slash']);
      expect(await found('\\')).toEqual(['back\\slash']);
    });

    it('q and status combine, and both survive in the Link header', async () => {
      for (let i = 0; i < 5; i++) await createCopilot(t, { name: `Combo ${i}`, status: 'live' });
      await createCopilot(t, { name: 'Combo draft' });
      const seen: string[] = [];
      let url: string | null = `${COPILOTS_PATH}?q=combo&status=live&limit=2`;
      while (url) {
        const res = await call(t, 'GET', url);
        const page = res.json() as Array<{ name: string; status: string }>;
        for (const c of page) {
          expect(c.status).toBe('live');
          expect(c.name.toLowerCase()).toContain('combo');
        }
        seen.push(...page.map((c) => c.name));
        url = nextLink(res);
        if (url) {
          const params = new URL(url, 'http://x').searchParams;
          expect(params.get('q')).toBe('combo');
          expect(params.get('status')).toBe('live');
          expect(params.get('limit')).toBe('2');
        }
      }
      expect(seen).toEqual(['Combo 4', 'Combo 3', 'Combo 2', 'Combo 1', 'Combo 0']);
    });

    it('the Link header keeps include_deleted and q with special characters', async () => {
      const a = await createCopilot(t, { name: 'Gone 50% _x' });
      const b = await createCopilot(t, { name: 'Gone 50% _y' });
      await call(t, 'DELETE', copilotPath(a.id));
      await call(t, 'DELETE', copilotPath(b.id));
      const first = await call(t, 'GET', `${COPILOTS_PATH}?q=${encodeURIComponent('50% _')}&include_deleted=true&limit=1`);
      expect(first.json().map((c: { id: string }) => c.id)).toEqual([b.id]);
      const link = nextLink(first)!;
      const params = new URL(link, 'http://x').searchParams;
      expect(params.get('q')).toBe('50% _');
      expect(params.get('include_deleted')).toBe('true');
      const second = await call(t, 'GET', link);
      expect(second.json().map((c: { id: string }) => c.id)).toEqual([a.id]);
      expect(second.headers.link).toBeUndefined();
    });
  });

  describe(`ALLOW_ANONYMOUS_READ=true (${dialect})`, () => {
    let t: TestApp;
    let id: string;
    beforeAll(async () => {
      t = await buildTestApp(dialect, { env: { ALLOW_ANONYMOUS_READ: 'true' } });
      id = (await createCopilot(t, { name: 'Public' })).id;
    });
    afterAll(async () => t.close());

    it('opens the list to callers without a key', async () => {
      const res = await call(t, 'GET', COPILOTS_PATH, { key: null });
      expect(res.statusCode).toBe(200);
      expect(res.json().map((c: { id: string }) => c.id)).toEqual([id]);
    });

    it('still rejects a bad key on the list', async () => {
      expectError(await call(t, 'GET', COPILOTS_PATH, { key: 'Bearer nonsense' }), 401, 'unauthorized');
    });

    it('a valid key that would be refused reads what no key reads: never less (the list, the validator)', async () => {
      const anonymous = (await call(t, 'GET', COPILOTS_PATH, { key: null })).json();
      const other = (await createCopilot(t, { name: 'Other' })).id;
      for (const key of [await t.key(['knowledgebase:read']), await t.key(['knowledgebase:read'], [other])]) {
        const list = await call(t, 'GET', COPILOTS_PATH, { key });
        expect(list.statusCode, list.body).toBe(200);
        expect(list.json().map((c: { id: string }) => c.id)).toContain(id);
        const validator = await call(t, 'GET', `${copilotPath(id)}/validator`, { key });
        expect(validator.statusCode, validator.body).toBe((await call(t, 'GET', `${copilotPath(id)}/validator`, { key: null })).statusCode);
      }
      // A key limited to one bot that holds the scope keeps its own view: its bot alone.
      const limited = await t.key(['copilots:read'], [other]);
      expect((await call(t, 'GET', COPILOTS_PATH, { key: limited })).json().map((c: { id: string }) => c.id)).toEqual([other]);
      expect(anonymous.map((c: { id: string }) => c.id)).toEqual([id]);
      await call(t, 'DELETE', copilotPath(other));
    });

    it('lists deleted copilots (their tokens) only to a key that may read copilots: include_deleted is 401 without a key, 403 with one read as none (docs sweep)', async () => {
      const gone = await createCopilot(t, { name: 'Deleted' });
      expect((await call(t, 'DELETE', copilotPath(gone.id))).statusCode).toBe(200);
      const url = `${COPILOTS_PATH}?include_deleted=true`;
      expectError(await call(t, 'GET', url, { key: null }), 401, 'unauthorized');
      expectError(await call(t, 'GET', url, { key: await t.key(['knowledgebase:read']) }), 403, 'forbidden');
      const listed = await call(t, 'GET', url);
      expect(listed.statusCode).toBe(200);
      expect(listed.json().map((c: { id: string }) => c.id)).toContain(gone.id);
      expect((await call(t, 'GET', COPILOTS_PATH, { key: null })).json().map((c: { id: string }) => c.id)).not.toContain(gone.id);
    });

    it('the served OpenAPI document lists no key as a way into those two operations alone', async () => {
      const doc = (await call(t, 'GET', '/backend/openapi.json', { key: null })).json();
      const open: string[] = [];
      for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, { security?: unknown[] }>>)) {
        for (const [method, operation] of Object.entries(item)) {
          if (operation.security?.some((s) => JSON.stringify(s) === '{}')) open.push(`${method} ${path}`);
        }
      }
      expect(open.sort()).toEqual(['get /backend/api/copilot/{id}/validator', 'get /backend/api/copilots']);
    });

    it('keeps every other copilot route closed', async () => {
      expectError(await call(t, 'GET', copilotPath(id), { key: null }), 401, 'unauthorized');
      expectError(await call(t, 'POST', COPILOTS_PATH, { key: null, payload: { name: 'x' } }), 401, 'unauthorized');
      expectError(await call(t, 'PATCH', copilotPath(id), { key: null, payload: { name: 'x' } }), 401, 'unauthorized');
      expectError(await call(t, 'DELETE', copilotPath(id), { key: null }), 401, 'unauthorized');
      expectError(await call(t, 'GET', '/backend/api/keys', { key: null }), 401, 'unauthorized');
    });
  });
}
