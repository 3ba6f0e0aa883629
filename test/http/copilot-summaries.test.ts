/**
 * Issue 17 §3: the copilot list shows each copilot's readiness without opening its report.
 * The readiness is stored with the document when it is uploaded (migration 013) and answered
 * by GET /backend/api/copilots/summaries?ids=… from what is stored: the same score and
 * platforms as GET …/validator, nothing validated on the way. Also: a 413 says the limit.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { PLATFORM_IDS } from '../../src/domain/validator/wire-types.js';
import { buildTestApp, type TestApp } from '../support/app.js';
import { DIALECTS } from '../support/databases.js';
import { putMultipart, putRaw, spec } from '../support/documents.js';
import { call, COPILOTS_PATH, copilotPath, createCopilot, expectError, validatorPath } from '../support/http.js';

const SUMMARIES = '/backend/api/copilots/summaries';

interface Summary {
  id: string;
  swagger_url: string;
  swagger_file_name: string | null;
  uploaded_at: string | null;
  readiness: { score: number; ready: boolean; ready_platforms: string[] } | null;
}

for (const dialect of DIALECTS) {
  describe(`copilot summaries (${dialect})`, () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await buildTestApp(dialect, { env: { BODY_LIMIT_BYTES: '4096' } });
    });
    afterAll(async () => t?.close());

    it.each(['petstore3.json', 'slack.json', 'uber.swagger2.json'])('the readiness of %s is what its validation reports', async (file) => {
      const c = await createCopilot(t);
      expect((await putRaw(t, c.id, spec(file), file.endsWith('.json') ? 'application/json' : 'application/yaml')).statusCode).toBe(200);
      const validation = (await call(t, 'GET', validatorPath(c.id))).json() as {
        validations: { readiness: { score: number; platforms: Record<string, { ready: boolean }> } };
      };
      const { score, platforms } = validation.validations.readiness;
      const ready = PLATFORM_IDS.filter((p) => platforms[p]!.ready);
      const res = await call(t, 'GET', `${SUMMARIES}?ids=${c.id}`);
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toEqual([
        {
          id: c.id,
          swagger_url: expect.any(String),
          swagger_file_name: null,
          uploaded_at: expect.any(String),
          readiness: { score, ready: ready.length === PLATFORM_IDS.length, ready_platforms: ready },
        },
      ]);
    });

    it('an upload reads its readiness with its validation: one task on the threads, none for bytes validated before', async () => {
      const tasks = vi.spyOn(t.taskThreads, 'run');
      try {
        // Bytes no other test sends (a trailing line): not in the validation cache yet.
        const bytes = Buffer.concat([spec('slack.json'), Buffer.from('\n\n')]);
        const first = await createCopilot(t);
        expect((await putRaw(t, first.id, bytes, 'application/json')).statusCode).toBe(200);
        expect(tasks.mock.calls.map((c) => c[0])).toEqual(['answer']);
        tasks.mockClear();
        // The same bytes for another copilot: the validation cache's entry holds the readiness too.
        const second = await createCopilot(t);
        expect((await putRaw(t, second.id, bytes, 'application/json')).statusCode).toBe(200);
        expect(tasks.mock.calls.map((c) => c[0])).toEqual([]);
        const validation = (await call(t, 'GET', validatorPath(second.id))).json() as { validations: { readiness: { score: number } } };
        const summaries = (await call(t, 'GET', `${SUMMARIES}?ids=${first.id},${second.id}`)).json() as Summary[];
        expect(summaries.map((s) => s.readiness?.score)).toEqual([validation.validations.readiness.score, validation.validations.readiness.score]);
      } finally {
        tasks.mockRestore();
      }
    });

    it('answers in the order asked, leaving out unknown and deleted copilots; a copilot without a document has no readiness', async () => {
      const a = await createCopilot(t);
      const b = await createCopilot(t);
      const gone = await createCopilot(t);
      await putRaw(t, b.id, spec('petstore3.json'), 'application/json');
      expect((await call(t, 'DELETE', copilotPath(gone.id))).statusCode).toBe(200);
      const unknown = '00000000-0000-4000-8000-000000000000';
      const res = await call(t, 'GET', `${SUMMARIES}?ids=${b.id},${unknown},${a.id},${gone.id},${b.id.toUpperCase()}`);
      expect(res.statusCode, res.body).toBe(200);
      const items = res.json() as Summary[];
      expect(items.map((s) => s.id)).toEqual([b.id, a.id]);
      expect(items[0]!.readiness).not.toBeNull();
      expect(items[1]).toEqual({ id: a.id, swagger_url: '', swagger_file_name: null, uploaded_at: null, readiness: null });
    });

    it('a key limited to some bots gets only those', async () => {
      const mine = await createCopilot(t);
      const other = await createCopilot(t);
      const key = await t.key(['copilots:read'], [mine.id]);
      const res = await call(t, 'GET', `${SUMMARIES}?ids=${mine.id},${other.id}`, { key });
      expect(res.statusCode, res.body).toBe(200);
      expect((res.json() as Summary[]).map((s) => s.id)).toEqual([mine.id]);
    });

    it('refuses a missing key (401), a key without copilots:read (403), malformed, missing or too many ids (400)', async () => {
      const c = await createCopilot(t);
      expectError(await call(t, 'GET', `${SUMMARIES}?ids=${c.id}`, { key: null }), 401, 'unauthorized');
      expectError(await call(t, 'GET', `${SUMMARIES}?ids=${c.id}`, { key: await t.key(['knowledgebase:read']) }), 403, 'forbidden');
      expectError(await call(t, 'GET', `${SUMMARIES}?ids=not-a-uuid`), 400, 'invalid_request');
      expectError(await call(t, 'GET', `${SUMMARIES}?ids=,,`), 400, 'invalid_request');
      expectError(await call(t, 'GET', SUMMARIES), 400, 'invalid_request');
      const many = Array.from({ length: 101 }, (_, i) => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`).join(',');
      expectError(await call(t, 'GET', `${SUMMARIES}?ids=${many}`), 400, 'invalid_request');
    });

    it('a body over the limit is answered 413 saying the limit', async () => {
      const res = await call(t, 'POST', COPILOTS_PATH, { payload: { name: 'big', prompt_message: 'x'.repeat(5000) } });
      const body = expectError(res, 413, 'payload_too_large');
      expect(body.details).toEqual({ max_bytes: 4096 });
      expect(body.message).toContain('4096 bytes');
    });
  });

  describe(`a document over the limit (${dialect})`, () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await buildTestApp(dialect, { env: { MAX_DOCUMENT_BYTES: '2048' } });
    });
    afterAll(async () => t?.close());

    it('is answered 413 naming the document limit, raw or multipart', async () => {
      const c = await createCopilot(t);
      const big = spec('petstore3.json');
      expect(big.length).toBeGreaterThan(2048);
      for (const res of [
        await putRaw(t, c.id, big, 'application/json'),
        await putMultipart(t, c.id, [{ name: 'file', filename: 'petstore3.json', type: 'application/json', content: big }]),
      ]) {
        const body = expectError(res, 413, 'payload_too_large');
        expect(body.details).toEqual({ max_bytes: 2048 });
        expect(body.message).toContain('2048 bytes');
      }
    });
  });
}
