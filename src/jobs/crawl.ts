import type { FastifyBaseLogger } from 'fastify';
import type { CrawlRunner } from '../domain/knowledgebase/crawl.js';
import { everyInterval } from './rounds.js';

/** Crawl starts per round, at most (each fetches a robots.txt, and a sitemap crawl its sitemaps). */
const STARTS_PER_ROUND = 5;

/**
 * The crawl job, in every instance (src/domain/knowledgebase/crawl.ts): each round starts the
 * queued crawls that are due (a lease makes one instance start each) and sweeps the running
 * ones. The pages themselves are fetched by the ingestion worker, through the fair queue; this
 * job fetches only robots.txt files and sitemaps, so it never holds a worker that another bot's
 * links wait for.
 */
export function startCrawls(
  runner: CrawlRunner,
  options: { intervalMs: number; logger: Pick<FastifyBaseLogger, 'error'> },
): { stop(): Promise<void>; wake(): void } {
  const abort = new AbortController();
  const round = async (stopped: () => boolean) => {
    for (let n = 0; n < STARTS_PER_ROUND && !stopped(); n++) {
      if (!(await runner.startNext(abort.signal))) break;
    }
    if (!stopped()) await runner.sweep();
  };
  const onError = (err: unknown) => options.logger.error({ err }, 'The crawl job failed');
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
    },
  };
}
