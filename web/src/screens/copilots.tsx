import { useEffect, useState } from 'preact/hooks';
import { api, type Copilot, type CopilotSummary } from '../api';
import { ErrorNotice, FieldError, fieldErrorProps, fieldsInError, Loading, StatusBadge, SuccessNotice } from '../components/feedback';
import { useDebounced, useDocumentTitle, useLoad } from '../hooks';
import { formatTimestamp } from '../lib/format';
import { copilotFiltersQuery, currentCopilotFiltersQuery, flash, href, navigate, replaceRoute, type CopilotFilters } from '../router';
import { usePermissions } from '../use-permissions';

const PAGE_SIZE = 20;

export function CopilotsScreen({ filters = {} }: { filters?: CopilotFilters }) {
  const [q, setQ] = useState(filters.q ?? '');
  const [status, setStatus] = useState<string>(filters.status ?? '');
  const query = useDebounced(q.trim(), 300);
  // Cursors of the pages seen so far: [null, c2, c3…]; the last one is on screen.
  const [cursors, setCursors] = useState<Array<string | null>>([null]);
  const [message] = useState(() => flash.take());
  const [creating, setCreating] = useState(false);
  const cursor = cursors[cursors.length - 1] ?? null;
  const permissions = usePermissions();
  useDocumentTitle('Copilots');
  const canList = permissions.may('copilots:read');

  const list = useLoad(
    (signal) => (canList ? api.listCopilots({ q: query, status, cursor, limit: PAGE_SIZE }, signal) : Promise.resolve({ status: 200, data: [], next: null })),
    [query, status, cursor, canList],
  );
  const resetPages = () => setCursors([null]);
  const rows = list.data?.data ?? [];
  const page = cursors.length;

  // The filters live in the address (#/copilots?q=…&status=…): what is typed is written there,
  // without a history entry per keystroke…
  useEffect(() => {
    replaceRoute({ name: 'copilots', filters: { ...(query && { q: query }), ...((status === 'draft' || status === 'live') && { status }) } });
  }, [query, status]);
  // …and an address that changes under the screen (back, forward, a link) sets them, if it is
  // still the address: the screen's own writes come back too, a task later, and one of them can
  // arrive after the screen has written a newer one (a status chosen while the name was being
  // written). Setting the filters from it would undo that choice; the newer one comes next.
  useEffect(() => {
    if (copilotFiltersQuery(filters) !== currentCopilotFiltersQuery()) return;
    if ((filters.q ?? '') !== query) setQ(filters.q ?? '');
    if ((filters.status ?? '') !== status) setStatus(filters.status ?? '');
    if ((filters.q ?? '') !== query || (filters.status ?? '') !== status) resetPages();
  }, [filters.q, filters.status]);

  // Each row's readiness and uploaded file name: one request per page, answered from what is
  // stored (the list itself stays the interface's plain copilots).
  const ids = rows.map((c) => c.id).join(',');
  const summaries = useLoad((signal) => (ids ? api.copilotSummaries(ids.split(','), signal) : Promise.resolve([])), [ids]);
  const summaryOf = new Map((summaries.data ?? []).map((s) => [s.id, s]));

  return (
    <section aria-labelledby="page-title">
      <div class="page-head">
        <h1 id="page-title" tabIndex={-1}>
          Copilots
        </h1>
        {permissions.mayCreateCopilots && (
          <button type="button" class="primary" aria-expanded={creating} aria-controls="create-copilot" onClick={() => setCreating(!creating)}>
            {creating ? 'Close' : 'New copilot'}
          </button>
        )}
      </div>
      {message && <SuccessNotice>{message}</SuccessNotice>}
      {!canList && (
        <div class="notice notice-warn" role="status">
          <p>This key may not list copilots (it lacks the copilots:read scope).</p>
        </div>
      )}
      {creating && permissions.mayCreateCopilots && <CreateCopilot onCancel={() => setCreating(false)} />}

      <form class="filters" role="search" aria-label="Filter copilots" onSubmit={(e) => e.preventDefault()}>
        <div class="field">
          <label for="filter-q">Name contains</label>
          <input
            id="filter-q"
            type="search"
            value={q}
            onInput={(e) => {
              setQ((e.target as HTMLInputElement).value);
              resetPages();
            }}
          />
        </div>
        <div class="field">
          <label for="filter-status">Status</label>
          <select
            id="filter-status"
            value={status}
            onChange={(e) => {
              setStatus((e.target as HTMLSelectElement).value);
              resetPages();
            }}
          >
            <option value="">Any</option>
            <option value="draft">Draft</option>
            <option value="live">Live</option>
          </select>
        </div>
      </form>

      <ErrorNotice error={list.error}>
        <button type="button" onClick={() => list.reload()}>
          Try again
        </button>
      </ErrorNotice>
      {list.loading && <Loading label="Loading copilots…" />}
      {canList && !list.loading && !list.error && rows.length === 0 && (
        <p class="empty">
          {query || status
            ? 'No copilot matches these filters.'
            : permissions.mayCreateCopilots
              ? 'No copilots yet. Create the first one with “New copilot”.'
              : 'No copilots this key may see yet.'}
        </p>
      )}
      {/* Under an error, the rows of an earlier query would read as the answer to this one. */}
      {rows.length > 0 && !list.error && (
        <div class="table-wrap" aria-busy={list.loading}>
          <table class="copilots">
            <caption class="visually-hidden">Copilots, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Status</th>
                <th scope="col">Readiness</th>
                <th scope="col" class="opt">
                  API description
                </th>
                <th scope="col" class="opt">
                  Created
                </th>
                <th scope="col">
                  <span class="visually-hidden">Screens</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {rows.map((c) => (
                <CopilotRow
                  key={c.id}
                  copilot={c}
                  summary={summaryOf.get(c.id)}
                  summaryState={summaries.loading ? 'loading' : summaries.error ? 'failed' : 'done'}
                />
              ))}
            </tbody>
          </table>
        </div>
      )}
      {(page > 1 || list.data?.next) && (
        <nav class="pager" aria-label="Pages of copilots">
          <button type="button" disabled={page <= 1 || list.loading} onClick={() => setCursors(cursors.slice(0, -1))}>
            ← Previous
          </button>
          <span>Page {page}</span>
          <button type="button" disabled={!list.data?.next || list.loading} onClick={() => list.data?.next && setCursors([...cursors, list.data.next])}>
            Next →
          </button>
        </nav>
      )}
    </section>
  );
}

const PLATFORM_COUNT = 6;

/** The score and a ready / not-ready badge, from the readiness stored at upload. */
function ReadinessCell({ copilot: c, summary, state }: { copilot: Copilot; summary: CopilotSummary | undefined; state: 'loading' | 'failed' | 'done' }) {
  if (!c.swagger_url) return <span class="muted">No API description</span>;
  if (!summary) return <span class="muted">{state === 'loading' ? '…' : state === 'failed' ? 'Unavailable' : '—'}</span>;
  const r = summary.readiness;
  if (!r) {
    return (
      <a class="muted" href={href({ name: 'copilot', id: c.id, tab: 'report' })} title="Not known without validating: open the report">
        {summary.uploaded_at ? 'See report' : 'Checked when validated'}
      </a>
    );
  }
  const count = r.ready_platforms.length;
  const title = count === 0 ? 'Ready for no platform yet' : `Ready for ${count} of ${PLATFORM_COUNT} platforms: ${r.ready_platforms.join(', ')}`;
  return (
    <span class="readiness-cell" title={title}>
      <span class="readiness-score">
        <span class="visually-hidden">Score </span>
        {r.score}
        <span class="visually-hidden"> of 100</span>
      </span>
      <span class={`badge ${r.ready ? 'badge-ready' : 'badge-not-ready'}`}>
        {r.ready ? 'Ready' : count > 0 ? `Ready: ${count}/${PLATFORM_COUNT}` : 'Not ready'}
      </span>
    </span>
  );
}

function CopilotRow({
  copilot: c,
  summary,
  summaryState,
}: {
  copilot: Copilot;
  summary: CopilotSummary | undefined;
  summaryState: 'loading' | 'failed' | 'done';
}) {
  return (
    <tr>
      <th scope="row">
        <a href={href({ name: 'copilot', id: c.id, tab: 'settings' })}>
          <bdi>{c.name}</bdi>
        </a>
        {c.website && <span class="sub">{c.website}</span>}
      </th>
      <td>
        <StatusBadge status={c.status} />
      </td>
      <td class="readiness-col" data-testid="readiness">
        <ReadinessCell copilot={c} summary={summary} state={summaryState} />
      </td>
      <td class="opt">
        {summary?.swagger_file_name ? (
          <code class="clip" title={`Stored as ${c.swagger_url}`}>
            {summary.swagger_file_name}
          </code>
        ) : c.swagger_url ? (
          <code class="clip">{c.swagger_url}</code>
        ) : (
          <span class="muted">None yet</span>
        )}
      </td>
      <td class="opt nowrap">{formatTimestamp(c.created_at)}</td>
      <td class="links">
        <a href={href({ name: 'copilot', id: c.id, tab: 'report' })}>Report</a>
        <a href={href({ name: 'copilot', id: c.id, tab: 'knowledge-base' })}>Knowledge base</a>
      </td>
    </tr>
  );
}

function CreateCopilot({ onCancel }: { onCancel(): void }) {
  const [name, setName] = useState('');
  const [website, setWebsite] = useState('');
  const [prompt, setPrompt] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);

  const invalid = fieldsInError(error);

  async function submit(event: Event) {
    event.preventDefault();
    if (name.trim() === '') {
      setError(new FieldError('name', 'Enter a name for the copilot.'));
      return;
    }
    setBusy(true);
    setError(null);
    try {
      const created = await api.createCopilot({
        name: name.trim(),
        ...(website.trim() && { website: website.trim() }),
        ...(prompt.trim() && { prompt_message: prompt }),
      });
      flash.set(`Created “${created.name}”. Upload its API description to see its validation report.`);
      navigate({ name: 'copilot', id: created.id, tab: 'settings' });
    } catch (err) {
      setError(err);
      setBusy(false);
    }
  }

  return (
    <form id="create-copilot" class="card form" onSubmit={submit} aria-labelledby="create-title" noValidate>
      <h2 id="create-title">New copilot</h2>
      <div class="field">
        <label for="new-name">Name</label>
        <input
          id="new-name"
          value={name}
          required
          maxLength={200}
          {...fieldErrorProps(invalid.has('name'), 'create-copilot-error')}
          onInput={(e) => setName((e.target as HTMLInputElement).value)}
        />
      </div>
      <div class="field">
        <label for="new-website">Website</label>
        <input
          id="new-website"
          inputMode="url"
          placeholder="https://example.com"
          value={website}
          {...fieldErrorProps(invalid.has('website'), 'create-copilot-error')}
          onInput={(e) => setWebsite((e.target as HTMLInputElement).value)}
        />
      </div>
      <div class="field">
        <label for="new-prompt">Prompt message</label>
        <textarea
          id="new-prompt"
          rows={3}
          placeholder="Leave empty for the default assistant prompt"
          value={prompt}
          {...fieldErrorProps(invalid.has('prompt_message'), 'create-copilot-error')}
          onInput={(e) => setPrompt((e.target as HTMLTextAreaElement).value)}
        />
      </div>
      <ErrorNotice error={error} id="create-copilot-error" />
      <div class="actions">
        <button type="button" onClick={onCancel} disabled={busy}>
          Cancel
        </button>
        <button type="submit" class="primary" disabled={busy}>
          {busy ? 'Creating…' : 'Create copilot'}
        </button>
      </div>
    </form>
  );
}
