import { useEffect, useRef, useState } from 'preact/hooks';
import type { Crawl, CrawlRequest } from '../../../src/domain/crawl-wire.js';
import { DEFAULT_MAX_DEPTH, DEFAULT_MAX_PAGES, MAX_MAX_DEPTH, MAX_MAX_PAGES, MAX_PATTERNS } from '../../../src/domain/knowledgebase/crawl-limits.js';
import { api } from '../api';
import { Announcer, ErrorNotice, FieldError, fieldErrorProps, fieldsInError, StatusBadge } from '../components/feedback';
import { formatCount, formatTimestamp } from '../lib/format';

/** How often a running crawl's progress is read again. */
export const CRAWL_POLL_MS = 1500;

const ACTIVE = new Set(['queued', 'running']);
// The crawl's state in the badge colours the links use.
const BADGE: Record<string, string> = { queued: 'pending', running: 'pending', done: 'indexed', cancelled: 'draft', failed: 'failed' };

/** What the live region says of a crawl: its state and counts, or its end (with the reason of a failure). */
export function crawlAnnouncement(crawl: Crawl): string {
  const counts = `${formatCount(crawl.indexed)} indexed, ${formatCount(crawl.failed)} failed`;
  switch (crawl.state) {
    case 'done':
      return `Crawl finished: ${counts}, ${formatCount(crawl.skipped)} skipped, ${formatCount(crawl.blocked)} blocked.`;
    case 'failed':
      return `Crawl failed: ${(crawl.error ?? 'no reason given').replace(/\.$/, '')}. ${counts}.`;
    case 'cancelled':
      return `Crawl cancelled: ${counts}.`;
    default:
      return `Crawl ${crawl.state}: ${formatCount(crawl.discovered)} found, ${formatCount(crawl.fetched)} fetched, ${counts}.`;
  }
}

/** One pattern per line, blank lines ignored. */
const lines = (text: string) =>
  text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');

/**
 * Crawl a site (from a start URL, following links) or a sitemap into the knowledge base, and
 * follow the latest crawl's progress live (docs/crawling.md). `onProgress` is called at each
 * reading of a running crawl, so the links below it can be read again.
 */
export function CrawlForm({ botId, hidden, onProgress }: { botId: string; hidden: boolean; onProgress(): void }) {
  const [mode, setMode] = useState<'url' | 'sitemap'>('url');
  const [url, setUrl] = useState('');
  const [maxPages, setMaxPages] = useState(String(DEFAULT_MAX_PAGES));
  const [maxDepth, setMaxDepth] = useState(String(DEFAULT_MAX_DEPTH));
  const [include, setInclude] = useState('');
  const [exclude, setExclude] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const [crawl, setCrawl] = useState<Crawl | null>(null);
  // A crawl seen queued or running here is announced until its end; one that had ended before the screen opened is not.
  const [announcement, setAnnouncement] = useState('');
  const followed = useRef(false);
  useEffect(() => {
    if (!crawl) return;
    if (ACTIVE.has(crawl.state)) followed.current = true;
    if (followed.current) setAnnouncement(crawlAnnouncement(crawl));
  }, [crawl]);

  // The latest crawl, so one started elsewhere (or before a reload) shows its progress too.
  useEffect(() => {
    const controller = new AbortController();
    api.latestCrawl(botId, controller.signal).then(
      (latest) => setCrawl((current) => current ?? latest),
      () => undefined,
    );
    return () => controller.abort();
  }, [botId]);

  // Live progress: read the crawl again while it is queued or running.
  const active = crawl !== null && ACTIVE.has(crawl.state);
  useEffect(() => {
    if (!crawl || !active) return;
    const controller = new AbortController();
    const timer = setTimeout(() => {
      api.getCrawl(botId, crawl.crawl_id, controller.signal).then(
        (next) => {
          setCrawl(next);
          onProgress();
        },
        (err: unknown) => {
          if (!controller.signal.aborted) setError(err);
        },
      );
    }, CRAWL_POLL_MS);
    return () => {
      clearTimeout(timer);
      controller.abort();
    };
  }, [crawl, active]);

  const invalid = fieldsInError(error);
  const fieldProps = (field: string) => fieldErrorProps(invalid.has(field), 'crawl-error');

  async function submit(event: Event) {
    event.preventDefault();
    const target = url.trim();
    if (target === '') {
      setError(new FieldError(mode, mode === 'url' ? 'Enter the start URL (http:// or https://).' : 'Enter the sitemap URL (http:// or https://).'));
      return;
    }
    const request: CrawlRequest = {
      ...(mode === 'url' ? { url: target, max_depth: Number(maxDepth) } : { sitemap: target }),
      max_pages: Number(maxPages),
      ...(lines(include).length > 0 && { include: lines(include) }),
      ...(lines(exclude).length > 0 && { exclude: lines(exclude) }),
    };
    setBusy(true);
    setError(null);
    try {
      setCrawl(await api.startCrawl(botId, request));
      onProgress();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  }

  async function cancel() {
    if (!crawl) return;
    setBusy(true);
    setError(null);
    try {
      setCrawl(await api.cancelCrawl(botId, crawl.crawl_id));
      onProgress();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  }

  return (
    <section class="card" hidden={hidden} aria-labelledby="crawl-title">
      <form class="form" onSubmit={submit}>
        <h3 id="crawl-title">Crawl a site</h3>
        <p class="hint">
          Links are followed within the start URL's site and folder (or a sitemap's URLs are read), honouring the site's robots.txt; each page becomes a link
          below.
        </p>
        <fieldset class="field">
          <legend>Start from</legend>
          <label>
            <input type="radio" name="crawl-mode" checked={mode === 'url'} onChange={() => setMode('url')} /> A start URL
          </label>{' '}
          <label>
            <input type="radio" name="crawl-mode" checked={mode === 'sitemap'} onChange={() => setMode('sitemap')} /> A sitemap
          </label>
        </fieldset>
        <div class="field">
          <label for="crawl-url">{mode === 'url' ? 'Start URL' : 'Sitemap URL'}</label>
          <input
            id="crawl-url"
            type="url"
            spellcheck={false}
            placeholder={mode === 'url' ? 'https://docs.example.com/guide/' : 'https://docs.example.com/sitemap.xml'}
            value={url}
            {...fieldProps(mode)}
            onInput={(e) => setUrl((e.target as HTMLInputElement).value)}
          />
        </div>
        <div class="grid-2">
          <div class="field">
            <label for="crawl-pages">Pages at most</label>
            <input
              id="crawl-pages"
              type="number"
              min={1}
              max={MAX_MAX_PAGES}
              value={maxPages}
              {...fieldProps('max_pages')}
              onInput={(e) => setMaxPages((e.target as HTMLInputElement).value)}
            />
          </div>
          <div class="field">
            <label for="crawl-depth">Link depth</label>
            <input
              id="crawl-depth"
              type="number"
              min={0}
              max={MAX_MAX_DEPTH}
              disabled={mode === 'sitemap'}
              value={maxDepth}
              {...fieldProps('max_depth')}
              onInput={(e) => setMaxDepth((e.target as HTMLInputElement).value)}
            />
          </div>
        </div>
        <div class="grid-2">
          <div class="field">
            <label for="crawl-include">Only paths matching (one per line)</label>
            <textarea
              id="crawl-include"
              rows={2}
              spellcheck={false}
              placeholder="/guide/"
              value={include}
              {...fieldProps('include')}
              onInput={(e) => setInclude((e.target as HTMLTextAreaElement).value)}
            />
          </div>
          <div class="field">
            <label for="crawl-exclude">Never paths matching (one per line)</label>
            <textarea
              id="crawl-exclude"
              rows={2}
              spellcheck={false}
              placeholder="*.pdf$"
              value={exclude}
              {...fieldProps('exclude')}
              onInput={(e) => setExclude((e.target as HTMLTextAreaElement).value)}
            />
          </div>
        </div>
        <p class="hint">
          Patterns as in robots.txt: a path prefix, <code>*</code> for any characters, <code>$</code> for the end; at most {MAX_PATTERNS} each.
        </p>
        <ErrorNotice error={error} id="crawl-error" />
        <div class="actions">
          <button type="submit" class="primary" disabled={busy || active}>
            {active ? 'Crawling…' : 'Start crawl'}
          </button>
        </div>
      </form>
      <Announcer text={announcement} />
      {crawl && <CrawlProgress crawl={crawl} busy={busy} onCancel={cancel} />}
    </section>
  );
}

function CrawlProgress({ crawl, busy, onCancel }: { crawl: Crawl; busy: boolean; onCancel(): void }) {
  const active = ACTIVE.has(crawl.state);
  const counts: Array<[string, number]> = [
    ['discovered', crawl.discovered],
    ['fetched', crawl.fetched],
    ['indexed', crawl.indexed],
    ['failed', crawl.failed],
    ['skipped', crawl.skipped],
    ['blocked', crawl.blocked],
  ];
  return (
    <div class="crawl-progress" data-testid="crawl-progress" data-state={crawl.state}>
      <div class="section-head">
        <p>
          <StatusBadge status={BADGE[crawl.state] ?? 'pending'} label={crawl.state} /> <code>{crawl.url ?? crawl.sitemap}</code>
        </p>
        {active && (
          <button type="button" class="danger" disabled={busy} onClick={onCancel}>
            Cancel crawl
          </button>
        )}
      </div>
      <ul class="stats" aria-label="Crawl progress">
        {counts.map(([name, value]) => (
          <li key={name} class="stat" data-crawl-stat={name}>
            <span class="stat-value">{formatCount(value)}</span>
            <span class="stat-label">{name}</span>
          </li>
        ))}
      </ul>
      {crawl.error && <p class="reason">{crawl.error}</p>}
      <p class="hint">
        Started {formatTimestamp(crawl.created_at)}
        {crawl.finished_at && <> · finished {formatTimestamp(crawl.finished_at)}</>}
        {crawl.crawl_delay_ms > 0 && <> · the site asks for {crawl.crawl_delay_ms / 1000} s between pages</>}
      </p>
    </div>
  );
}
