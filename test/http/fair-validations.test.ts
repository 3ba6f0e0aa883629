/**
 * Copilots take fair turns on the task threads (src/fair-turns.ts, src/threads/task-threads.ts):
 * one copilot's flood of documents to validate (uploads, GET …/validator, …/tools, …/fixes)
 * never holds every thread, and past its waiting limit it is refused with 429, while another
 * copilot's document is answered meanwhile. The threads run the real program, except for a task
 * given a SharedArrayBuffer, which holds its thread until the test lets it go.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { TASKS_WAITING_PER_TENANT, TaskThreads } from '../../src/threads/task-threads.js';
import { buildTestApp, type TestApp } from '../support/app.js';
import { DIALECTS } from '../support/databases.js';
import { uploadSpec } from '../support/documents.js';
import { copilotPath, createCopilot, expectError, swaggerPath, validatorPath } from '../support/http.js';
import { holdingTask, testWorkerScript } from '../support/task-threads.js';

const turn = () => new Promise((resolve) => setImmediate(resolve));

/**
 * Writes into `dir` the threads' real program, except for a task given a SharedArrayBuffer,
 * which holds its thread until the test lets it go (holdingTask); its URL.
 */
function holdingWorker(dir: string): URL {
  const script = path.join(dir, 'holding-worker.mjs');
  writeFileSync(
    script,
    `import runTask from ${JSON.stringify(testWorkerScript().href)};
export default (request) => {
  const [what] = request.args;
  if (!(what instanceof SharedArrayBuffer)) return runTask(request);
  const flag = new Int32Array(what);
  Atomics.store(flag, 0, 1);
  Atomics.wait(flag, 0, 1);
  return { ok: true, value: 'released' };
};
`,
  );
  return pathToFileURL(script);
}

for (const dialect of DIALECTS) {
  describe(`copilots take fair turns on the task threads (${dialect})`, () => {
    let t: TestApp;
    let dir: string;
    let pool: TaskThreads;
    let app: FastifyInstance;

    beforeAll(async () => {
      t = await buildTestApp(dialect);
      dir = mkdtempSync(path.join(tmpdir(), 'cms-fair-'));
      // Two threads, as on a two-core machine: a copilot may run one task at a time.
      pool = new TaskThreads({ threads: 2, script: holdingWorker(dir) });
      app = await t.anotherApp({ taskThreads: pool });
    });

    afterAll(async () => {
      await app?.close();
      await pool?.close();
      await t?.close();
      rmSync(dir, { recursive: true, force: true });
    });

    it('answers another copilot while one has documents waiting, and refuses that one past its limit with 429', async () => {
      const flooding = await createCopilot(t, { name: 'flooding' });
      const other = await createCopilot(t, { name: 'other' });
      await uploadSpec(t, flooding.id, 'petstore3.json');
      await uploadSpec(t, other.id, 'petstore3.json');

      // The flooding copilot runs a task, and has as many waiting as it may.
      const held = Array.from({ length: TASKS_WAITING_PER_TENANT + 1 }, () => holdingTask(pool, flooding.id));
      for (let i = 0; !held[0]!.started(); i++) {
        expect(i).toBeLessThan(100_000);
        await turn();
      }
      expect(pool.stats()).toMatchObject({ busy: 1, queued: TASKS_WAITING_PER_TENANT });

      // One more of its documents is refused at once, the contract's error body.
      const fixes = await app.inject({ method: 'GET', url: `${copilotPath(flooding.id)}/fixes`, headers: { authorization: t.admin } });
      const refused = expectError(fixes, 429, 'quota_exceeded');
      expect(refused.details).toEqual({ waiting: TASKS_WAITING_PER_TENANT });
      const upload = await app.inject({
        method: 'PUT',
        url: swaggerPath(flooding.id),
        headers: { authorization: t.admin, 'content-type': 'application/json' },
        payload: '{"openapi":"3.0.3","info":{"title":"t","version":"1"},"paths":{}}',
      });
      expectError(upload, 429, 'quota_exceeded');

      // The other copilot is answered meanwhile, on the thread the flooding one may not take.
      const validation = await app.inject({ method: 'GET', url: validatorPath(other.id), headers: { authorization: t.admin } });
      expect(validation.statusCode, validation.body).toBe(200);
      expect(validation.json()).toMatchObject({ chatbot_id: other.id });
      const tools = await app.inject({ method: 'GET', url: `${copilotPath(other.id)}/tools?platform=openai`, headers: { authorization: t.admin } });
      expect(tools.statusCode, tools.body).toBe(200);
      expect(tools.json().tools.length).toBeGreaterThan(0);
      expect(held.filter((h) => h.started())).toHaveLength(1);

      // Its own tasks run one after another once let go, and its documents are answered again.
      for (const h of held) {
        while (!h.started()) await turn();
        h.release();
        expect(await h.done).toBe('released');
      }
      const again = await app.inject({ method: 'GET', url: `${copilotPath(flooding.id)}/fixes`, headers: { authorization: t.admin } });
      expect(again.statusCode, again.body).toBe(200);
      expect(pool.stats()).toMatchObject({ busy: 0, queued: 0, refused: 2 });
    });
  });
}

describe('the default number of task threads', () => {
  it("leaves another copilot a thread while one copilot's tasks hold every thread it may take, whatever the cores", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'cms-fair-default-'));
    // As the service starts it: TASK_THREADS unset. With one thread (the default on two cores
    // until now) the other copilot's task waited for the flooding one's to end.
    const pool = new TaskThreads({ threads: loadConfig({}).taskThreads, script: holdingWorker(dir) });
    try {
      const flooding = Array.from({ length: TASKS_WAITING_PER_TENANT }, () => holdingTask(pool, 'flooding'));
      for (let i = 0; !flooding[0]!.started(); i++) {
        expect(i).toBeLessThan(100_000);
        await turn();
      }
      const other = holdingTask(pool, 'other');
      for (let i = 0; !other.started() && i < 2_000; i++) await new Promise((resolve) => setTimeout(resolve, 5));
      expect(other.started()).toBe(true);
      other.release();
      expect(await other.done).toBe('released');
      for (const h of flooding) {
        while (!h.started()) await turn();
        h.release();
        expect(await h.done).toBe('released');
      }
    } finally {
      await pool.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
