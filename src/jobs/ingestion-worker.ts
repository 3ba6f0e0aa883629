import { randomUUID } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import type { CrawlHooks } from '../domain/knowledgebase/crawl.js';
import { ExtractError } from '../domain/knowledgebase/extract.js';
import { nowTimestamp, timestampIn } from '../domain/ids.js';
import { FetchError, fetchGuarded, type FetchPolicy, isTransientFetchError } from '../net/guarded-fetch.js';
import type { Storage } from '../storage/database.js';
import * as kb from '../storage/knowledge-base.repository.js';
import type { FetchedPage, StoredPassages } from '../storage/knowledge-base.repository.js';
import * as refresh from '../storage/link-refresh.repository.js';
import type { Db, KbLinkRow } from '../storage/schema.js';
import { TaskThreadError, type TaskThreads } from '../threads/task-threads.js';
import { checkLink, conditionalFor, samePassages, type RefreshResult } from './link-check.js';
import { jobFailed } from './rounds.js';
import { loggedUrl } from '../domain/knowledgebase/links.js';
import { inTransaction } from '../storage/transaction.js';
import { isDatabaseUnavailable } from '../storage/unavailable.js';
import { groupDigits } from '../text/numbers.js';

export interface WorkerOptions {
  /** Concurrent fetches in this process (KB_WORKERS); 0 disables the worker. */
  concurrency: number;
  pollIntervalMs: number;
  fetchPolicy: FetchPolicy;
  /** Attempts before a link is marked failed (transient errors only are retried). */
  maxAttempts?: number;
  /** First retry delay; doubles per attempt. */
  backoffMs?: number;
  /**
   * How long a claim holds its job before another worker may take it (default 2 ×
   * FETCH_TIMEOUT_MS + 5 s). A heartbeat renews it every third of that while the job runs, so
   * only a job whose process died is taken again.
   */
  leaseMs?: number;
  /** KB_MAX_PASSAGES_PER_LINK: a page yielding more passages fails (default: no limit). */
  maxPassagesPerLink?: number;
  /** KB_MAX_PASSAGES_PER_BOT: a page that would take its bot over this fails (default: no limit). */
  maxPassagesPerBot?: number;
  logger?: Pick<FastifyBaseLogger, 'info' | 'warn' | 'error'>;
  /** The process's task threads: pages are extracted there. */
  taskThreads: Pick<TaskThreads, 'passagesOnThread'>;
  /** Told what the worker did (the service counts it in /metrics). */
  metrics?: IngestionMetrics;
  /** The crawls whose pages are links of the queue (src/domain/knowledgebase/crawl.ts). */
  crawls?: CrawlHooks;
  /**
   * SYNC_INTERVAL_MS: the time between two checks of a link of a copilot with smart_sync = 1
   * (±10%). Checks (link-check.ts) are claimed when no ingestion job is due. Default 6 hours.
   */
  refreshIntervalMs?: number;
}

/** What the worker reports: each fetch, each page indexed, each link failed for good and why. */
export interface IngestionMetrics {
  fetched(outcome: 'ok' | 'error' | 'not_modified', seconds: number): void;
  /** A check of a link, or a job of a link indexed before, ended so (link-check.ts). */
  refreshed?(result: RefreshResult): void;
  indexed(passages: number): void;
  /** `reason`: a FetchError kind, 'extract', 'limit', 'abandoned' or 'internal'. */
  failed(reason: string): void;
}

// Passages per staged part: each part is its own transaction, short enough to commit quickly.
const STAGE_BATCH = 5000;

const ACCEPT = 'text/html, application/xhtml+xml;q=0.9, text/markdown;q=0.9, text/plain;q=0.8, */*;q=0.1';

/** Transient failures are retried with backoff; anything the page itself decides is final. */
function isTransient(err: unknown): boolean {
  // The service's own threads (busy, or a thread lost) or its database (out of reach, locked),
  // not the page: try again later.
  if (err instanceof TaskThreadError || isDatabaseUnavailable(err)) return true;
  return err instanceof FetchError && isTransientFetchError(err);
}

function describe(err: unknown): string {
  if (err instanceof FetchError || err instanceof ExtractError) return err.message;
  if (isDatabaseUnavailable(err)) return "The service's database could not be reached or was busy; the page is tried again.";
  return 'The page could not be processed.';
}

const yieldToEventLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Runs a step that ends a job (its outcome written): see IngestionWorker.process. */
type JobEnd = <T>(write: (db: Db) => Promise<T>) => Promise<T>;

/** A job's end that claims the worker's next job in its transaction (IngestionWorker.runNext): the claim, and the job it committed. */
interface Chain {
  claim(trx: Db): Promise<KbLinkRow | undefined>;
  next?: KbLinkRow;
}

/** A claimed job's lease, renewed while the job runs; `signal` aborts when the worker stops or the job is no longer ours. */
interface KeptLease {
  readonly signal: AbortSignal;
  /** The link was deleted, re-queued, or taken by another worker: nothing of this job may be written. */
  readonly lost: boolean;
  stop(): Promise<void>;
}

/**
 * The knowledge-base ingestion worker. Jobs are the pending links in the database:
 * each loop claims one, fairly across bots, under a lease that a heartbeat keeps alive
 * while the job runs (so a job cut off by a crash is taken again once its lease runs out,
 * at most maxAttempts times in all, and with several instances each job runs once),
 * fetches the page under the guarded-fetch rules, extracts its text, splits it into
 * passages and stores them in one transaction, within the bot's limits. A crawl's page ends
 * in one transaction with the crawl's bookkeeping, which also claims the loop's next job.
 */
export class IngestionWorker {
  private readonly owner = randomUUID();
  private readonly loops: Promise<void>[] = [];
  /** Fair-queue turns being recorded (runNext), awaited by stop(). */
  private readonly notes = new Set<Promise<void>>();
  private stopping = false;
  private readonly idle = new Wakeup();
  private readonly abort = new AbortController();
  private readonly maxAttempts: number;
  private readonly backoffMs: number;
  private readonly leaseMs: number;
  private readonly maxPassagesPerLink: number;
  private readonly maxPassagesPerBot: number;

  constructor(
    private readonly storage: Storage,
    private readonly options: WorkerOptions,
  ) {
    this.maxAttempts = options.maxAttempts ?? 3;
    this.backoffMs = options.backoffMs ?? 2000;
    // Long enough for one fetch (bounded by its deadline) plus extracting and storing its
    // passages, and renewed while the job runs anyway (a busy instance's extraction can wait
    // for a task thread); a job cut off by a crash is taken again once this has run out.
    this.leaseMs = options.leaseMs ?? 2 * options.fetchPolicy.timeoutMs + 5_000;
    this.maxPassagesPerLink = options.maxPassagesPerLink ?? Number.POSITIVE_INFINITY;
    this.maxPassagesPerBot = options.maxPassagesPerBot ?? Number.POSITIVE_INFINITY;
  }

  start(): void {
    for (let i = 0; i < this.options.concurrency; i++) this.loops.push(this.loop());
  }

  /** New links were queued: stop waiting for the next poll. */
  notify(): void {
    this.idle.wakeAll();
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
    await Promise.allSettled(this.notes);
  }

  private async loop(): Promise<void> {
    // The job the last one's end claimed (a crawl's page: endJob), run without a claim of its own.
    let next: KbLinkRow | undefined;
    while (!this.stopping) {
      let worked = false;
      try {
        const claimed = next;
        next = undefined;
        ({ worked, next } = await this.runNext(claimed));
      } catch (err) {
        // The database out of reach, or its write lock held (another process): not a fault of the
        // service; the loop claims again after its poll interval.
        if (isDatabaseUnavailable(err)) this.options.logger?.warn({ err }, 'knowledge-base worker waits: the database is out of reach or busy');
        else this.options.logger?.error({ err }, 'knowledge-base worker error');
      }
      if (!worked && !this.stopping) await this.sleep(this.options.pollIntervalMs);
      // On SQLite every step above is synchronous work behind promises that settle as
      // microtasks: without a turn of the event loop here, a run of jobs would starve every
      // HTTP request until it ended. Not before a job claimed already: its fetch turns the loop.
      else if (!next) await yieldToEventLoop();
    }
    if (next) await kb.releaseJob(this.storage.db, { id: next.id, owner: this.owner, generation: Number(next.generation) });
  }

  /** A step's failure beside the job itself: a warning when the database was out of reach or busy (jobFailed). */
  private logFailure(err: unknown, message: string): void {
    if (this.options.logger) jobFailed(this.options.logger, err, {}, message);
  }

  private sleep(ms: number): Promise<void> {
    return this.idle.wait(ms);
  }

  /** Claims and runs one job; false when none was due. */
  async runOne(): Promise<boolean> {
    return (await this.runNext(undefined, { chain: false })).worked;
  }

  /**
   * Runs `claimed`, or claims and runs the next job (a due check when none is); with `chain`, the
   * transaction that ends a crawl's page claims the worker's next job too (returned as `next`),
   * rather than a claim of its own waiting for the writer behind the other workers' stores.
   */
  private async runNext(claimed: KbLinkRow | undefined, options = { chain: true }): Promise<{ worked: boolean; next?: KbLinkRow }> {
    const now = nowTimestamp();
    const job = claimed ?? (await kb.claimNextJob(this.storage.db, this.storage.dialect, this.owner, now, timestampIn(this.leaseMs)));
    if (!job) return { worked: await this.checkOne(now) };
    const chain: Chain = {
      claim: (trx) =>
        this.stopping ? Promise.resolve(undefined) : kb.claimJob(trx, this.storage.dialect, this.owner, nowTimestamp(), timestampIn(this.leaseMs)),
    };
    await this.process(job, options.chain ? chain : undefined);
    // The bot's turn moves on beside the next job's fetch rather than before it: the statement
    // may wait for the writer behind the other workers' transactions.
    if (chain.next) {
      const note: Promise<void> = kb
        .noteClaimed(this.storage.db, chain.next.bot_id, nowTimestamp())
        .catch((err: unknown) => this.logFailure(err, 'knowledge-base claim not recorded'))
        .finally(() => this.notes.delete(note));
      this.notes.add(note);
    }
    return { worked: true, next: chain.next };
  }

  /** Claims and runs one due check of a link (after the ingestion jobs: a check never delays one); false when none was due. */
  private async checkOne(now: string): Promise<boolean> {
    const interval = this.options.refreshIntervalMs ?? 6 * 3_600_000;
    const link = await refresh.claimNextCheck(this.storage.db, this.storage.dialect, now, timestampIn(interval * (0.9 + Math.random() * 0.2)));
    if (!link) return false;
    const { metrics, logger } = this.options;
    await checkLink(
      {
        db: this.storage.db,
        policy: this.options.fetchPolicy,
        accept: ACCEPT,
        taskThreads: this.options.taskThreads,
        signal: this.abort.signal,
        logger,
        ...(metrics && { fetched: metrics.fetched, refreshed: metrics.refreshed }),
        queued: () => this.notify(),
        isTransient,
        failed: (l, reason, kind) => this.failed(l, reason, kind),
        logUrl: loggedUrl,
      },
      link,
    );
    return true;
  }

  private async process(job: KbLinkRow, chain?: Chain): Promise<void> {
    const ref = { id: job.id, owner: this.owner, generation: Number(job.generation) };
    // A link indexed before is fetched conditionally; its passages stay when the page is unchanged.
    const redact = await refresh.isPrivacyBot(this.storage.readDb, job.bot_id);
    // A page of a running crawl (crawl.ts): its links are read beside its passages, and the crawl is told when it ends.
    // Looked up last before the fetch, with its crawl's state: a cancel since the claim left the link to this job, which drops it.
    const crawlJob = (await this.options.crawls?.pageOf(job, ref)) ?? null;
    if (crawlJob === 'dropped') return;
    // Each step that ends the job: for a crawl's page, in one transaction with the page's settling (CrawlHooks.endJob).
    const end: JobEnd = async (write) => {
      if (!crawlJob) return write(this.storage.db);
      let claimed: KbLinkRow | undefined;
      const claimNext = async (trx: Db) => {
        claimed = await chain!.claim(trx);
      };
      const value = await this.options.crawls!.endJob(crawlJob, write, chain && claimNext);
      // Committed: the job claimed is the worker's.
      if (chain) chain.next = claimed;
      return value;
    };
    // Ends the job failed with `error`, counted as `kind` when this worker's end was the one written.
    const fail = async (error: string, kind: string) => {
      if (await end((db) => kb.finishJob(db, ref, { status: 'failed', error, now: nowTimestamp() }))) this.failed(job, error, kind);
    };
    const attempts = Number(job.attempts);
    if (attempts > this.maxAttempts) {
      // Attempts are counted at claim and an attempt that ends writes its outcome: every claim
      // beyond the last ended without one, its lease running out (the process died, perhaps
      // because of this very page). Not tried again. A crawl's page ends as every page does (a
      // stopped crawl's was dropped above, as its cancel would have dropped it).
      const error = `The page was tried ${attempts - 1} times and its last attempt never finished (the service stopped or crashed while processing it); it is not tried again.`;
      await fail(error, 'abandoned');
      return;
    }
    // A knowledge base at its passage limit takes no new page: said before the page is fetched
    // and read (its own link's passages are not counted: a refresh replaces them).
    if (Number.isFinite(this.maxPassagesPerBot)) {
      const others = await kb.countPassagesOfOtherLinks(this.storage.readDb, job.bot_id, job.id);
      if (others >= this.maxPassagesPerBot) {
        const error = `This knowledge base holds ${groupDigits(others)} passages, its limit of ${groupDigits(this.maxPassagesPerBot)} passages: the page was not fetched. Delete links to make room.`;
        await fail(error, 'limit');
        return;
      }
    }
    const lease = this.keepLease(ref);
    try {
      const started = performance.now();
      // A crawl needs the page's links, so its pages are fetched whole.
      const conditional = crawlJob ? undefined : conditionalFor(job, redact);
      const page = await fetchGuarded(job.url, this.options.fetchPolicy, { accept: ACCEPT, signal: lease.signal, conditional }).catch((err: unknown) => {
        this.options.metrics?.fetched('error', (performance.now() - started) / 1000);
        throw err;
      });
      this.options.metrics?.fetched(page.status === 304 ? 'not_modified' : 'ok', (performance.now() - started) / 1000);
      // Extraction is synchronous CPU work on a page the remote server chose: a task thread.
      const passages =
        page.status === 304
          ? null
          : crawlJob
            ? await this.options.crawls!.examine(job, ref, crawlJob, page, { redact })
            : await this.options.taskThreads.passagesOnThread(page.body, page.contentType, { redact });
      // A crawl page that is not to be indexed (its canonical is another page, …): the crawl ended its job.
      if (crawlJob && passages === null) return;
      if (lease.lost) return;
      if (passages === null || samePassages(job, passages, redact)) {
        const previous = { etag: job.etag, lastModified: job.last_modified };
        if (await end((db) => refresh.finishUnchangedJob(db, ref, { etag: page.etag, lastModified: page.lastModified, previous }, nowTimestamp())))
          this.options.metrics?.refreshed?.('unchanged');
        return;
      }
      const fetched: FetchedPage = {
        etag: page.etag,
        lastModified: page.lastModified,
        sha256: passages.sha256 ?? null,
        truncated: passages.truncated === true,
        redacted: redact,
      };
      if (passages.length > this.maxPassagesPerLink) {
        const error = `The page yields ${groupDigits(passages.length)} passages, more than the limit of ${groupDigits(this.maxPassagesPerLink)} passages per link.`;
        await fail(error, 'limit');
        return;
      }
      const outcome = await this.store(job, ref, passages, lease, fetched, end);
      if (outcome?.status === 'indexed') {
        this.options.metrics?.indexed(passages.length);
        if (job.content_sha256 !== null) this.options.metrics?.refreshed?.('changed');
        this.options.logger?.info({ bot_id: job.bot_id, url: loggedUrl(job.url), passages: passages.length }, 'knowledge-base link indexed');
      } else if (outcome) this.failed(job, outcome.error, 'limit');
    } catch (err) {
      if (this.abort.signal.aborted) {
        await kb.releaseJob(this.storage.db, ref);
        return;
      }
      // The link was deleted or re-queued meanwhile: whatever happened, nothing is written.
      if (lease.lost) return;
      const retry = isTransient(err) && attempts < this.maxAttempts;
      const error = describe(err);
      const written = await end((db) =>
        kb.finishJob(db, ref, {
          status: retry ? 'pending' : 'failed',
          error,
          ...(retry && { runAfter: timestampIn(this.backoffMs * 2 ** (attempts - 1)) }),
          now: nowTimestamp(),
        }),
      );
      // Load or the database's state, not a fault of the page nor a bug: the job waits, as
      // documented (a warning, not an error; the database's own error is logged with it).
      const busyThreads = err instanceof TaskThreadError && err.reason === 'busy';
      const databaseDown = !busyThreads && isDatabaseUnavailable(err);
      if (busyThreads || databaseDown) {
        this.options.logger?.warn(
          { ...(databaseDown && { err }), bot_id: job.bot_id, url: loggedUrl(job.url), attempt: attempts, retried: retry },
          `knowledge-base job waits: ${busyThreads ? 'the task threads are busy' : 'the database could not be reached or was busy'}`,
        );
        if (written && !retry) this.options.metrics?.failed('internal');
      } else if (!(err instanceof FetchError || err instanceof ExtractError)) {
        this.options.logger?.error({ err, bot_id: job.bot_id, url: loggedUrl(job.url) }, 'knowledge-base job failed unexpectedly');
        if (written && !retry) this.options.metrics?.failed('internal');
      } else if (written && !retry) this.failed(job, error, err instanceof FetchError ? err.kind : 'extract');
      else if (written)
        this.options.logger?.info({ bot_id: job.bot_id, url: loggedUrl(job.url), reason: error, attempt: attempts }, 'knowledge-base link will be retried');
    } finally {
      await lease.stop();
      if (crawlJob) await this.options.crawls!.settled(crawlJob).catch((err: unknown) => this.logFailure(err, 'crawl page not settled'));
    }
  }

  /**
   * Stores the passages unless they would take the bot over its limit of passages (the link
   * then fails). A page of at most AT_ONCE_PASSAGES passages is written and published in one
   * transaction; a larger one is written as a hidden set a batch at a time, then made the
   * link's visible passages in one short transaction. In either, the bot's stores run one at a
   * time so that the count read holds until it commits. The set they replace is deleted
   * afterwards. Null when the job was no longer ours (nothing visible written).
   */
  private async store(
    job: KbLinkRow,
    ref: { id: string; owner: string; generation: number },
    passages: StoredPassages,
    lease: KeptLease,
    fetched: FetchedPage | undefined,
    end: JobEnd,
  ) {
    const { db, dialect } = this.storage;
    // Inside the publishing transaction the bot's stores run one at a time (the lock), so the
    // count read holds until it commits; the early check needs no lock.
    const limitError = (total: number) =>
      total <= this.maxPassagesPerBot
        ? null
        : `Indexing this page (${groupDigits(passages.length)} passages) would bring the knowledge base to ${groupDigits(total)} passages, over its limit of ${groupDigits(this.maxPassagesPerBot)} passages.`;
    const overLimit = async (trx: Db) =>
      Number.isFinite(this.maxPassagesPerBot) ? limitError((await kb.countPassagesOfOtherLinks(trx, job.bot_id, job.id)) + passages.length) : null;
    const failed = async (trx: Db, error: string) =>
      (await kb.finishJob(trx, ref, { status: 'failed', error, now: nowTimestamp() })) ? { status: 'failed' as const, error } : null;
    type Outcome = { status: 'indexed' } | { status: 'failed'; error: string } | null;
    // The transaction that makes the passages visible and ends the job, the bot's stores one at a time in it.
    const publishing = (publish: (trx: Db) => Promise<Outcome>) =>
      end((outer) =>
        inTransaction(outer, async (trx) => {
          await kb.lockBotForStore(trx, dialect, job.bot_id);
          return publish(trx);
        }),
      );
    const rowsOf = (start: number, end: number) => {
      const terms = passages.sliceTerms?.(start, end);
      return passages.slice(start, end).map((content, k) => ({ link_id: job.id, bot_id: job.bot_id, seq: start + k, content, ...terms?.[k] }));
    };
    // Most pages: written and published in one transaction, the limit checked by the read that starts it.
    if (passages.length <= kb.AT_ONCE_PASSAGES) {
      let retired = false;
      const outcome = await publishing(async (trx): Promise<Outcome> => {
        const stored = await kb.storePageAtOnce(trx, dialect, ref, rowsOf(0, passages.length), { now: nowTimestamp(), fetched }, this.maxPassagesPerBot);
        if (stored && 'over' in stored) return failed(trx, limitError(stored.over)!);
        retired = stored?.retired ?? false;
        return stored?.published ? { status: 'indexed' } : null;
      });
      if (retired) await kb.deleteRetiredPassages(db, dialect, { linkId: job.id, budget: Number.POSITIVE_INFINITY });
      return outcome;
    }
    // Checked before storing too, so a page over the limit is not written for nothing.
    const early = await overLimit(db);
    if (early) return end((trx) => failed(trx, early));
    const version = await kb.beginStaging(db, ref, job.bot_id, nowTimestamp());
    if (version === null) return null;
    let termCount = 0;
    let staged = true;
    for (let i = 0; i < passages.length && staged; i += STAGE_BATCH) {
      // A set retired meanwhile (its link deleted) takes no further batch.
      const terms = lease.lost ? null : await kb.stagePassages(db, dialect, rowsOf(i, i + STAGE_BATCH), version);
      if (terms === null) staged = false;
      else termCount += terms;
    }
    const outcome =
      !staged || lease.lost
        ? null
        : await publishing(async (trx): Promise<Outcome> => {
            const error = await overLimit(trx);
            if (error) return failed(trx, error);
            return (await kb.publishStagedPage(trx, ref, { version, passages: passages.length, termCount, now: nowTimestamp(), fetched }))
              ? { status: 'indexed' }
              : null;
          });
    if (outcome?.status !== 'indexed') await kb.retireSet(db, job.id, version, job.bot_id, nowTimestamp());
    await kb.deleteRetiredPassages(db, dialect, { linkId: job.id, budget: Number.POSITIVE_INFINITY });
    return outcome;
  }

  /**
   * Renews the job's lease every third of its length until `stop()`. When a renewal finds the
   * job no longer ours, the job's fetch is aborted and nothing of it is written.
   */
  private keepLease(ref: { id: string; owner: string; generation: number }): KeptLease {
    const lost = new AbortController();
    // The job's signal: the worker stopping, or the job lost. The listener on the worker's
    // long-lived signal is removed when the job ends, so it keeps nothing of finished jobs.
    const signal = new AbortController();
    const workerSignal = this.abort.signal;
    const onStop = () => signal.abort(workerSignal.reason);
    if (workerSignal.aborted) onStop();
    else workerSignal.addEventListener('abort', onStop, { once: true });
    lost.signal.addEventListener('abort', () => signal.abort(lost.signal.reason), { once: true });
    let renewing: Promise<void> | null = null;
    let stopped = false;
    const renew = async () => {
      try {
        const ours = await kb.extendLease(this.storage.db, ref, timestampIn(this.leaseMs));
        if (!ours && !stopped) lost.abort(new Error("The job is no longer this worker's."));
      } catch (err) {
        this.options.logger?.warn({ err }, 'knowledge-base lease renewal failed');
      } finally {
        renewing = null;
      }
    };
    const timer = setInterval(
      () => {
        if (renewing === null && !stopped) renewing = renew();
      },
      Math.max(1, Math.floor(this.leaseMs / 3)),
    );
    return {
      signal: signal.signal,
      get lost() {
        return lost.signal.aborted;
      },
      async stop() {
        stopped = true;
        clearInterval(timer);
        workerSignal.removeEventListener('abort', onStop);
        await renewing;
      },
    };
  }

  /** Every final failure of a link is logged with its bot and reason (DESIGN §9); the page decided it, so not as an error. */
  private failed(job: KbLinkRow, reason: string, kind: string): void {
    this.options.metrics?.failed(kind);
    this.options.logger?.warn({ bot_id: job.bot_id, url: loggedUrl(job.url), reason }, 'knowledge-base link failed');
  }
}

/**
 * Idle waits that a notification ends early. Each wait is a timer and an entry in a set, gone
 * when it ends either way: however long a worker idles, nothing accumulates (a chain of
 * wake-up closures, one per poll, once grew until a notification overflowed the stack).
 */
export class Wakeup {
  private readonly waiting = new Set<() => void>();

  /** Resolves after `ms`, or at the next `wakeAll()`. */
  wait(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.waiting.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.waiting.add(done);
    });
  }

  wakeAll(): void {
    for (const done of [...this.waiting]) done();
  }

  /** Waits in progress. */
  get size(): number {
    return this.waiting.size;
  }
}
