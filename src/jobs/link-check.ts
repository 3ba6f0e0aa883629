/**
 * One check of a knowledge-base link (issue 16 §2), claimed by the ingestion worker from the
 * check queue (link-refresh.repository.ts) when it has no ingestion job to run:
 *
 *   - a conditional GET (If-None-Match / If-Modified-Since: the validators of the fetch whose
 *     passages the link holds) through the guarded fetcher;
 *   - 304, or 200 whose passages have the digest of the stored ones → nothing written (beyond
 *     the claim's `checked_at`), unless the link had failed (back to indexed) or the server's
 *     validators changed (kept);
 *   - changed → the link goes back to the ingestion queue, whose job fetches it again and
 *     replaces its passages in one transaction (search sees the old set or the new one);
 *   - 404/410, or an answer that can no longer be indexed → the link is failed with the reason,
 *     its passages kept until it is deleted;
 *   - a transient failure (timeout, network, 5xx, 429) → nothing written: the next check tries again.
 */
import type { FastifyBaseLogger } from 'fastify';
import { ExtractError } from '../domain/knowledgebase/extract.js';
import { nowTimestamp } from '../domain/ids.js';
import { FetchError, fetchGuarded, type FetchedResource, type FetchPolicy } from '../net/guarded-fetch.js';
import type { Db, KbLinkRow } from '../storage/schema.js';
import * as refresh from '../storage/link-refresh.repository.js';
import type { ClaimedCheck } from '../storage/link-refresh.repository.js';
import type { TaskThreads } from '../threads/task-threads.js';

/** How a check (or an ingestion job of a link indexed before) ended, as /metrics counts it. */
export type RefreshResult = 'unchanged' | 'changed' | 'gone' | 'failed' | 'error';

export interface CheckDeps {
  db: Db;
  policy: FetchPolicy;
  accept: string;
  taskThreads: Pick<TaskThreads, 'passagesOnThread'>;
  /** The worker's: aborted when it stops. */
  signal: AbortSignal;
  logger?: Pick<FastifyBaseLogger, 'info' | 'warn' | 'error'>;
  fetched?(outcome: 'ok' | 'error' | 'not_modified', seconds: number): void;
  refreshed?(result: RefreshResult): void;
  /** A link went back to the ingestion queue. */
  queued(): void;
  /** Whether a failure is transient (the ingestion worker's rule). */
  isTransient(err: unknown): boolean;
  /** Logs a link's final failure with its bot and reason (and counts it). */
  failed(link: KbLinkRow, reason: string, kind: string): void;
  /** How a link's URL is logged (without its query string). */
  logUrl(url: string): string;
}

/**
 * The validators a fetch of `link` may send: only those of the passages it holds, and only when
 * they were stored the way the copilot now wants them (a copilot that turned enhanced_privacy
 * on gets its pages fetched in full, so that their passages are redacted).
 */
export function conditionalFor(link: KbLinkRow, redact: boolean): { etag: string | null; lastModified: string | null } | undefined {
  if (link.content_sha256 === null || (link.etag === null && link.last_modified === null)) return undefined;
  if (redact && Number(link.redacted) !== 1) return undefined;
  return { etag: link.etag, lastModified: link.last_modified };
}

/** Whether fetched passages are the ones the link holds (same digest, of as much of the page, stored the same way). */
export function samePassages(link: KbLinkRow, fetched: { sha256?: string; truncated?: boolean }, redact: boolean): boolean {
  return (
    fetched.sha256 !== undefined &&
    link.content_sha256 === fetched.sha256 &&
    Number(link.truncated) === (fetched.truncated ? 1 : 0) &&
    Number(link.redacted) === (redact ? 1 : 0)
  );
}

export async function checkLink(deps: CheckDeps, link: ClaimedCheck): Promise<RefreshResult | null> {
  const ref = { id: link.id, generation: Number(link.generation) };
  const log = { bot_id: link.bot_id, url: deps.logUrl(link.url) };
  const redact = Number(link.enhanced_privacy) === 1;
  const started = performance.now();
  let page: FetchedResource;
  try {
    page = await fetchGuarded(link.url, deps.policy, { accept: deps.accept, signal: deps.signal, conditional: conditionalFor(link, redact) });
    deps.fetched?.(page.status === 304 ? 'not_modified' : 'ok', (performance.now() - started) / 1000);
  } catch (err) {
    if (deps.signal.aborted) {
      await refresh.requeueCheck(deps.db, ref, nowTimestamp());
      return null;
    }
    deps.fetched?.('error', (performance.now() - started) / 1000);
    return failedCheck(deps, link, ref, err);
  }
  const unchanged = async () => {
    await refresh.recordUnchanged(
      deps.db,
      { ...ref, status: link.status, etag: link.etag, lastModified: link.last_modified },
      { etag: page.etag, lastModified: page.lastModified },
      nowTimestamp(),
    );
    deps.refreshed?.('unchanged');
    return 'unchanged' as const;
  };
  if (page.status === 304) return unchanged();
  let fetched: { sha256?: string; truncated?: boolean };
  try {
    fetched = await deps.taskThreads.passagesOnThread(page.body, page.contentType, { redact });
  } catch (err) {
    if (deps.signal.aborted) {
      await refresh.requeueCheck(deps.db, ref, nowTimestamp());
      return null;
    }
    return failedCheck(deps, link, ref, err);
  }
  if (samePassages(link, fetched, redact)) return unchanged();
  if (!(await refresh.queueChanged(deps.db, ref, nowTimestamp()))) return null;
  deps.queued();
  deps.refreshed?.('changed');
  deps.logger?.info(log, 'knowledge-base link changed; queued to be indexed again');
  return 'changed';
}

async function failedCheck(deps: CheckDeps, link: KbLinkRow, ref: refresh.CheckedLink, err: unknown): Promise<RefreshResult | null> {
  const log = { bot_id: link.bot_id, url: deps.logUrl(link.url) };
  if (!(err instanceof FetchError || err instanceof ExtractError)) {
    deps.logger?.error({ err, ...log }, 'knowledge-base link check failed unexpectedly');
    deps.refreshed?.('error');
    return 'error';
  }
  if (deps.isTransient(err)) {
    // The page may be back at the next check; its passages are kept meanwhile.
    deps.logger?.info({ ...log, reason: err.message }, 'knowledge-base link check failed for now; tried again at its next check');
    deps.refreshed?.('error');
    return 'error';
  }
  const gone = err instanceof FetchError && err.kind === 'http_status' && (err.status === 404 || err.status === 410);
  // Failed already for this reason (a page gone for a while): nothing new to write or log.
  const known = link.status === 'failed' && link.error === err.message;
  if (!known) {
    if (!(await refresh.recordCheckFailed(deps.db, ref, err.message, nowTimestamp()))) return null;
    deps.failed(link, err.message, err instanceof FetchError ? err.kind : 'extract');
  }
  deps.refreshed?.(gone ? 'gone' : 'failed');
  return gone ? 'gone' : 'failed';
}
