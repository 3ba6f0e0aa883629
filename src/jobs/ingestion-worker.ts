import { randomUUID } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import { ExtractError } from '../domain/knowledgebase/extract.js';
import { formatMicros, nowTimestamp } from '../domain/ids.js';
import { FetchError, fetchGuarded, type FetchPolicy } from '../net/guarded-fetch.js';
import type { Storage } from '../storage/database.js';
import * as kb from '../storage/knowledge-base.repository.js';
import type { KbLinkRow } from '../storage/schema.js';
import { passagesOnThread, TaskThreadError } from '../threads/task-threads.js';

export interface WorkerOptions {
  /** Concurrent fetches in this process (KB_WORKERS); 0 disables the worker. */
  concurrency: number;
  pollIntervalMs: number;
  fetchPolicy: FetchPolicy;
  /** Attempts before a link is marked failed (transient errors only are retried). */
  maxAttempts?: number;
  /** First retry delay; doubles per attempt. */
  backoffMs?: number;
  logger?: Pick<FastifyBaseLogger, 'info' | 'warn' | 'error'>;
}

// Stale search-index entries removed per idle step: each ~55 µs of synchronous SQLite work,
// so a step holds the event loop ~3 ms (200 made list requests wait ~17 ms at the median).
const SWEEP_BATCH = 50;

const ACCEPT = 'text/html, application/xhtml+xml;q=0.9, text/markdown;q=0.9, text/plain;q=0.8, */*;q=0.1';

const inMicros = (ms: number) => formatMicros(Math.floor((performance.timeOrigin + performance.now() + ms) * 1000));

/** Transient failures are retried with backoff; anything the page itself decides is final. */
function isTransient(err: unknown): boolean {
  // The service's own threads (busy, or a thread lost), not the page: try again later.
  if (err instanceof TaskThreadError) return true;
  if (err instanceof FetchError) {
    if (err.kind === 'timeout' || err.kind === 'network') return true;
    return err.kind === 'http_status' && err.status !== undefined && (err.status >= 500 || err.status === 429 || err.status === 408);
  }
  return false;
}

function describe(err: unknown): string {
  if (err instanceof FetchError || err instanceof ExtractError) return err.message;
  return 'The page could not be processed.';
}

/**
 * The knowledge-base ingestion worker. Jobs are the pending links in the database:
 * each loop claims one under a lease (so a job cut off by a crash is taken again once
 * its lease runs out, and with several instances each job runs once), fetches the
 * page under the guarded-fetch rules, extracts its text, splits it into passages and
 * stores them in one transaction.
 */
export class IngestionWorker {
  private readonly owner = randomUUID();
  private readonly loops: Promise<void>[] = [];
  private stopping = false;
  private wake: (() => void) | null = null;
  private readonly abort = new AbortController();
  private readonly maxAttempts: number;
  private readonly backoffMs: number;
  private readonly leaseMs: number;

  constructor(
    private readonly storage: Storage,
    private readonly options: WorkerOptions,
  ) {
    this.maxAttempts = options.maxAttempts ?? 3;
    this.backoffMs = options.backoffMs ?? 2000;
    // Long enough for one fetch (bounded by its deadline) plus extracting and storing its
    // passages; a job cut off by a crash is taken again once this has run out.
    this.leaseMs = 2 * options.fetchPolicy.timeoutMs + 5_000;
  }

  start(): void {
    for (let i = 0; i < this.options.concurrency; i++) this.loops.push(this.loop());
  }

  /** New links were queued: stop waiting for the next poll. */
  notify(): void {
    this.wake?.();
  }

  /**
   * Stops claiming jobs, cancels the fetches in flight and hands their jobs back to the
   * queue at once (another instance, or this one after a restart, takes them again).
   */
  async stop(): Promise<void> {
    this.stopping = true;
    this.abort.abort();
    this.notify();
    await Promise.allSettled(this.loops);
  }

  private async loop(): Promise<void> {
    while (!this.stopping) {
      let worked = false;
      try {
        // Idle: sweep stale entries out of the search index, a small batch at a time.
        worked = (await this.runOne()) || (await kb.sweepSearchIndex(this.storage.db, this.storage.dialect, SWEEP_BATCH)) > 0;
      } catch (err) {
        this.options.logger?.error({ err }, 'knowledge-base worker error');
      }
      if (!worked && !this.stopping) {
        await kb.mergeSearchIndexStep(this.storage.db, this.storage.dialect).catch((err) => this.options.logger?.error({ err }, 'search index merge failed'));
        await this.sleep(this.options.pollIntervalMs);
      }
      // On SQLite every step above is synchronous work behind promises that settle as
      // microtasks: without a turn of the event loop here, a run of steps (a long sweep)
      // would starve every HTTP request until it ended.
      else await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      const previous = this.wake;
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wake = () => {
        previous?.();
        done();
      };
    });
  }

  /** Claims and runs one job; false when none was due. */
  async runOne(): Promise<boolean> {
    const now = nowTimestamp();
    const job = await kb.claimNextJob(this.storage.db, this.storage.dialect, this.owner, now, inMicros(this.leaseMs));
    if (!job) return false;
    await this.process(job);
    return true;
  }

  private async process(job: KbLinkRow): Promise<void> {
    const ref = { id: job.id, owner: this.owner, generation: Number(job.generation) };
    try {
      const page = await fetchGuarded(job.url, this.options.fetchPolicy, { accept: ACCEPT, signal: this.abort.signal });
      // Extraction is synchronous CPU work on a page the remote server chose: a task thread.
      const passages = await passagesOnThread(page.body, page.contentType);
      const stored = await this.storage.db.transaction().execute((trx) =>
        kb.finishJob(trx, ref, { status: 'indexed', passages, botId: job.bot_id, now: nowTimestamp() }),
      );
      if (stored) this.options.logger?.info({ url: job.url, passages: passages.length }, 'knowledge-base link indexed');
    } catch (err) {
      if (this.abort.signal.aborted) {
        await kb.releaseJob(this.storage.db, ref);
        return;
      }
      const attempts = Number(job.attempts);
      const retry = isTransient(err) && attempts < this.maxAttempts;
      await kb.finishJob(this.storage.db, ref, {
        status: retry ? 'pending' : 'failed',
        error: describe(err),
        ...(retry && { runAfter: inMicros(this.backoffMs * 2 ** (attempts - 1)) }),
        now: nowTimestamp(),
      });
      if (!(err instanceof FetchError || err instanceof ExtractError)) this.options.logger?.error({ err, url: job.url }, 'knowledge-base job failed unexpectedly');
    }
  }
}
