import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { api, ApiError, type Copilot, type DeleteLinksResult, type KnowledgeBaseLink, type SearchResult } from '../api';
import { ConfirmDialog } from '../components/confirm-dialog';
import { Announcer, ErrorNotice, fieldErrorProps, Loading, StatusBadge, SuccessNotice } from '../components/feedback';
import { Highlighted } from '../components/highlighted';
import { useLoad } from '../hooks';
import { formatCount, formatTimestamp, plural } from '../lib/format';
import { queryTerms, snippet } from '../lib/highlight';
import { deletedLinksMessage, describeLinkProblems, newlySettled, parseLinkLines, settledLinksMessage } from '../lib/link-lines';
import { usePermissions } from '../use-permissions';
import { CrawlForm } from './crawl-form';

/** How often the links are read again while any is still pending. */
export const POLL_MS = 1500;

export function KnowledgeBaseScreen({ copilot }: { copilot: Copilot }) {
  const links = useLoad((signal) => api.listLinks(copilot.id, signal), [copilot.id]);
  // Offer only what the key may do here: adding links (knowledgebase:write), deleting them (knowledgebase:delete).
  const permissions = usePermissions();
  const canAdd = permissions.may('knowledgebase:write', copilot.id);
  const canDelete = permissions.may('knowledgebase:delete', copilot.id);
  const [selected, setSelected] = useState<ReadonlySet<string>>(new Set());
  const [outcome, setOutcome] = useState<{ result: DeleteLinksResult; totalBefore: number } | null>(null);
  const list = links.data ?? [];
  const pending = list.filter((l) => l.status === 'pending').length;

  // Live status: read the links again every POLL_MS while any is pending, and not after an
  // error (the service down, a 429): its notice offers "Try again", as the crawl's poll does.
  useEffect(() => {
    if (pending === 0 || links.loading || links.error) return;
    const timer = setTimeout(() => links.reload(true), POLL_MS);
    return () => clearTimeout(timer);
  }, [links.data, links.error, links.loading, pending]);

  // Forget selections of links that are gone.
  useEffect(() => {
    const urls = new Set(list.map((l) => l.url));
    if ([...selected].some((u) => !urls.has(u))) setSelected(new Set([...selected].filter((u) => urls.has(u))));
  }, [links.data]);

  const totals = useMemo(() => summarize(list), [links.data]);

  // Links that finished since the last reading are announced (not those already finished when the screen opened).
  const [announcement, setAnnouncement] = useState('');
  const statuses = useRef<Map<string, string> | null>(null);
  useEffect(() => {
    if (links.data === undefined) return;
    const before = statuses.current;
    statuses.current = new Map(list.map((l) => [l.url, l.status]));
    const text = before ? settledLinksMessage(newlySettled(before, list)) : '';
    if (text) setAnnouncement(text);
  }, [links.data]);

  return (
    <div class="stack kb">
      <h2 class="visually-hidden">Knowledge base</h2>
      <AddLinks
        hidden={!canAdd}
        botId={copilot.id}
        onAdded={() => {
          setOutcome(null);
          links.reload(true);
        }}
      />

      <CrawlForm hidden={!canAdd} botId={copilot.id} onProgress={() => links.reload(true)} />

      <section class="card" aria-labelledby="links-title">
        <div class="section-head">
          <h3 id="links-title">Links</h3>
          {links.data && list.length > 0 && (
            <p class="muted" data-testid="kb-summary">
              {plural(list.length, 'link')} · {formatCount(totals.indexed)} indexed · {formatCount(totals.pending)} pending · {formatCount(totals.failed)}{' '}
              failed · {plural(totals.passages, 'passage')}
            </p>
          )}
        </div>
        <Announcer text={announcement} />
        {pending > 0 && (
          <p class="loading" role="status">
            <span class="spinner" aria-hidden="true" />
            Fetching and indexing {plural(pending, 'link')}; the status updates by itself.
          </p>
        )}
        {outcome && (
          <SuccessNotice focusKey={outcome}>
            {deletedLinksMessage(outcome.result, outcome.totalBefore).map((line) => (
              <p key={line} data-testid="deleted-links">
                {line}
              </p>
            ))}
          </SuccessNotice>
        )}
        <ErrorNotice error={links.error}>
          <button type="button" onClick={() => links.reload()}>
            Try again
          </button>
        </ErrorNotice>
        {links.loading && !links.data && <Loading label="Loading the knowledge base…" />}
        {links.data === null && !links.loading && (
          <p class="empty">{canAdd ? 'No links yet: add web pages above and they will be fetched and indexed.' : 'No links yet.'}</p>
        )}
        {list.length > 0 && (
          <LinksTable
            canDelete={canDelete}
            links={list}
            selected={selected}
            onSelect={setSelected}
            onDeleted={(result) => {
              setOutcome({ result, totalBefore: list.length });
              setSelected(new Set());
              links.reload(true);
            }}
            botId={copilot.id}
          />
        )}
      </section>

      <SearchKnowledgeBase botId={copilot.id} disabled={links.data === null || (links.data !== undefined && totals.passages === 0)} />
    </div>
  );
}

function summarize(links: readonly KnowledgeBaseLink[]) {
  const out = { indexed: 0, pending: 0, failed: 0, passages: 0 };
  for (const l of links) {
    out[l.status] += 1;
    out.passages += l.passages;
  }
  return out;
}

function AddLinks({ botId, onAdded, hidden }: { botId: string; onAdded(): void; hidden: boolean }) {
  const [text, setText] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const [added, setAdded] = useState<string | null>(null);

  async function submit(event: Event) {
    event.preventDefault();
    const parsed = parseLinkLines(text);
    if (parsed.problems.length > 0) {
      setError(new Error(describeLinkProblems(parsed.problems)));
      return;
    }
    const urls = parsed.links.map((l) => l.url);
    if (urls.length === 0) {
      setError(new Error('Enter at least one link (http:// or https://), one per line.'));
      return;
    }
    setBusy(true);
    setError(null);
    setAdded(null);
    try {
      await api.addLinks(botId, urls);
      setText('');
      setAdded(`Queued ${plural(urls.length, 'link')} for fetching and indexing.`);
      onAdded();
    } catch (err) {
      // The service names refused links by their index in what was sent: name their lines instead.
      const problems = err instanceof ApiError ? (err.details as { problems?: Array<{ index?: unknown; reason?: unknown }> } | undefined)?.problems : undefined;
      const named = (problems ?? [])
        .filter((p) => typeof p.index === 'number' && parsed.links[p.index] !== undefined)
        .map((p) => ({
          line: parsed.links[p.index as number]!.line,
          text: parsed.links[p.index as number]!.url,
          reason: String(p.reason ?? 'is not a valid link').replace(/\.$/, ''),
        }));
      setError(named.length > 0 ? new Error(describeLinkProblems(named)) : err);
    } finally {
      setBusy(false);
    }
  }

  return (
    <form class="card form" hidden={hidden} onSubmit={submit} aria-labelledby="add-links-title">
      <h3 id="add-links-title">Add web pages</h3>
      <div class="field">
        <label for="new-links">Links (one per line)</label>
        <textarea
          id="new-links"
          rows={3}
          placeholder="https://docs.example.com/getting-started"
          value={text}
          {...fieldErrorProps(Boolean(error), 'add-links-error')}
          spellcheck={false}
          onInput={(e) => setText((e.target as HTMLTextAreaElement).value)}
        />
      </div>
      <ErrorNotice error={error} id="add-links-error" />
      {added && <SuccessNotice>{added}</SuccessNotice>}
      <div class="actions">
        <button type="submit" class="primary" disabled={busy}>
          {busy ? 'Adding…' : 'Add links'}
        </button>
      </div>
    </form>
  );
}

function LinksTable(props: {
  canDelete: boolean;
  botId: string;
  links: readonly KnowledgeBaseLink[];
  selected: ReadonlySet<string>;
  onSelect(next: ReadonlySet<string>): void;
  onDeleted(result: DeleteLinksResult): void;
}) {
  const { botId, links, selected, onSelect } = props;
  const [confirming, setConfirming] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const all = links.length > 0 && links.every((l) => selected.has(l.url));
  const chosen = links.filter((l) => selected.has(l.url)).map((l) => l.url);

  function toggle(url: string, on: boolean) {
    const next = new Set(selected);
    if (on) next.add(url);
    else next.delete(url);
    onSelect(next);
  }

  async function confirm() {
    setBusy(true);
    setError(null);
    try {
      const result = await api.deleteLinks(botId, chosen);
      setConfirming(false);
      props.onDeleted(result);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  }

  return (
    <>
      <div class="toolbar" hidden={!props.canDelete}>
        <button type="button" class="danger" disabled={chosen.length === 0} onClick={() => setConfirming(true)}>
          Delete selected ({formatCount(chosen.length)})…
        </button>
      </div>
      <div class="table-wrap">
        <table class="links-table">
          <caption class="visually-hidden">Links of the knowledge base, oldest first</caption>
          <thead>
            <tr>
              <th scope="col" class="select" hidden={!props.canDelete}>
                <input
                  type="checkbox"
                  aria-label="Select all links"
                  checked={all}
                  onChange={(e) => onSelect((e.target as HTMLInputElement).checked ? new Set(links.map((l) => l.url)) : new Set())}
                />
              </th>
              <th scope="col">Link</th>
              <th scope="col">Status</th>
              <th scope="col" class="num">
                Passages
              </th>
              <th scope="col" class="opt">
                Updated
              </th>
            </tr>
          </thead>
          <tbody>
            {links.map((l) => (
              <tr key={l.url} data-status={l.status}>
                <td class="select" hidden={!props.canDelete}>
                  <input
                    type="checkbox"
                    aria-label={`Select ${l.url}`}
                    checked={selected.has(l.url)}
                    onChange={(e) => toggle(l.url, (e.target as HTMLInputElement).checked)}
                  />
                </td>
                <td class="url">
                  <a href={l.url} target="_blank" rel="noopener noreferrer">
                    {l.url}
                  </a>
                  {l.status === 'failed' && l.error && <span class="reason">{l.error}</span>}
                  {l.status === 'indexed' && l.truncated && (
                    <span class="note">Only the first part of this page is indexed: its HTML is longer than 4 Mi characters.</span>
                  )}
                </td>
                <td>
                  <StatusBadge status={l.status} />
                </td>
                <td class="num">{formatCount(l.passages)}</td>
                <td class="opt nowrap">{formatTimestamp(l.updated_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <ConfirmDialog
        open={confirming}
        title={`Delete ${plural(chosen.length, 'link')}?`}
        confirmLabel={`Delete ${plural(chosen.length, 'link')}`}
        busy={busy}
        error={error}
        onCancel={() => {
          setConfirming(false);
          setError(null);
        }}
        onConfirm={confirm}
      >
        <p>These links and every passage indexed from them will be removed from the knowledge base. This cannot be undone.</p>
        <ul class="confirm-list">
          {chosen.map((url) => (
            <li key={url}>
              <code>{url}</code>
            </li>
          ))}
        </ul>
      </ConfirmDialog>
    </>
  );
}

function SearchKnowledgeBase({ botId, disabled }: { botId: string; disabled: boolean }) {
  const [q, setQ] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const [results, setResults] = useState<{ query: string; items: SearchResult[] } | null>(null);
  const terms = useMemo(() => (results ? queryTerms(results.query) : []), [results]);
  const count = results
    ? results.items.length === 0
      ? `No passage matches “${results.query}”.`
      : `${plural(results.items.length, 'passage')} for “${results.query}”, best first`
    : '';

  async function submit(event: Event) {
    event.preventDefault();
    const query = q.trim();
    if (query === '') return;
    setBusy(true);
    setError(null);
    try {
      setResults({ query, items: await api.search(botId, query) });
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  }

  return (
    <section class="card" aria-labelledby="search-title">
      <h3 id="search-title">Search the knowledge base</h3>
      <form class="inline-form" role="search" onSubmit={submit}>
        <div class="field grow">
          <label for="kb-search">Words to find</label>
          <input id="kb-search" type="search" value={q} onInput={(e) => setQ((e.target as HTMLInputElement).value)} />
        </div>
        <button type="submit" class="primary" disabled={busy || q.trim() === ''}>
          {busy ? 'Searching…' : 'Search'}
        </button>
      </form>
      {disabled && !results && <p class="muted">Nothing is indexed yet; search works once a link is indexed.</p>}
      <ErrorNotice error={error} />
      {/* The count is announced (not the whole list), from a region that is there before the first search. */}
      <Announcer text={count} />
      {results && (
        <div>
          <p class="result-count">{count}</p>
          <ol class="search-results">
            {results.items.map((r) => (
              <li key={`${r.url}#${r.passage}`}>
                <p class="result-source">
                  <a href={r.url} target="_blank" rel="noopener noreferrer">
                    {r.url}
                  </a>{' '}
                  <span class="muted">· passage {r.passage + 1}</span>
                </p>
                <p class="passage">
                  <Highlighted text={snippet(r.content, terms)} terms={terms} />
                </p>
              </li>
            ))}
          </ol>
        </div>
      )}
    </section>
  );
}
