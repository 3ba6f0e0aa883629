import { useState } from 'preact/hooks';
import { api, type Copilot } from '../api';
import { ErrorNotice, Loading, StatusBadge, SuccessNotice } from '../components/feedback';
import { useDebounced, useLoad } from '../hooks';
import { formatTimestamp } from '../lib/format';
import { flash, href, navigate } from '../router';

const PAGE_SIZE = 20;

export function CopilotsScreen() {
  const [q, setQ] = useState('');
  const [status, setStatus] = useState('');
  const query = useDebounced(q.trim(), 300);
  // Cursors of the pages seen so far: [null, c2, c3…]; the last one is on screen.
  const [cursors, setCursors] = useState<Array<string | null>>([null]);
  const [message] = useState(() => flash.take());
  const [creating, setCreating] = useState(false);
  const cursor = cursors[cursors.length - 1] ?? null;

  const list = useLoad((signal) => api.listCopilots({ q: query, status, cursor, limit: PAGE_SIZE }, signal), [query, status, cursor]);
  const resetPages = () => setCursors([null]);
  const rows = list.data?.data ?? [];
  const page = cursors.length;

  return (
    <section aria-labelledby="page-title">
      <div class="page-head">
        <h1 id="page-title" tabIndex={-1}>
          Copilots
        </h1>
        <button type="button" class="primary" aria-expanded={creating} aria-controls="create-copilot" onClick={() => setCreating(!creating)}>
          {creating ? 'Close' : 'New copilot'}
        </button>
      </div>
      {message && <SuccessNotice>{message}</SuccessNotice>}
      {creating && <CreateCopilot onCancel={() => setCreating(false)} />}

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
      {!list.loading && !list.error && rows.length === 0 && (
        <p class="empty">{query || status ? 'No copilot matches these filters.' : 'No copilots yet. Create the first one with “New copilot”.'}</p>
      )}
      {rows.length > 0 && (
        <div class="table-wrap" aria-busy={list.loading}>
          <table class="copilots">
            <caption class="visually-hidden">Copilots, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Status</th>
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
                <CopilotRow key={c.id} copilot={c} />
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

function CopilotRow({ copilot: c }: { copilot: Copilot }) {
  return (
    <tr>
      <th scope="row">
        <a href={href({ name: 'copilot', id: c.id, tab: 'settings' })}>{c.name}</a>
        {c.website && <span class="sub">{c.website}</span>}
      </th>
      <td>
        <StatusBadge status={c.status} />
      </td>
      <td class="opt">{c.swagger_url ? <code class="clip">{c.swagger_url}</code> : <span class="muted">None yet</span>}</td>
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

  async function submit(event: Event) {
    event.preventDefault();
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
    <form id="create-copilot" class="card form" onSubmit={submit} aria-labelledby="create-title">
      <h2 id="create-title">New copilot</h2>
      <div class="field">
        <label for="new-name">Name</label>
        <input id="new-name" value={name} required maxLength={200} onInput={(e) => setName((e.target as HTMLInputElement).value)} />
      </div>
      <div class="field">
        <label for="new-website">Website</label>
        <input
          id="new-website"
          inputMode="url"
          placeholder="https://example.com"
          value={website}
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
          onInput={(e) => setPrompt((e.target as HTMLTextAreaElement).value)}
        />
      </div>
      <ErrorNotice error={error} />
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
