/**
 * Issue 17 §3: an uploaded `slack.json` keeps its name. The stored document records the file
 * name it was uploaded under (migration 013), sanitised; GET /backend/api/copilots/summaries
 * answers it as `swagger_file_name` beside the generated swagger_url, which stays as it was.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_ORIGINAL_NAME, sanitizeOriginalFileName } from '../../src/domain/copilots/original-file-name.js';
import { buildTestApp, type TestApp } from '../support/app.js';
import { DIALECTS } from '../support/databases.js';
import { multipart, putMultipart, putRaw, spec, STORED_NAME } from '../support/documents.js';
import { AUDIT_PATH, call, COPILOT_KEYS, COPILOTS_PATH, copilotPath, createCopilot } from '../support/http.js';

const SUMMARIES = '/backend/api/copilots/summaries';

interface Summary {
  id: string;
  swagger_url: string;
  swagger_file_name: string | null;
  uploaded_at: string | null;
  readiness: { score: number; ready: boolean; ready_platforms: string[] } | null;
}

describe('sanitizeOriginalFileName', () => {
  it.each([
    ['slack.json', 'slack.json'],
    ['C:\\Users\\me\\Downloads\\slack.json', 'slack.json'],
    ['../../etc/passwd.yaml', 'passwd.yaml'],
    ['a\u0000b.json', 'ab.json'],
    ['line\nbreak\ttab\u007f\u0085.yaml', 'linebreaktab.yaml'],
    ['evil\u202egnp.json', 'evilgnp.json'],
    ['\ufeff  spaced name.json  ', 'spaced name.json'],
    ['cafe\u0301.json', 'café.json'],
    ['half\ud800.json', 'half\ufffd.json'],
    ['..', null],
    ['dir/', null],
    ['\u0001\u0002', null],
    ['', null],
    [null, null],
    [undefined, null],
  ])('%j → %j', (raw, expected) => {
    expect(sanitizeOriginalFileName(raw)).toBe(expected);
  });

  it('caps the length at MAX_ORIGINAL_NAME characters, keeping the extension', () => {
    const name = sanitizeOriginalFileName(`${'é'.repeat(400)}.json`)!;
    expect([...name].length).toBe(MAX_ORIGINAL_NAME);
    expect(name.endsWith('….json')).toBe(true);
    const astral = sanitizeOriginalFileName('😀'.repeat(300))!;
    expect([...astral].length).toBe(MAX_ORIGINAL_NAME);
    expect(astral).not.toMatch(/[\ud800-\udbff](?![\udc00-\udfff])/);
  });
});

for (const dialect of DIALECTS) {
  describe(`original file names (${dialect})`, () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await buildTestApp(dialect);
    });
    afterAll(async () => t?.close());

    async function summary(id: string): Promise<Summary> {
      const res = await call(t, 'GET', `${SUMMARIES}?ids=${id}`);
      expect(res.statusCode, res.body).toBe(200);
      const items = res.json() as Summary[];
      expect(items).toHaveLength(1);
      return items[0]!;
    }

    it('a multipart upload keeps the name it was sent under; swagger_url stays the generated name', async () => {
      const c = await createCopilot(t);
      const res = await putMultipart(t, c.id, [{ name: 'file', filename: 'slack.json', type: 'application/json', content: spec('slack.json') }]);
      expect(res.statusCode, res.body).toBe(200);
      const copilot = res.json() as Record<string, unknown>;
      expect(copilot.swagger_url).toMatch(STORED_NAME);
      // The copilot itself is unchanged: exactly the interface's keys (DESIGN §3).
      expect(Object.keys(copilot)).toEqual([...COPILOT_KEYS]);
      const s = await summary(c.id);
      expect(s).toMatchObject({ id: c.id, swagger_url: copilot.swagger_url, swagger_file_name: 'slack.json' });
      expect(s.uploaded_at).toMatch(/Z$/);
      // The list answers no new key either.
      const list = await call(t, 'GET', `${COPILOTS_PATH}?limit=1`);
      expect(Object.keys(list.json()[0])).toEqual([...COPILOT_KEYS]);
    });

    it('the name is written to the audit log with the upload', async () => {
      const c = await createCopilot(t);
      await putMultipart(t, c.id, [{ name: 'swagger_file', filename: 'petstore.yaml', type: 'application/yaml', content: spec('petstore3.yaml') }]);
      const audit = await call(t, 'GET', `${AUDIT_PATH}?bot_id=${c.id}&action=api_description.upload`);
      expect(audit.statusCode, audit.body).toBe(200);
      const entries = audit.json() as Array<{ details: Record<string, unknown> }>;
      expect(entries[0]?.details).toMatchObject({ original_name: 'petstore.yaml' });
    });

    it('a path, control characters, bidi overrides and an over-long name are sanitised before they are stored', async () => {
      const c = await createCopilot(t);
      const cases: Array<[string, string]> = [
        ['C:\\fakepath\\my api.json', 'my api.json'],
        ['..\\..\\secret\u202e.json', 'secret.json'],
        [`${'n'.repeat(300)}.json`, `${'n'.repeat(MAX_ORIGINAL_NAME - 6)}….json`],
      ];
      for (const [sent, stored] of cases) {
        const res = await putMultipart(t, c.id, [{ name: 'file', filename: sent, type: 'application/json', content: spec('petstore3.json') }]);
        expect(res.statusCode, res.body).toBe(200);
        expect((await summary(c.id)).swagger_file_name).toBe(stored);
      }
    });

    it('a raw body has no name (null); a later upload replaces the name with its own', async () => {
      const c = await createCopilot(t);
      await putMultipart(t, c.id, [{ name: 'file', filename: 'first.json', type: 'application/json', content: spec('petstore3.json') }]);
      expect((await summary(c.id)).swagger_file_name).toBe('first.json');
      const raw = await putRaw(t, c.id, spec('petstore3.json'), 'application/json');
      expect(raw.statusCode, raw.body).toBe(200);
      expect((await summary(c.id)).swagger_file_name).toBeNull();
    });

    it('a copilot created with its document (POST …/copilot/swagger) keeps the file name', async () => {
      const { payload, contentType } = multipart([
        { name: 'name', value: 'With file' },
        { name: 'swagger_file', filename: 'trello.json', type: 'application/json', content: spec('trello.json') },
      ]);
      const res = await call(t, 'POST', '/backend/api/copilot/swagger', { payload, headers: { 'content-type': contentType } });
      expect(res.statusCode, res.body).toBe(201);
      expect((await summary(res.json().id)).swagger_file_name).toBe('trello.json');
    });

    it('a swagger_url that is a URL has no file name; pointing back at another copilot’s document does not borrow its name', async () => {
      const a = await createCopilot(t);
      await putMultipart(t, a.id, [{ name: 'file', filename: 'mine.json', type: 'application/json', content: spec('petstore3.json') }]);
      const stored = (await summary(a.id)).swagger_url;
      const b = await createCopilot(t);
      const patched = await call(t, 'PATCH', copilotPath(b.id), { payload: { swagger_url: stored } });
      expect(patched.statusCode, patched.body).toBe(200);
      expect((await summary(b.id)).swagger_file_name).toBeNull();
      await call(t, 'PATCH', copilotPath(a.id), { payload: { swagger_url: 'https://api.example.com/openapi.json' } });
      expect(await summary(a.id)).toMatchObject({ swagger_file_name: null, uploaded_at: null, readiness: null });
    });
  });
}
