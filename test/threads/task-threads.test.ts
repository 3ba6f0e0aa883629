import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isAppError, type AppError } from '../../src/errors.js';
import { ExtractError, extractText } from '../../src/domain/knowledgebase/extract.js';
import { splitPassages, unpackPassages } from '../../src/domain/knowledgebase/passages.js';
import { passageTerms } from '../../src/text/search-terms.js';
import { createValidationCache, renderFresh, renderValidation, type DocumentSource } from '../../src/domain/validator/index.js';
import { MAX_QUEUED_BYTES, TASKS_WAITING_PER_TENANT, TaskThreadError, TaskThreads } from '../../src/threads/task-threads.js';
import { buildTestApp, type TestApp } from '../support/app.js';
import { builtModule, runNodeScript } from '../support/built-sources.js';
import { holdingTask } from '../support/task-threads.js';
import { copilotPath, createCopilot, swaggerPath } from '../support/http.js';

const FIXTURES = path.resolve('test/fixtures');
/** The compiled thread program of these sources (test/support/global-setup.ts). */
const WORKER = builtModule('threads/worker.js');
const spec = (name: string): DocumentSource => ({ bytes: readFileSync(path.join(FIXTURES, 'specs', name)), fileName: name });
const json = (text: string): DocumentSource => ({ bytes: Buffer.from(text), fileName: 'doc.json' });
const operation = (i: number) => json(`{"openapi":"3.0.3","info":{"title":"t","version":"1"},"paths":{"/op${i}":{"get":{"operationId":"op${i}"}}}}`);

/** Millions of empty arrays: valid, within the limits, and half a second or more of parsing. */
const containerDense = (arrays: number) => `{"openapi":"3.0.3","info":{"title":"t","version":"1"},"paths":{"/a":{"get":{}}},"x":[${'[],'.repeat(arrays)}[]]}`;

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => expect.fail('expected the task to fail'),
    (err: unknown) => err,
  );
}

describe('task threads: the same answers as on the main thread', () => {
  const pool = new TaskThreads({ threads: 2, script: WORKER });
  afterAll(() => pool.close());

  it('renders a validation byte for byte as renderFresh does (JSON and YAML)', async () => {
    for (const name of ['petstore3.json', 'petstore3.yaml']) {
      expect((await pool.answerOnThread('c', spec(name), {})).answer.toString('utf8')).toBe(renderFresh(spec(name)).toString('utf8'));
    }
  });

  it('moves the bytes of a document read for one validation to the thread; copies a slice of a larger buffer', async () => {
    const expected = renderFresh(spec('petstore3.json')).toString('utf8');
    const whole = { ...spec('petstore3.json'), bytes: Buffer.from(spec('petstore3.json').bytes) };
    expect((await pool.answerOnThreadMovingBytes('c', whole, {})).answer.toString('utf8')).toBe(expected);
    expect(whole.bytes.byteLength).toBe(0); // moved, not copied
    const inside = Buffer.concat([Buffer.from('xx'), spec('petstore3.json').bytes]).subarray(2);
    const slice = { ...spec('petstore3.json'), bytes: inside };
    expect((await pool.answerOnThreadMovingBytes('c', slice, {})).answer.toString('utf8')).toBe(expected);
    expect(slice.bytes.equals(spec('petstore3.json').bytes)).toBe(true); // the rest of its buffer stays
    // answerOnThread copies: the caller keeps its bytes.
    const kept = { ...spec('petstore3.json'), bytes: Buffer.from(spec('petstore3.json').bytes) };
    const { answer, readiness } = await pool.answerOnThread('c', kept, {});
    expect(answer.toString('utf8')).toBe(expected);
    expect(readiness).toEqual(renderValidation(spec('petstore3.json')).readiness);
    expect(kept.bytes.equals(spec('petstore3.json').bytes)).toBe(true);
    // The answer came back in a buffer of its own (moved, not a view into a larger one).
    expect(answer.byteOffset).toBe(0);
    expect(answer.buffer.byteLength).toBe(answer.length);
  });

  it('keeps a validation error as the AppError the main thread throws (code, message, details)', async () => {
    const broken = json('{"openapi":"3.0.3",\n  "paths": {,}}');
    let expected: AppError | undefined;
    try {
      renderFresh(broken);
    } catch (err) {
      expected = err as AppError;
    }
    const got = await rejection(pool.run('validate', [broken, {}]));
    expect(got).toSatisfy(isAppError);
    expect(got).toMatchObject({ code: 'invalid_swagger_file', message: expected!.message, details: expected!.details });
  });

  it('passes parse options to the thread', async () => {
    const deep = json(`{"openapi":"3.0.3","paths":{},"x":${'['.repeat(20)}${']'.repeat(20)}}`);
    expect(await pool.run('validate', [deep, {}])).toContain('all_endpoints');
    expect(await rejection(pool.run('validate', [deep, { maxDepth: 10 }]))).toMatchObject({ code: 'invalid_swagger_file' });
  });

  it('extracts passages as the main thread does, and keeps an ExtractError as one', async () => {
    const page = readFileSync(path.join(FIXTURES, 'knowledgebase', 'docs-page.html'));
    const packed = await pool.run('passages', [page, 'text/html; charset=utf-8']);
    const expected = splitPassages(extractText(page, 'text/html; charset=utf-8').text);
    expect(unpackPassages(packed).slice(0, expected.length + 1)).toEqual(expected);
    // They come back in two buffers of their own: moved from the thread, not cloned string by string.
    expect(packed.text.byteLength).toBe(packed.text.buffer.byteLength);
    expect(packed.ends.byteLength).toBe(packed.ends.buffer.byteLength);
    // Their search terms are computed there too, as storing would compute them.
    expect(unpackPassages(packed).sliceTerms!(0, expected.length)).toEqual(expected.map(passageTerms));
    const refused = await rejection(pool.run('passages', [Buffer.from('%PDF-1.7'), 'application/pdf']));
    expect(refused).toBeInstanceOf(ExtractError);
    expect((refused as Error).message).toMatch(/Unsupported content type application\/pdf/);
  });
});

describe('task threads: scheduling and failure', () => {
  let dir: string;
  let standIn: URL;
  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'cms-threads-'));
    // A stand-in program (a piscina task module, as worker.ts is): ends its thread on "die";
    // given a SharedArrayBuffer, raises its flag and blocks until the test lowers it; answers
    // any other argument with itself.
    const file = path.join(dir, 'stand-in-worker.mjs');
    writeFileSync(
      file,
      `export default ({ args }) => {
  const [what] = args;
  if (what === 'die') process.exit(3);
  if (what instanceof SharedArrayBuffer) {
    const flag = new Int32Array(what);
    Atomics.store(flag, 0, 1);
    Atomics.notify(flag, 0);
    Atomics.wait(flag, 0, 1);
    return { ok: true, value: 'released' };
  }
  return { ok: true, value: what };
};
`,
    );
    standIn = pathToFileURL(file);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /** A task on the stand-in that holds its thread until release(), once a thread runs it. */
  async function blocking(pool: TaskThreads, tenant?: string): Promise<{ done: Promise<unknown>; release: () => void }> {
    const task = holdingTask(pool, tenant);
    let settled = false;
    void task.done.finally(() => (settled = true));
    // Until the thread raises the flag: it is running the task.
    while (!task.started()) {
      if (settled) throw new Error(`The task ended before it blocked: ${String(await task.done)}`);
      await new Promise((resolve) => setImmediate(resolve));
    }
    return task;
  }
  const echo = (pool: TaskThreads, value: string, bytes?: number, tenant?: string) =>
    pool.run('validate', [value as unknown as DocumentSource, {}], { bytes, tenant });

  it('queues tasks beyond its threads and answers each its own result', async () => {
    const pool = new TaskThreads({ threads: 1, script: WORKER });
    try {
      const results = await Promise.all([0, 1, 2, 3, 4].map((i) => pool.run('validate', [operation(i), {}])));
      for (const [i, text] of results.entries()) expect(JSON.parse(text).all_endpoints[0].operationId).toBe(`op${i}`);
      expect(pool.stats()).toMatchObject({ threads: 1, busy: 0, queued: 0 });
    } finally {
      await pool.close();
    }
  });

  it('a copilot never holds every thread: another copilot’s task runs while the first one’s wait', async () => {
    const pool = new TaskThreads({ threads: 2, script: standIn });
    try {
      const a1 = await blocking(pool, 'copilot-a');
      const a2 = holdingTask(pool, 'copilot-a');
      let b: unknown;
      const bDone = echo(pool, 'b', undefined, 'copilot-b').then((value) => (b = value));
      // Whichever comes first: copilot a's second task takes the other thread, or copilot b is answered.
      while (b === undefined && !a2.started()) await new Promise((resolve) => setImmediate(resolve));
      expect(b).toBe('b');
      expect(a2.started()).toBe(false);
      expect(pool.stats()).toMatchObject({ busy: 1, queued: 1 });
      // Once the first ends, the second runs.
      a1.release();
      expect(await a1.done).toBe('released');
      while (!a2.started()) await new Promise((resolve) => setImmediate(resolve));
      a2.release();
      expect(await a2.done).toBe('released');
      await bDone;
    } finally {
      await pool.close();
    }
  });

  it('serves copilots waiting for a thread round robin, each one’s tasks in order', async () => {
    const pool = new TaskThreads({ threads: 1, script: standIn });
    try {
      const running = await blocking(pool, 'copilot-a');
      const answered: string[] = [];
      const tasks = [
        ['a1', 'copilot-a'],
        ['a2', 'copilot-a'],
        ['a3', 'copilot-a'],
        ['b1', 'copilot-b'],
        ['c1', 'copilot-c'],
      ].map(([value, tenant]) => echo(pool, value!, undefined, tenant).then((v) => answered.push(v)));
      // A task without a copilot (a page's passages) is not held by their turns.
      const page = echo(pool, 'page').then((v) => answered.push(v));
      running.release();
      await Promise.all([...tasks, page]);
      expect(answered.filter((v) => v !== 'page')).toEqual(['a1', 'b1', 'c1', 'a2', 'a3']);
    } finally {
      await pool.close();
    }
  });

  it('refuses a copilot’s task beyond its waiting limit at once (429), and no other copilot’s', async () => {
    const pool = new TaskThreads({ threads: 1, script: standIn });
    try {
      const running = await blocking(pool, 'copilot-a');
      const waiting = Array.from({ length: TASKS_WAITING_PER_TENANT }, (_, i) => echo(pool, `a${i}`, undefined, 'copilot-a'));
      const refused = await rejection(pool.fixesOnThread('copilot-a', json('{}'), 'json'));
      expect(refused).toSatisfy(isAppError);
      expect(refused).toMatchObject({ code: 'quota_exceeded', status: 429, details: { waiting: TASKS_WAITING_PER_TENANT } });
      expect(pool.stats()).toMatchObject({ queued: TASKS_WAITING_PER_TENANT, refused: 1 });
      const other = echo(pool, 'b', undefined, 'copilot-b');
      running.release();
      expect(await Promise.all(waiting)).toEqual(waiting.map((_, i) => `a${i}`));
      expect(await other).toBe('b');
    } finally {
      await pool.close();
    }
  });

  it('ready() resolves when a thread runs, and fails when the thread program cannot load', async () => {
    const pool = new TaskThreads({ threads: 1, script: WORKER });
    await pool.ready();
    await pool.close();
    const broken = new TaskThreads({ threads: 1, script: pathToFileURL(path.join(dir, 'no-such-worker.mjs')) });
    const error = await rejection(broken.ready());
    expect(error).toBeInstanceOf(TaskThreadError);
    expect(error).toMatchObject({ reason: 'crashed' });
    await broken.close();
  });

  it('a thread that dies fails only its own task; the next task gets a new thread', async () => {
    const pool = new TaskThreads({ threads: 1, script: standIn });
    try {
      const [died, after] = await Promise.allSettled([echo(pool, 'die'), echo(pool, 'after')]);
      expect(died.status).toBe('rejected');
      expect((died as PromiseRejectedResult).reason).toBeInstanceOf(TaskThreadError);
      expect((died as PromiseRejectedResult).reason).toMatchObject({ reason: 'crashed', message: expect.stringMatching(/code:? 3/) });
      expect(after).toEqual({ status: 'fulfilled', value: 'after' });
    } finally {
      await pool.close();
    }
  });

  it('close() fails the running, the queued and any later task with "stopped"', async () => {
    const pool = new TaskThreads({ threads: 1, script: standIn });
    const running = await blocking(pool);
    const queued = rejection(echo(pool, 'queued'));
    expect(pool.stats()).toMatchObject({ threads: 1, busy: 1, queued: 1 });
    await pool.close();
    expect(await running.done).toMatchObject({ reason: 'stopped' });
    expect(await queued).toMatchObject({ reason: 'stopped' });
    expect(pool.stats()).toMatchObject({ threads: 0, busy: 0, queued: 0 });
    expect(await rejection(echo(pool, 'later'))).toMatchObject({ reason: 'stopped' });
  });

  it('keeps a fixed number of threads, started on first use', async () => {
    const pool = new TaskThreads({ threads: 2, script: standIn });
    try {
      expect(pool.stats()).toMatchObject({ threads: 0, busy: 0, queued: 0 });
      const results = await Promise.all(['a', 'b', 'c', 'd', 'e'].map((value) => echo(pool, value)));
      expect(results).toEqual(['a', 'b', 'c', 'd', 'e']);
      expect(pool.stats()).toMatchObject({ threads: 2, busy: 0, queued: 0 });
    } finally {
      await pool.close();
    }
  });

  it('bounds the bytes waiting in its queue: a task over the bound fails at once with "busy"', async () => {
    const pool = new TaskThreads({ threads: 1, script: standIn });
    try {
      const running = await blocking(pool);
      // The queue is empty: a task is taken whatever its size.
      const big = echo(pool, 'big', MAX_QUEUED_BYTES);
      const over = await rejection(echo(pool, 'one byte more', 1));
      expect(over).toBeInstanceOf(TaskThreadError);
      expect(over).toMatchObject({ reason: 'busy' });
      running.release();
      expect(await running.done).toBe('released');
      expect(await big).toBe('big');
      // The bound counts what waits, not what ran: room again.
      expect(await echo(pool, 'fits', 1)).toBe('fits');
    } finally {
      await pool.close();
    }
  });

  it('a validation refused for a full queue is a 503 service_unavailable, and not cached', async () => {
    const pool = new TaskThreads({ threads: 1, script: standIn });
    const cache = createValidationCache({ maxBytes: 64 * 1024 * 1024 });
    const t = await buildTestApp('sqlite');
    // A second app on the same database whose task threads are the stand-in's.
    const app = await t.anotherApp({ taskThreads: pool });
    try {
      const running = await blocking(pool);
      const big = echo(pool, 'big', MAX_QUEUED_BYTES).catch((err: unknown) => err);
      const refused = await rejection(cache.answer(operation(7), {}, (src, opts) => pool.answerOnThread('c', src, opts)));
      expect(refused).toSatisfy(isAppError);
      expect(refused).toMatchObject({ code: 'service_unavailable', status: 503 });
      expect(cache.stats().entries).toBe(0);
      // Over HTTP: the contract's error body, and the previous document kept.
      const created = await app.inject({ method: 'POST', url: '/backend/api/copilots', headers: { authorization: t.admin }, payload: { name: 'busy' } });
      const id = created.json<{ id: string }>().id;
      const put = await app.inject({
        method: 'PUT',
        url: swaggerPath(id),
        headers: { authorization: t.admin, 'content-type': 'application/json' },
        payload: operation(8).bytes,
      });
      expect(put.statusCode).toBe(503);
      expect(put.json()).toEqual({ error: 'service_unavailable', message: expect.any(String) });
      expect((await app.inject({ method: 'GET', url: copilotPath(id), headers: { authorization: t.admin } })).json()).toMatchObject({ swagger_url: '' });
      running.release();
      await running.done;
      await big;
      // Room again: the same document is validated (by the stand-in, which echoes its input).
      expect(await echo(pool, 'fits', 1)).toBe('fits');
    } finally {
      await app.close();
      await pool.close();
      await t.close();
    }
  });

  it('a thread gives its memory back once a large task has answered, not only when its next task needs it', async () => {
    // A process of its own, so that its resident memory is the thread's and little else.
    const script = `
      const { createTaskThreads } = await import(${JSON.stringify(builtModule('threads/task-threads.js').href)});
      const mib = (bytes) => Math.round(bytes / 1048576);
      const taskThreads = createTaskThreads({ threads: 1 });
      await taskThreads.ready();
      const atRest = process.memoryUsage().rss;
      const doc = Buffer.from(${JSON.stringify(containerDense(5_000_000))});
      const text = await taskThreads.run('validate', [{ bytes: doc, fileName: 'dense.json' }, {}]);
      const peak = process.resourceUsage().maxRSS * 1024;
      let now = process.memoryUsage().rss;
      for (let waited = 0; waited < 5000 && now > atRest + (peak - atRest) / 2; waited += 100) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        now = process.memoryUsage().rss;
      }
      process.stdout.write(JSON.stringify({ endpoints: JSON.parse(text).all_endpoints.length, atRest: mib(atRest), peak: mib(peak), now: mib(now) }));
      await taskThreads.close();
    `;
    const file = path.join(dir, 'memory-back.mjs');
    writeFileSync(file, script);
    const { code, stdout, stderr } = await runNodeScript(file);
    expect(code, stderr).toBe(0);
    const memory = JSON.parse(stdout) as { endpoints: number; atRest: number; peak: number; now: number };
    expect(memory.endpoints).toBe(1);
    // The document's parse took hundreds of MiB on the thread; within 5 s at least half of it is back.
    expect(memory.peak - memory.atRest, stdout).toBeGreaterThan(200);
    expect(memory.now, stdout).toBeLessThanOrEqual(memory.atRest + (memory.peak - memory.atRest) / 2);
  });

  it('idle threads do not keep the process alive', async () => {
    // A process that validates on a thread and never closes the threads still exits.
    const script = `
      const { createTaskThreads } = await import(${JSON.stringify(builtModule('threads/task-threads.js').href)});
      const taskThreads = createTaskThreads({ threads: 2 });
      const text = await taskThreads.run('validate', [{ bytes: Buffer.from('{"openapi":"3.0.3","paths":{}}'), fileName: 'a.json' }, {}]);
      process.stdout.write(text);
    `;
    const file = path.join(dir, 'never-closes.mjs');
    writeFileSync(file, script);
    const { code, stdout, stderr } = await runNodeScript(file);
    expect(code, stderr).toBe(0);
    expect(JSON.parse(stdout)).toMatchObject({ all_endpoints: [] });
  });
});

describe('task threads: the service stays responsive', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp('sqlite');
  });
  afterAll(() => t.close());

  it('answers other requests while a slow document is being validated', async () => {
    const id = (await createCopilot(t, { name: 'slow' })).id;
    let uploaded = false;
    const upload = t.app
      .inject({
        method: 'PUT',
        url: swaggerPath(id),
        headers: { authorization: t.admin, 'content-type': 'application/json' },
        payload: containerDense(3_000_000),
      })
      .finally(() => (uploaded = true));
    // Wait (by turns of the event loop, not by time) until the document is on a thread.
    for (let turn = 0; t.taskThreads.stats().busy === 0; turn++) {
      expect(uploaded, 'the upload finished without a task thread').toBe(false);
      expect(turn).toBeLessThan(100_000);
      await new Promise((resolve) => setImmediate(resolve));
    }
    const health = await t.app.inject({ method: 'GET', url: '/healthz' });
    expect(health.statusCode).toBe(200);
    expect(uploaded, 'the upload should still be validating').toBe(false);
    expect((await upload).statusCode).toBe(200);
  });
});
