import type { FastifyBaseLogger } from 'fastify';
import type { CrawlRunner } from '../domain/knowledgebase/crawl.js';
import { everyInterval, jobFailed } from './rounds.js';

/**
 * Crawl starts under way at once, at most (each fetches a robots.txt, and a sitemap crawl its
 * sitemaps, a site's Crawl-delay apart: up to SITEMAPS_READ_MS). A round claims crawls while
 * fewer are under way and does not wait for them: one site's slow start holds no other's.
 */
const STARTS_AT_ONCE = 5;

/**
 * The crawl job, in every instance (src/domain/knowledgebase/crawl.ts): each round starts the
 * queued crawls that are due (a lease makes one instance start each) and sweeps the running
 * ones. The pages themselves are fetched by the ingestion worker, through the fair queue; this
 * job fetches only robots.txt files and sitemaps, so it never holds a worker that another bot's
 * links wait for.
 */
export function startCrawls(
  runner: CrawlRunner,
  options: { intervalMs: number; logger: Pick<FastifyBaseLogger, 'error' | 'warn'> },
): { stop(): Promise<void>; wake(): void } {
  const abort = new AbortController();
  const starting = new Set<Promise<void>>();
  const round = async (stopped: () => boolean) => {
    while (starting.size < STARTS_AT_ONCE && !stopped()) {
      const claimed = await runner.claimNextStart(abort.signal);
      if (claimed === null) break;
      const tracked: Promise<void> = claimed.started.catch(onError).finally(() => starting.delete(tracked));
      starting.add(tracked);
    }
    if (!stopped()) await runner.sweep();
  };
  const onError = (err: unknown) => jobFailed(options.logger, err, {}, 'The crawl job failed');
  const job = everyInterval(options.intervalMs, round, onError);
  let woken: Promise<void> | null = null;
  let stopping = false;
  return {
    /** A crawl was queued: start it now rather than at the next round. */
    wake() {
      if (stopping) return;
      woken ??= round(() => stopping)
        .catch(onError)
        .finally(() => {
          woken = null;
        });
    },
    async stop() {
      stopping = true;
      abort.abort();
      await job.stop();
      await woken;
      await Promise.all(starting);
    },
  };
}
