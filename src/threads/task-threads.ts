/**
 * Threads for the CPU work a client can make long (tasks.ts): validating an uploaded or
 * fetched API description, extracting a fetched page. On the event loop a 25 MiB
 * document of millions of empty arrays holds every other request for seconds; on a task
 * thread it delays only its own answer.
 *
 * A piscina pool of a fixed number of threads, started on first use and kept (their code
 * stays compiled); one task per thread at a time, the rest queued in order. A copilot's
 * documents (validations, tool definitions, fixes, changes between versions: the tasks a
 * client can ask for again and again) take fair turns among copilots first (fair-turns.ts):
 * a copilot runs at most one task less than there are threads (at least one), copilots
 * waiting are served round robin, and a copilot with TASKS_WAITING_PER_TENANT waiting has
 * one more refused (429). So one copilot's flood of large documents leaves another's tasks a
 * thread (TASK_THREADS is at least 2 unless set), or with one thread delays each of them by one
 * task at most. A thread that
 * dies fails its own task only and is replaced for the next one. Idle threads do not keep
 * the process alive (piscina unrefs them). What piscina does not bound is the memory of
 * its queue: a counter around `run` does. Once a task waits for a thread, a new task whose
 * input would take the input of the tasks not yet answered past MAX_QUEUED_BYTES fails at
 * once with `busy`; a task is always taken when nothing waits.
 *
 * Memory: each thread parses one document at a time within the parsers' limits, so the
 * peak grows with the number of threads; a thread collects a large task's garbage before it
 * answers (worker.ts). No `resourceLimits`: a worker that reaches a heap
 * limit can still abort the whole process in Node (nodejs/node#47224, seen here with a
 * document of millions of empty objects), so the limits would promise a containment they
 * do not give.
 */
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import { AppError } from '../errors.js';
import { FairTurns, TooManyWaiting } from '../fair-turns.js';
import type { KeptChanges } from '../domain/api-changes/diff.js';
import type { ToolPlatform } from '../domain/validator/wire-types.js';
import type { DocumentFormat, DocumentSource, ParseOptions, RenderedAnswer } from '../domain/validator/index.js';
import { unpackPassages, type PassageList } from '../domain/knowledgebase/passages.js';
import type { CrawledPage, SitemapRead } from '../domain/knowledgebase/crawl-page.js';
import type { CrawlScope } from '../domain/knowledgebase/crawl-scope.js';
import type { IndexTotals, MergedSegment, MergeInput, ScoredPassage } from '../domain/knowledgebase/search-index.js';
import { asBuffer, decodeFailure, ownsItsBuffer, type TaskName, type Tasks } from './tasks.js';
import type { TaskAnswer, TaskRequest } from './worker.js';

export class TaskThreadError extends Error {
  override name = 'TaskThreadError';
  constructor(
    readonly reason: 'crashed' | 'stopped' | 'busy',
    message: string,
  ) {
    super(message);
  }
}

export interface TaskThreadsOptions {
  /** Threads in the pool (TASK_THREADS). */
  threads: number;
  /** The threads' program: the compiled worker.js beside this module unless given. */
  script?: URL;
  /** Input bytes the tasks not yet answered may hold while some wait (MAX_QUEUED_BYTES unless given). */
  maxQueuedBytes?: number;
}

/** Input bytes the tasks not yet answered may hold while tasks wait for a thread. */
export const MAX_QUEUED_BYTES = 256 * 1024 * 1024;

/** A copilot's tasks waiting for their turn; one more is refused (429). */
export const TASKS_WAITING_PER_TENANT = 8;

const stopped = () => new TaskThreadError('stopped', 'The task threads were stopped.');

/** Built once per process by its composition root (the server, the tests' harness); closed with it. */
export function createTaskThreads(options: TaskThreadsOptions): TaskThreads {
  return new TaskThreads(options);
}

export class TaskThreads {
  private pool: Piscina<TaskRequest, TaskAnswer> | null = null;
  private closed = false;
  /** Tasks sent to the pool and not yet answered (running or waiting), and their input bytes. */
  private pending = 0;
  private pendingBytes = 0;
  /** Threads in the pool: at least one. */
  private readonly threads: number;
  /** The turns of the tasks that name a tenant (a copilot), one slot per thread. */
  private readonly turns: FairTurns;

  constructor(private readonly options: TaskThreadsOptions) {
    this.threads = Math.max(1, options.threads);
    this.turns = new FairTurns(this.threads, Math.max(1, this.threads - 1), TASKS_WAITING_PER_TENANT);
  }

  /** A pool of its own running the same program (its threads start at its first task). */
  alike(threads: number): TaskThreads {
    return new TaskThreads({ ...this.options, threads });
  }

  /** Resolves once a thread has run a task: the service checks its threads at start. */
  async ready(): Promise<void> {
    if ((await this.run('ping', [])) !== 'pong') throw new Error('The task thread answered the wrong program.');
  }

  /**
   * Runs a task on a thread. `bytes`: the size of its input, counted against the queue's
   * bound; `transfer`: buffers of the arguments that move to the thread instead of being
   * copied (unusable here once the task is sent); `tenant`: the copilot whose turn it waits
   * for (rejects with TooManyWaiting when that copilot has too many waiting).
   */
  async run<K extends TaskName>(
    task: K,
    args: Parameters<Tasks[K]>,
    opts: { bytes?: number; transfer?: ArrayBuffer[]; tenant?: string } = {},
  ): Promise<ReturnType<Tasks[K]>> {
    if (this.closed) throw stopped();
    const pool = this.start();
    const bytes = opts.bytes ?? 0;
    if (this.queued(pool) > 0 && this.pendingBytes + bytes > (this.options.maxQueuedBytes ?? MAX_QUEUED_BYTES)) {
      throw new TaskThreadError('busy', 'The task threads have too much work queued.');
    }
    this.pending++;
    this.pendingBytes += bytes;
    let answer: TaskAnswer;
    try {
      const onThread = () => pool.run({ task, args }, { transferList: opts.transfer ?? [] });
      answer = await (opts.tenant === undefined ? onThread() : this.turns.run(opts.tenant, onThread));
    } catch (err) {
      if (err instanceof TooManyWaiting) throw err;
      // The worker never throws (worker.ts): this is the pool's own failure.
      throw this.closed ? stopped() : new TaskThreadError('crashed', `The task thread failed: ${(err as Error).message}`);
    } finally {
      this.pending--;
      this.pendingBytes -= bytes;
    }
    if (!answer.ok) throw decodeFailure(answer.failure);
    return answer.value as ReturnType<Tasks[K]>;
  }

  /** Tasks waiting: for a copilot's turn, or for a thread. */
  private queued(pool: Piscina<TaskRequest, TaskAnswer>): number {
    return pool.queueSize + this.turns.stats().waiting;
  }

  /**
   * Threads running, threads busy with a task, tasks waiting (for a copilot's turn or a thread),
   * tasks refused since the start because their copilot had too many waiting, and how long
   * tasks waited for a thread once their turn came (ms, since the start).
   */
  stats(): { threads: number; busy: number; queued: number; refused: number; waitP50Ms: number; waitP99Ms: number } {
    const refused = this.turns.stats().refused;
    if (!this.pool) return { threads: 0, busy: 0, queued: 0, refused, waitP50Ms: 0, waitP99Ms: 0 };
    const threads = this.pool.threads.length;
    const queued = this.queued(this.pool);
    const wait = this.pool.histogram.waitTime;
    return {
      threads,
      busy: Math.max(0, Math.min(threads, this.pending - queued)),
      queued,
      refused,
      waitP50Ms: Number.isFinite(wait.p50) ? wait.p50 : 0,
      waitP99Ms: Number.isFinite(wait.p99) ? wait.p99 : 0,
    };
  }

  /** Stops every thread; their tasks, the queued ones and any later one fail with `stopped`. */
  async close(): Promise<void> {
    this.closed = true;
    const pool = this.pool;
    this.pool = null;
    await pool?.destroy();
  }

  /**
   * A validation's answer as UTF-8 bytes, rendered and encoded on a task thread and moved
   * back (never copied), with its readiness summary: what the validation cache keeps. The document's bytes are copied
   * to the thread. `tenant`: the copilot whose turn it takes (here and below).
   */
  answerOnThread(tenant: string, src: DocumentSource, opts: ParseOptions): Promise<RenderedAnswer<Buffer>> {
    return this.answerOn(tenant, src, opts, []);
  }

  /**
   * The same, the document's bytes moved to the thread rather than copied when they are the
   * whole of their buffer (a document read for this validation only): `src.bytes` is empty afterwards.
   */
  answerOnThreadMovingBytes(tenant: string, src: DocumentSource, opts: ParseOptions): Promise<RenderedAnswer<Buffer>> {
    return this.answerOn(tenant, src, opts, movable(src.bytes));
  }

  /** The changes between two accepted versions of an API description (the kept ones, and their counts), computed on a task thread. */
  changesOnThread(tenant: string, before: DocumentSource, after: DocumentSource): Promise<KeptChanges> {
    return this.runForRequest('changes', [before, after], { bytes: before.bytes.length + after.bytes.length, tenant });
  }

  /** The tool definitions of an accepted API description, built and written (JSON of their array) on a task thread; the bytes are moved back. */
  async toolsOnThread(tenant: string, src: DocumentSource, platform: ToolPlatform, maxChars: number): Promise<Buffer> {
    return asBuffer(await this.runForRequest('tools', [src, platform, maxChars], { bytes: src.bytes.length, tenant }));
  }

  /** The fixes of an accepted API description as an OpenAPI Overlay, computed and written in `format` on a task thread; the bytes are moved back. */
  async fixesOnThread(tenant: string, src: DocumentSource, format: DocumentFormat): Promise<Buffer> {
    return asBuffer(await this.runForRequest('fixes', [src, format], { bytes: src.bytes.length, tenant }));
  }

  /**
   * A task for a request: a full queue is the service's 503 (the service is busy `doing`), and
   * a copilot with too many tasks waiting its 429, not failures.
   */
  private async runForRequest<K extends TaskName>(
    task: K,
    args: Parameters<Tasks[K]>,
    opts: { bytes: number; transfer?: ArrayBuffer[]; tenant?: string },
    doing = 'with other documents',
  ): Promise<ReturnType<Tasks[K]>> {
    try {
      return await this.run(task, args, opts);
    } catch (err) {
      if (err instanceof TaskThreadError && err.reason === 'busy') {
        throw new AppError('service_unavailable', `The service is busy ${doing}; try again shortly.`);
      }
      if (err instanceof TooManyWaiting) {
        throw new AppError(
          'quota_exceeded',
          `This copilot has ${err.waiting} API descriptions waiting to be read already, its limit; try again when they have answered.`,
          { waiting: err.waiting },
        );
      }
      throw err;
    }
  }

  /**
   * A fetched page's passages, extracted on a task thread: the body moves there (the caller
   * does not use it again) and the passages come back packed, decoded as they are stored.
   */
  async passagesOnThread(body: Buffer, contentType: string | null, options: { redact?: boolean } = {}): Promise<PassageList> {
    return unpackPassages(await this.run('passages', [body, contentType, options], { bytes: body.length, transfer: movable(body) }));
  }

  /**
   * A fetched page of a crawl read on a task thread (the body moves there): its passages, ready
   * to store (null with the reason when it has none), and its links within the crawl's scope.
   */
  async crawlPageOnThread(
    body: Buffer,
    contentType: string | null,
    finalUrl: string,
    scope: CrawlScope,
    options: { redact?: boolean } = {},
  ): Promise<Omit<CrawledPage, 'passages'> & { passages: PassageList | null }> {
    const page = await this.run('crawlPage', [body, contentType, finalUrl, scope, options], { bytes: body.length, transfer: movable(body) });
    return { ...page, passages: page.passages === null ? null : unpackPassages(page.passages) };
  }

  /**
   * A knowledge-base search's scoring (search-index.ts `scorePassages`) on a task thread: a word
   * most of a million passages hold is a loop over a million postings, which on the event loop
   * would hold every other request. The postings are copied there.
   */
  scoreOnThread(blobsByTerm: Uint8Array[][], totals: IndexTotals, limit: number, excluded: Int32Array): Promise<ScoredPassage[]> {
    let bytes = excluded.byteLength;
    for (const blobs of blobsByTerm) for (const b of blobs) bytes += b.length;
    return this.runForRequest('scorePassages', [blobsByTerm, totals, limit, excluded], { bytes }, 'with other searches');
  }

  /** A merge of a bot's index segments (search-index.ts `mergeSegments`) on a task thread; the blocks are copied there. */
  mergeSegmentsOnThread(inputs: MergeInput[], excluded: Int32Array): Promise<MergedSegment> {
    let bytes = excluded.byteLength;
    for (const input of inputs) for (const b of input.blocks) bytes += b.length;
    return this.run('mergeSegments', [inputs, excluded], { bytes });
  }

  /** A fetched sitemap read on a task thread (the body moves there). */
  sitemapOnThread(body: Buffer, scope: CrawlScope, maxBytes: number): Promise<SitemapRead> {
    return this.run('sitemap', [body, scope, maxBytes], { bytes: body.length, transfer: movable(body) });
  }

  private async answerOn(tenant: string, src: DocumentSource, opts: ParseOptions, transfer: ArrayBuffer[]): Promise<RenderedAnswer<Buffer>> {
    const { answer, readiness } = await this.runForRequest('answer', [src, opts], { bytes: src.bytes.length, transfer, tenant }, 'validating other documents');
    return { answer: asBuffer(answer), readiness };
  }

  private start(): Piscina<TaskRequest, TaskAnswer> {
    if (this.pool) return this.pool;
    const pool = new Piscina<TaskRequest, TaskAnswer>({
      filename: fileURLToPath(this.options.script ?? new URL('./worker.js', import.meta.url)),
      // A fixed pool: the minimum keeps the count, and a thread that dies is replaced at once.
      minThreads: this.threads,
      maxThreads: this.threads,
      idleTimeout: Infinity,
      concurrentTasksPerWorker: 1,
    });
    // A thread that fails with no task (a program that cannot load) is reported to the task
    // sent to it or to the next one; piscina would otherwise throw the event.
    pool.on('error', () => undefined);
    this.pool = pool;
    return pool;
  }
}

/** The buffer of bytes that are the whole of it (read for this task only): it can move to the thread. */
const movable = (bytes: Uint8Array): ArrayBuffer[] => (ownsItsBuffer(bytes) ? [bytes.buffer as ArrayBuffer] : []);
