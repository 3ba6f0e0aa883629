/**
 * Threads for the CPU work a client can make long (tasks.ts): validating an uploaded or
 * fetched API description, extracting a fetched page. On the event loop a 25 MiB
 * document of millions of empty arrays holds every other request for seconds; on a task
 * thread it delays only its own answer.
 *
 * A fixed number of threads, started on first use and kept (their code stays compiled);
 * one task per thread at a time, the rest queued in order. A thread that dies fails its
 * own task only and is replaced for the next one. Idle threads do not keep the process
 * alive.
 *
 * No `resourceLimits`: memory stays bounded by the parsers' own limits, as on the main
 * thread. A worker that reaches a heap limit can still abort the whole process in Node
 * (nodejs/node#47224, seen here with a document of millions of empty objects), so the
 * limits would promise a containment they do not give.
 */
import { Worker } from 'node:worker_threads';
import { defaultTaskThreads } from '../config.js';
import type { DocumentSource, ParseOptions } from '../domain/validator/index.js';
import { decodeFailure, type TaskName, type Tasks } from './tasks.js';
import type { TaskAnswer, TaskRequest } from './worker.js';

export class TaskThreadError extends Error {
  override name = 'TaskThreadError';
  constructor(
    readonly reason: 'crashed' | 'stopped',
    message: string,
  ) {
    super(message);
  }
}

export interface TaskThreadsOptions {
  threads: number;
  /** The threads' program: worker.ts (compiled) unless given. */
  script?: URL;
}

interface Job {
  request: TaskRequest;
  resolve: (value: unknown) => void;
  reject: (error: Error) => void;
}

interface Thread {
  worker: Worker;
  job: Job | null;
  stopping: boolean;
}

// Worker threads run JavaScript: the compiled worker beside this file. Run from the
// TypeScript sources (the tests, which build first), the threads run the build of them.
function workerScript(): URL {
  const here = import.meta.url;
  return new URL(here.endsWith('.ts') ? here.replace(/\/src\/threads\/[^/]+\.ts$/, '/dist/threads/worker.js') : './worker.js', here);
}

export class TaskThreads {
  private readonly threads = new Set<Thread>();
  private readonly queue: Job[] = [];

  constructor(private options: TaskThreadsOptions) {}

  /** New options for the threads started from now on (the running ones are stopped). */
  async configure(options: TaskThreadsOptions): Promise<void> {
    this.options = options;
    await this.close();
  }

  run<K extends TaskName>(task: K, ...args: Parameters<Tasks[K]>): Promise<ReturnType<Tasks[K]>> {
    return new Promise((resolve, reject) => {
      this.queue.push({ request: { task, args }, resolve: resolve as (value: unknown) => void, reject });
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
    for (const job of this.queue.splice(0)) job.reject(new TaskThreadError('stopped', 'The task threads were stopped.'));
    await Promise.all(
      [...this.threads].map((thread) => {
        thread.stopping = true;
        return thread.worker.terminate();
      }),
    );
  }

  private dispatch(): void {
    while (this.queue.length > 0) {
      let thread = [...this.threads].find((t) => t.job === null && !t.stopping);
      if (!thread) {
        if (this.threads.size >= Math.max(1, this.options.threads)) return;
        thread = this.start();
      }
      const job = this.queue.shift()!;
      thread.job = job;
      thread.worker.ref();
      thread.worker.postMessage(job.request);
    }
  }

  private start(): Thread {
    const worker = new Worker(this.options.script ?? workerScript());
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
    worker.on('error', (err) => this.retire(thread, new TaskThreadError('crashed', `The task thread failed: ${err.message}`)));
    worker.on('exit', (code) => this.retire(thread, new TaskThreadError('crashed', `The task thread exited with code ${code}.`)));
    return thread;
  }

  private retire(thread: Thread, error: TaskThreadError): void {
    if (!this.threads.delete(thread)) return;
    const job = thread.job;
    thread.job = null;
    job?.reject(thread.stopping ? new TaskThreadError('stopped', 'The task threads were stopped.') : error);
    this.dispatch();
  }
}

/** The process's task threads (TASK_THREADS; configured by the server at start). */
export const taskThreads = new TaskThreads({ threads: defaultTaskThreads() });

/** A validation's JSON text, rendered on a task thread (the validator's `renderFresh`). */
export function renderOnThread(src: DocumentSource, opts: ParseOptions): Promise<string> {
  return taskThreads.run('validate', src, opts);
}

/** A fetched page's passages, extracted on a task thread. */
export function passagesOnThread(body: Buffer, contentType: string | null): Promise<string[]> {
  return taskThreads.run('passages', body, contentType);
}
