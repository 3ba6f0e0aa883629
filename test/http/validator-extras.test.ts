/**
 * GET /backend/api/copilot/:id/tools and …/fixes (issue 18 B) over HTTP, on both databases:
 * the answers for stored and fetched documents, the errors as GET …/validator gives them,
 * and access.
 */
import { load } from 'js-yaml';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { parseDocument } from '../../src/domain/validator/index.js';
import { fixesOverlay } from '../../src/domain/validator/overlay.js';
import { toolDefinitions, TOOL_PLATFORM_IDS } from '../../src/domain/validator/tools.js';
import { buildTestApp, type TestApp } from '../support/app.js';
import { DIALECTS } from '../support/databases.js';
import { hostile, setSwaggerUrl, SPEC_COUNTS, spec, uploadSpec } from '../support/documents.js';
import { call, copilotPath, createCopilot, expectError, validatorPath } from '../support/http.js';
import { PageServer } from '../support/pages.js';

const UNKNOWN_ID = '4f8a3c1e-9b2d-4e6f-8a1b-2c3d4e5f6a7b';
const SPEC_FILES = Object.keys(SPEC_COUNTS);
const toolsPath = (id: string, platform = 'openai') => `${copilotPath(id)}/tools?platform=${platform}`;
const fixesPath = (id: string) => `${copilotPath(id)}/fixes`;
const docOf = (file: string) => parseDocument({ bytes: spec(file), fileName: file });

for (const dialect of DIALECTS) {
  describe(`tools and fixes (${dialect})`, () => {
    let t: TestApp;
    let pages: PageServer;
    beforeAll(async () => {
      pages = await PageServer.start();
      pages.set('/specs/petstore3.yaml', { type: 'application/yaml', body: spec('petstore3.yaml') });
      pages.set('/bomb.yaml', { type: 'application/yaml', body: hostile('billion-laughs.yaml') });
      pages.set('/gone', { status: 404, type: 'text/plain', body: 'Not here' });
      t = await buildTestApp(dialect);
    });
    afterAll(async () => {
      await t?.close();
      await pages?.close();
    });

    describe('GET …/tools', () => {
      it.each(SPEC_FILES)('%s: the tools of every platform, as the domain computes them', async (file) => {
        const c = await createCopilot(t, { name: file });
        await uploadSpec(t, c.id, file);
        for (const platform of TOOL_PLATFORM_IDS) {
          const res = await call(t, 'GET', toolsPath(c.id, platform));
          expect(res.statusCode, res.body.slice(0, 300)).toBe(200);
          expect(res.headers['content-type']).toMatch(/^application\/json/);
          const body = res.json();
          expect(Object.keys(body)).toEqual(['chatbot_id', 'platform', 'tools']);
          expect(body).toEqual({ chatbot_id: c.id, platform, tools: JSON.parse(JSON.stringify(toolDefinitions(docOf(file), platform))) });
          expect(body.tools).toHaveLength(SPEC_COUNTS[file]!.ops);
        }
      });

      it('a document behind a URL is fetched under the same rules', async () => {
        const c = await createCopilot(t);
        await setSwaggerUrl(t, c.id, pages.url('/specs/petstore3.yaml'));
        const res = await call(t, 'GET', toolsPath(c.id, 'mcp'));
        expect(res.statusCode).toBe(200);
        expect(res.json().tools.map((tool: { name: string }) => tool.name)).toContain('addPet');
      });

      it('400 for an unknown, missing or repeated platform, or another query key', async () => {
        const c = await createCopilot(t);
        await uploadSpec(t, c.id, 'trello.json');
        for (const query of ['?platform=gpt_actions', '?platform=OPENAI', '', '?platform=openai&x=1']) {
          expectError(await call(t, 'GET', `${copilotPath(c.id)}/tools${query}`), 400, 'invalid_request');
        }
      });
    });

    describe('GET …/fixes', () => {
      it.each(SPEC_FILES)('%s: the overlay the domain computes', async (file) => {
        const c = await createCopilot(t, { name: file });
        await uploadSpec(t, c.id, file);
        const res = await call(t, 'GET', fixesPath(c.id));
        expect(res.statusCode, res.body.slice(0, 300)).toBe(200);
        const body = res.json();
        expect(Object.keys(body)).toEqual(['overlay', 'info', 'actions']);
        expect(body).toEqual(JSON.parse(JSON.stringify(fixesOverlay(docOf(file)))));
      });

      it('YAML when Accept asks for it, JSON otherwise', async () => {
        const c = await createCopilot(t);
        await uploadSpec(t, c.id, 'uber.swagger2.json');
        const expected = JSON.parse(JSON.stringify(fixesOverlay(docOf('uber.swagger2.json'))));
        for (const accept of ['application/yaml', 'text/yaml, */*;q=0.1']) {
          const res = await call(t, 'GET', fixesPath(c.id), { headers: { accept } });
          expect(res.statusCode).toBe(200);
          expect(res.headers['content-type']).toBe('application/yaml; charset=utf-8');
          expect(res.body.startsWith('overlay: 1.0.0\n')).toBe(true);
          expect(load(res.body)).toEqual(expected);
        }
        for (const accept of ['application/json', 'application/json, application/yaml', '*/*']) {
          const res = await call(t, 'GET', fixesPath(c.id), { headers: { accept } });
          expect(res.headers['content-type']).toMatch(/^application\/json/);
          expect(res.json()).toEqual(expected);
        }
      });
    });

    describe('written on the task thread', () => {
      // The tools of a large description are tens of megabytes of JSON (Microsoft Graph's: 50 MB):
      // cloned back as objects and serialised on the event loop, they held every other request
      // for seconds. The thread writes them, and the event loop sends those bytes as they are.
      const taskValues = async (request: () => ReturnType<typeof call>) => {
        const run = vi.spyOn(t.taskThreads, 'run');
        try {
          const res = await request();
          const values = await Promise.all(run.mock.results.map((r) => r.value as Promise<unknown>));
          return { res, tasks: run.mock.calls.map((c) => c[0]), values };
        } finally {
          run.mockRestore();
        }
      };

      /** The copilot's document validated afresh, so that only the view's own task runs next (earlier tests kept theirs for these bytes). */
      const validatedAfresh = async (id: string) => {
        t.validationCache.clear();
        expect((await call(t, 'GET', validatorPath(id))).statusCode).toBe(200);
      };

      it('GET …/tools: the answer holds the bytes the thread wrote', async () => {
        const c = await createCopilot(t);
        await uploadSpec(t, c.id, 'slack.json');
        await validatedAfresh(c.id);
        const { res, tasks, values } = await taskValues(() => call(t, 'GET', toolsPath(c.id, 'anthropic')));
        expect(tasks).toEqual(['tools']);
        const bytes = values[0];
        expect(bytes).toBeInstanceOf(Uint8Array);
        const text = Buffer.from(bytes as Uint8Array).toString('utf8');
        expect(res.rawPayload.toString('utf8')).toBe(`{"chatbot_id":"${c.id}","platform":"anthropic","tools":${text}}`);
        expect(JSON.parse(text)).toEqual(JSON.parse(JSON.stringify(toolDefinitions(docOf('slack.json'), 'anthropic'))));
      });

      it.each(['application/json', 'application/yaml'])('GET …/fixes (%s): the answer is the bytes the thread wrote', async (accept) => {
        const c = await createCopilot(t);
        await uploadSpec(t, c.id, 'uber.swagger2.json');
        await validatedAfresh(c.id);
        const { res, tasks, values } = await taskValues(() => call(t, 'GET', fixesPath(c.id), { headers: { accept } }));
        expect(tasks).toEqual(['fixes']);
        expect(values[0]).toBeInstanceOf(Uint8Array);
        expect(res.rawPayload.equals(Buffer.from(values[0] as Uint8Array))).toBe(true);
        expect(res.headers['content-length']).toBe(String(res.rawPayload.length));
      });

      // DESIGN §5: repeated validation of an unchanged document must not parse it again. Each GET
      // of the tools or the fixes parsed and built them again: about 1 s of a core for an 18 MB
      // description (amplification sweep).
      it('the tools and the fixes of unchanged bytes are kept: asked again, no task runs; another platform or format, or new bytes, run theirs', async () => {
        const c = await createCopilot(t);
        await uploadSpec(t, c.id, 'slack.json');
        await validatedAfresh(c.id);
        const asks = [toolsPath(c.id, 'openai'), toolsPath(c.id, 'gemini'), fixesPath(c.id)] as const;
        const first = [];
        for (const path of asks) {
          const { res, tasks } = await taskValues(() => call(t, 'GET', path));
          expect(res.statusCode, path).toBe(200);
          expect(tasks, path).toEqual([path.includes('tools') ? 'tools' : 'fixes']);
          first.push(res.body);
        }
        for (const [i, path] of asks.entries()) {
          const { res, tasks } = await taskValues(() => call(t, 'GET', path));
          expect(tasks, path).toEqual([]);
          expect(res.body, path).toBe(first[i]);
        }
        const yaml = await taskValues(() => call(t, 'GET', fixesPath(c.id), { headers: { accept: 'application/yaml' } }));
        expect(yaml.tasks).toEqual(['fixes']);
        expect(yaml.res.headers['content-type']).toMatch(/^application\/yaml/);
        // Another copilot with the same bytes is answered from the same entry, under its own id.
        const other = await createCopilot(t);
        await uploadSpec(t, other.id, 'slack.json');
        const shared = await taskValues(() => call(t, 'GET', toolsPath(other.id, 'openai')));
        expect(shared.tasks).toEqual([]);
        expect(shared.res.body).toBe(first[0]!.replace(c.id, other.id));
        // New bytes: their own tools.
        await uploadSpec(t, c.id, 'petstore3.json');
        const replaced = await taskValues(() => call(t, 'GET', toolsPath(c.id, 'openai')));
        expect(replaced.tasks).toEqual(['tools']);
        expect(replaced.res.json().tools).toEqual(JSON.parse(JSON.stringify(toolDefinitions(docOf('petstore3.json'), 'openai'))));
      });
    });

    describe('errors, as GET …/validator gives them', () => {
      for (const [what, path] of [
        ['tools', (id: string) => toolsPath(id)],
        ['fixes', fixesPath],
      ] as const) {
        it(`${what}: 422 without a document, 404 for an unknown or deleted copilot`, async () => {
          const c = await createCopilot(t);
          expectError(await call(t, 'GET', path(c.id)), 422, 'swagger_missing');
          await setSwaggerUrl(t, c.id, 'AAAAAAAAAAAAAAAAAAAA.json');
          expectError(await call(t, 'GET', path(c.id)), 422, 'swagger_missing');
          const deleted = await createCopilot(t);
          await uploadSpec(t, deleted.id, 'trello.json');
          expect((await call(t, 'DELETE', copilotPath(deleted.id))).statusCode).toBe(200);
          for (const id of [UNKNOWN_ID, 'not-a-uuid', deleted.id]) expectError(await call(t, 'GET', path(id)), 404, 'copilot_not_found');
        });

        it(`${what}: 400 for a document that cannot be read, 502 when the URL fails`, async () => {
          const c = await createCopilot(t);
          await setSwaggerUrl(t, c.id, pages.url('/bomb.yaml'));
          expectError(await call(t, 'GET', path(c.id)), 400, 'invalid_swagger_file');
          await setSwaggerUrl(t, c.id, pages.url('/gone'));
          expectError(await call(t, 'GET', path(c.id)), 502, 'swagger_fetch_failed');
        });

        it(`${what}: 401 without a key, 403 for another bot's key or a knowledge-base key; a key limited to the copilot reads it`, async () => {
          const c = await createCopilot(t);
          await uploadSpec(t, c.id, 'petstore3.json');
          const other = await createCopilot(t);
          expectError(await call(t, 'GET', path(c.id), { key: null }), 401, 'unauthorized');
          expectError(await call(t, 'GET', path(UNKNOWN_ID), { key: 'Bearer cms_nope' }), 401, 'unauthorized');
          expectError(await call(t, 'GET', path(c.id), { key: await t.key(['copilots:read'], [other.id]) }), 403, 'forbidden');
          expectError(await call(t, 'GET', path(c.id), { key: await t.key(['knowledgebase:read']) }), 403, 'forbidden');
          expect((await call(t, 'GET', path(c.id), { key: await t.key(['copilots:read'], [c.id]) })).statusCode).toBe(200);
        });
      }
    });
  });
}
