/**
 * Threads for the CPU work a client can make long (tasks.ts): validating an uploaded or
 * fetched API description, extracting a fetched page. On the event loop a 25 MiB
 * document of millions of empty arrays holds every other request for seconds; on a task
 * thread it delays only its own answer.
 *
 * A fixed number of threads, started on first use and kept (their code stays compiled);
 * one task per thread at a time, the rest queued in order. A thread that dies fails its
 * own task only and is replaced for the next one. Idle threads do not keep the process
 * alive. The queue holds at most MAX_QUEUED_BYTES of input (a task that would go over it
 * fails at once with `busy`; a task is always taken when nothing waits).
 *
 * Memory: each thread parses one document at a time within the parsers' limits, so the
 * peak grows with the number of threads. No `resourceLimits`: a worker that reaches a heap
 * limit can still abort the whole process in Node (nodejs/node#47224, seen here with a
 * document of millions of empty objects), so the limits would promise a containment they
 * do not give.
 */
import { Worker } from 'node:worker_threads';
import { defaultTaskThreads } from '../config.js';
import { AppError } from '../errors.js';
import type { DocumentSource, ParseOptions } from '../domain/validator/index.js';
import { unpackPassages, type PassageList } from '../domain/knowledgebase/passages.js';
import { decodeFailure, type TaskName, type Tasks } from './tasks.js';
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
  threads: number;
  /** The threads' program: the compiled worker.js beside this module unless given. */
  script?: URL;
}

/** Input bytes the queue may hold (the tasks waiting for a thread). */
export const MAX_QUEUED_BYTES = 256 * 1024 * 1024;

interface Job {
  request: TaskRequest;
  bytes: number;
  transfer: ArrayBuffer[];
  resolve: (value: unknown) => void;
  reject: (error: Error) => void;
}

interface Thread {
  worker: Worker;
  job: Job | null;
  stopping: boolean;
}

const stopped = () => new TaskThreadError('stopped', 'The task threads were stopped.');

export class TaskThreads {
  private readonly threads = new Set<Thread>();
  private readonly queue: Job[] = [];
  private queuedBytes = 0;

  constructor(private options: TaskThreadsOptions) {}

  /** Options for the threads started from now on; running threads and tasks are kept. */
  configure(options: Partial<TaskThreadsOptions>): void {
    this.options = { ...this.options, ...options };
  }

  /** Resolves once a thread has run a task: the service checks its threads at start. */
  async ready(): Promise<void> {
    if ((await this.run('ping', [])) !== 'pong') throw new Error('The task thread answered the wrong program.');
  }

  /**
   * Runs a task on a thread. `bytes`: the size of its input, counted against the queue's
   * bound; `transfer`: buffers of the arguments that move to the thread instead of being
   * copied (unusable here once the task is sent).
   */
  run<K extends TaskName>(task: K, args: Parameters<Tasks[K]>, opts: { bytes?: number; transfer?: ArrayBuffer[] } = {}): Promise<ReturnType<Tasks[K]>> {
    return new Promise((resolve, reject) => {
      const bytes = opts.bytes ?? 0;
      if (this.queue.length > 0 && this.queuedBytes + bytes > MAX_QUEUED_BYTES) {
        reject(new TaskThreadError('busy', 'The task threads have too much work queued.'));
        return;
      }
      this.queue.push({ request: { task, args }, bytes, transfer: opts.transfer ?? [], resolve: resolve as (value: unknown) => void, reject });
      this.queuedBytes += bytes;
      this.dispatch();
    });
  }

  /** Threads running, threads busy with a task, tasks waiting for a thread. */
  stats(): { threads: number; busy: number; queued: number } {
    const busy = [...this.threads].filter((t) => t.job !== null).length;
    return { threads: this.threads.size, busy, queued: this.queue.length };
  }

  /** Stops every thread; their tasks and the queued ones fail with `stopped`. */
  async close(): Promise<void> {
    for (const job of this.take(this.queue.length)) job.reject(stopped());
    await Promise.all(
      [...this.threads].map((thread) => {
        thread.stopping = true;
        return thread.worker.terminate();
      }),
    );
  }

  private take(count: number): Job[] {
    const jobs = this.queue.splice(0, count);
    for (const job of jobs) this.queuedBytes -= job.bytes;
    return jobs;
  }

  private dispatch(): void {
    while (this.queue.length > 0) {
      let thread = [...this.threads].find((t) => t.job === null && !t.stopping);
      if (!thread) {
        if (this.threads.size >= Math.max(1, this.options.threads)) return;
        thread = this.start();
      }
      const [job] = this.take(1);
      try {
        thread.worker.postMessage(job!.request, job!.transfer);
      } catch (err) {
        job!.reject(err as Error); // not cloneable: this task only
        continue;
      }
      thread.job = job!;
      thread.worker.ref();
    }
  }

  private start(): Thread {
    const worker = new Worker(this.options.script ?? new URL('./worker.js', import.meta.url));
    const thread: Thread = { worker, job: null, stopping: false };
    this.threads.add(thread);
    worker.unref();
    worker.on('message', (answer: TaskAnswer) => {
      const job = thread.job;
      thread.job = null;
      worker.unref();
      if (answer.ok) job?.resolve(answer.value);
      else job?.reject(decodeFailure(answer.failure));
      this.dispatch();
    });
    // An answer that cannot be read: the task fails and the thread is replaced.
    worker.on('messageerror', (err) => {
      this.retire(thread, new TaskThreadError('crashed', `The task thread's answer could not be read: ${err.message}`));
      void worker.terminate();
    });
    worker.on('error', (err) => this.retire(thread, new TaskThreadError('crashed', `The task thread failed: ${err.message}`)));
    worker.on('exit', (code) => this.retire(thread, new TaskThreadError('crashed', `The task thread exited with code ${code}.`)));
    return thread;
  }

  private retire(thread: Thread, error: TaskThreadError): void {
    if (!this.threads.delete(thread)) return;
    const job = thread.job;
    thread.job = null;
    job?.reject(thread.stopping ? stopped() : error);
    this.dispatch();
  }
}

/** The process's task threads (TASK_THREADS; configured by the server at start). */
export const taskThreads = new TaskThreads({ threads: defaultTaskThreads() });

/**
 * A validation's answer as UTF-8 bytes, rendered and encoded on a task thread and moved
 * back (never copied): what the validation cache keeps. The document's bytes are copied
 * to the thread.
 */
export async function answerOnThread(src: DocumentSource, opts: ParseOptions): Promise<Buffer> {
  return asBuffer(await validateOn('answer', src, opts, []));
}

/**
 * The same, the document's bytes moved to the thread rather than copied when they are the
 * whole of their buffer (a document read for this validation only): `src.bytes` is empty afterwards.
 */
export async function answerOnThreadMovingBytes(src: DocumentSource, opts: ParseOptions): Promise<Buffer> {
  return asBuffer(await validateOn('answer', src, opts, movable(src)));
}

function movable(src: Pick<DocumentSource, 'bytes'>): ArrayBuffer[] {
  const { buffer, byteOffset, byteLength } = src.bytes;
  const whole = buffer instanceof ArrayBuffer && byteOffset === 0 && byteLength === buffer.byteLength;
  return whole ? [buffer] : [];
}

const asBuffer = (bytes: Uint8Array): Buffer => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);

function validateOn<T extends 'validate' | 'answer'>(task: T, src: DocumentSource, opts: ParseOptions, transfer: ArrayBuffer[]): Promise<ReturnType<Tasks[T]>> {
  return taskThreads.run(task, [src, opts] as Parameters<Tasks[T]>, { bytes: src.bytes.length, transfer }).catch((err: unknown) => {
    if (err instanceof TaskThreadError && err.reason === 'busy') {
      throw new AppError('service_unavailable', 'The service is busy validating other documents; try again shortly.');
    }
    throw err;
  });
}

/**
 * A fetched page's passages, extracted on a task thread: the body moves there (the caller
 * does not use it again) and the passages come back packed, decoded as they are stored.
 */
export async function passagesOnThread(body: Buffer, contentType: string | null): Promise<PassageList> {
  return unpackPassages(await taskThreads.run('passages', [body, contentType], { bytes: body.length, transfer: movable({ bytes: body }) }));
}
