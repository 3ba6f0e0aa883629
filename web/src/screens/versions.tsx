import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { api, ApiError, type ApiResponse, type Copilot, type SyncResult } from '../api';
import { ErrorNotice, Loading, MethodBadge, SuccessNotice } from '../components/feedback';
import { useLoad } from '../hooks';
import { formatCount, formatTimestamp, plural } from '../lib/format';
import {
  formatBytes,
  groupChanges,
  isSyncableUrl,
  shortSha,
  versionFileName,
  type ApiDescriptionChange,
  type ApiDescriptionVersion,
  type ChangeGroup,
} from '../lib/versions-model';
import { href } from '../router';
import { usePermissions } from '../use-permissions';
import { PathText } from './report';

/**
 * The versions of a copilot's API description, the changes between them (breaking first),
 * and its sync from swagger_url (issue 16 §3).
 */
export function VersionsScreen({ copilot, onChange }: { copilot: Copilot; onChange(next: Copilot): void }) {
  // Bumped when a sync or an upload may have added a version: the lists load again.
  const [generation, setGeneration] = useState(0);
  const versions = usePaged(
    (cursor, signal) => api.listVersions(copilot.id, cursor, signal),
    [copilot.id, copilot.swagger_url, copilot.updated_at, generation],
  );
  const changes = usePaged((cursor, signal) => api.listChanges(copilot.id, cursor, signal), [copilot.id, copilot.swagger_url, copilot.updated_at, generation]);

  return (
    <div class="stack versions-screen">
      <SyncCard copilot={copilot} onChange={onChange} onSynced={() => setGeneration((g) => g + 1)} generation={generation} />
      <VersionsCard copilot={copilot} versions={versions} />
      <ChangesCard versions={versions} changes={changes} />
    </div>
  );
}

// ——— Paged lists (the API's Link: rel="next") ———

interface Paged<T> {
  items: T[];
  loading: boolean;
  error: unknown;
  /** Whether the API named a next page. */
  more: boolean;
  loadMore(): void;
}

function usePaged<T>(load: (cursor: string | null, signal: AbortSignal) => Promise<ApiResponse<T[]>>, deps: readonly unknown[]): Paged<T> {
  const [state, setState] = useState<{ items: T[]; next: string | null; loading: boolean; error: unknown }>({
    items: [],
    next: null,
    loading: true,
    error: null,
  });
  const loadRef = useRef(load);
  loadRef.current = load;
  const controller = useRef<AbortController | null>(null);

  const fetchPage = (cursor: string | null, append: boolean) => {
    controller.current?.abort();
    const c = new AbortController();
    controller.current = c;
    setState((s) => ({ ...s, loading: true, error: null }));
    loadRef.current(cursor, c.signal).then(
      (res) => {
        if (!c.signal.aborted) setState((s) => ({ items: append ? [...s.items, ...res.data] : res.data, next: res.next, loading: false, error: null }));
      },
      (error: unknown) => {
        if (!c.signal.aborted) setState((s) => ({ ...s, loading: false, error }));
      },
    );
  };

  useEffect(() => {
    fetchPage(null, false);
    return () => controller.current?.abort();
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, deps);

  return {
    items: state.items,
    loading: state.loading,
    error: state.error,
    more: state.next !== null,
    loadMore: () => {
      if (state.next) fetchPage(state.next, true);
    },
  };
}

function MoreButton({ paged, label }: { paged: Paged<unknown>; label: string }) {
  if (!paged.more) return null;
  return (
    <div class="actions center">
      <button type="button" onClick={paged.loadMore} disabled={paged.loading}>
        {paged.loading ? 'Loading…' : label}
      </button>
    </div>
  );
}

// ——— Sync ———

const OUTCOME_TEXT: Record<string, string> = {
  unchanged: 'no change',
  changed: 'a new version',
  failed: 'failed',
};

function syncMessage(result: SyncResult): string {
  if (result.status === 'unchanged') return 'The document at the URL has not changed since the last version.';
  if (result.status === 'changed') {
    const counts = result.changes ? ` (${plural(result.changes.breaking, 'breaking change')}, ${formatCount(result.changes.other)} other)` : '';
    return `Recorded version ${result.version ?? '?'}${counts}.`;
  }
  return `The sync failed: ${result.error ?? 'no reason given'}`;
}

function SyncCard({ copilot, onChange, onSynced, generation }: { copilot: Copilot; onChange(next: Copilot): void; onSynced(): void; generation: number }) {
  const state = useLoad((signal) => api.syncState(copilot.id, signal), [copilot.id, copilot.smart_sync, copilot.swagger_url, generation]);
  const [smartSync, setSmartSync] = useState(copilot.smart_sync === 1);
  const [url, setUrl] = useState(isSyncableUrl(copilot.swagger_url) ? copilot.swagger_url : '');
  const [busy, setBusy] = useState<'save' | 'sync' | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [done, setDone] = useState<{ text: string; failed: boolean } | null>(null);
  // The controls are shown only to a key that may write (GET …/keys/me); should the API still answer 403, they are disabled.
  const mayWrite = usePermissions().may('copilots:write', copilot.id);
  const [readOnly, setReadOnly] = useState<string | null>(null);

  const catchWrite = (err: unknown) => {
    if (err instanceof ApiError && err.status === 403) setReadOnly(err.message);
    else setError(err);
  };

  async function save(event: Event) {
    event.preventDefault();
    const patch: { smart_sync?: boolean; swagger_url?: string } = {};
    if (smartSync !== (copilot.smart_sync === 1)) patch.smart_sync = smartSync;
    const nextUrl = url.trim();
    if (nextUrl !== '' && nextUrl !== copilot.swagger_url) patch.swagger_url = nextUrl;
    if (Object.keys(patch).length === 0) {
      setDone({ text: 'Nothing changed.', failed: false });
      return;
    }
    setBusy('save');
    setError(null);
    setDone(null);
    try {
      const next = await api.updateCopilot(copilot.id, patch);
      setSmartSync(next.smart_sync === 1);
      onChange(next);
      setDone({ text: 'Sync settings saved.', failed: false });
    } catch (err) {
      catchWrite(err);
    } finally {
      setBusy(null);
    }
  }

  async function syncNow() {
    setBusy('sync');
    setError(null);
    setDone(null);
    try {
      const result = await api.syncNow(copilot.id);
      setDone({ text: syncMessage(result), failed: result.status === 'failed' });
      onSynced();
    } catch (err) {
      catchWrite(err);
    } finally {
      setBusy(null);
    }
  }

  const s = state.data;
  const syncable = isSyncableUrl(copilot.swagger_url);
  const locked = readOnly !== null;
  return (
    <section class="card sync-card" aria-labelledby="sync-title">
      <h2 id="sync-title">Sync from a URL</h2>
      <p class="muted">
        With smart sync on, the service fetches the API description from its URL on a schedule and records a new version whenever the content changed.
      </p>
      <dl class="facts" data-testid="sync-state">
        <div>
          <dt>Smart sync</dt>
          <dd data-testid="sync-setting">{s ? (s.smart_sync === 1 ? 'on' : 'off') : '…'}</dd>
        </div>
        <div>
          <dt>Last sync</dt>
          <dd data-testid="last-sync">
            {s?.last_synced_at ? (
              <>
                {formatTimestamp(s.last_synced_at)} · {OUTCOME_TEXT[s.last_outcome ?? ''] ?? s.last_outcome}
                {s.last_error && <span class="reason">{s.last_error}</span>}
              </>
            ) : (
              'never'
            )}
          </dd>
        </div>
        <div>
          <dt>Next sync</dt>
          <dd data-testid="next-sync">{s?.next_sync_at ? formatTimestamp(s.next_sync_at) : s && s.smart_sync === 1 && s.url ? 'soon' : 'not scheduled'}</dd>
        </div>
      </dl>
      <ErrorNotice error={state.error} />
      {locked && (
        <p class="notice notice-warn" role="status" data-testid="sync-read-only">
          {readOnly} This key may read this copilot but not change its sync.
        </p>
      )}
      {!mayWrite && (
        <p class="hint" data-testid="sync-read-only">
          This key may read this copilot but not change it: the sync setting and <strong>Sync now</strong> need the copilots:write scope.
        </p>
      )}
      {mayWrite && (
        <form class="sync-form" onSubmit={save}>
          <label class="check">
            <input type="checkbox" checked={smartSync} disabled={locked} onChange={(e) => setSmartSync((e.target as HTMLInputElement).checked)} />
            Smart sync: keep the API description in step with its URL
          </label>
          <div class="inline-form">
            <div class="field grow">
              <label for="sync-url">URL of the API description</label>
              <input
                id="sync-url"
                type="url"
                inputMode="url"
                placeholder="https://api.example.com/openapi.json"
                value={url}
                disabled={locked}
                onInput={(e) => setUrl((e.target as HTMLInputElement).value)}
              />
            </div>
            <button type="submit" disabled={busy !== null || locked}>
              {busy === 'save' ? 'Saving…' : 'Save'}
            </button>
            <button
              type="button"
              class="primary"
              onClick={syncNow}
              disabled={busy !== null || locked || !syncable}
              title={syncable ? undefined : 'Save an http(s) URL first'}
            >
              {busy === 'sync' ? 'Syncing…' : 'Sync now'}
            </button>
          </div>
          {!syncable && (
            <p class="hint">{copilot.swagger_url ? 'The current description was uploaded. ' : ''}Sync needs an http(s) URL: save one above to sync from it.</p>
          )}
        </form>
      )}
      <ErrorNotice error={error} />
      {done &&
        (done.failed ? (
          <div class="notice notice-error" role="alert" data-testid="sync-result">
            <p>{done.text}</p>
          </div>
        ) : (
          <SuccessNotice>
            <span data-testid="sync-result">{done.text}</span>
          </SuccessNotice>
        ))}
    </section>
  );
}

// ——— Versions ———

function VersionsCard({ copilot, versions }: { copilot: Copilot; versions: Paged<ApiDescriptionVersion> }) {
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState<number | null>(null);

  async function download(v: ApiDescriptionVersion) {
    setBusy(v.version);
    setError(null);
    try {
      await api.downloadVersion(copilot.id, v.version, versionFileName(v.version, v.media_type));
    } catch (err) {
      setError(err);
    } finally {
      setBusy(null);
    }
  }

  return (
    <section class="card" aria-labelledby="versions-title">
      <h2 id="versions-title">Versions</h2>
      <ErrorNotice error={versions.error} />
      <ErrorNotice error={error} />
      {versions.loading && versions.items.length === 0 ? (
        <Loading label="Loading the versions…" />
      ) : versions.items.length === 0 && !versions.error ? (
        <div class="empty-state" data-testid="versions-empty">
          <p>
            <strong>No versions yet.</strong> Every upload, and every sync that brings a changed document, records a version here.
          </p>
          <p>
            <a href={href({ name: 'copilot', id: copilot.id, tab: 'settings' })}>Upload an API description</a>, or save its URL above and choose{' '}
            <strong>Sync now</strong>.
          </p>
        </div>
      ) : (
        <div class="table-wrap">
          <table class="versions">
            <thead>
              <tr>
                <th scope="col">Version</th>
                <th scope="col">Recorded</th>
                <th scope="col" class="num">
                  Size
                </th>
                <th scope="col">Source</th>
                <th scope="col">SHA-256</th>
                <th scope="col">Changes</th>
                <th scope="col">
                  <span class="visually-hidden">Download</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {versions.items.map((v) => (
                <tr key={v.version} data-version={v.version}>
                  <th scope="row">v{v.version}</th>
                  <td class="nowrap" data-label="Recorded">
                    {formatTimestamp(v.created_at)}
                  </td>
                  <td class="num nowrap" data-label="Size">
                    {formatBytes(v.size)}
                  </td>
                  <td data-label="Source">
                    {v.source === 'sync' ? 'sync' : 'upload'}
                    {v.url && <span class="sub">{v.url}</span>}
                  </td>
                  <td data-label="SHA-256">
                    <code title={v.sha256}>{shortSha(v.sha256)}</code>
                  </td>
                  <td data-label="Changes">
                    {v.changes.breaking > 0 && <span class="badge badge-failed">{plural(v.changes.breaking, 'breaking change')}</span>}{' '}
                    {v.changes.other > 0 && <span class="muted">{formatCount(v.changes.other)} other</span>}
                    {v.changes.breaking === 0 && v.changes.other === 0 && <span class="muted">—</span>}
                  </td>
                  <td>
                    <button type="button" class="link-button" disabled={busy !== null} onClick={() => download(v)} aria-label={`Download version ${v.version}`}>
                      {busy === v.version ? 'Downloading…' : 'Download'}
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <MoreButton paged={versions} label="Older versions" />
    </section>
  );
}

// ——— Changes ———

function ChangesCard({ versions, changes }: { versions: Paged<ApiDescriptionVersion>; changes: Paged<ApiDescriptionChange> }) {
  const groups = useMemo(() => groupChanges(changes.items), [changes.items]);
  const [onlyBreaking, setOnlyBreaking] = useState(false);
  const totals = useMemo(() => {
    let breaking = 0;
    for (const c of changes.items) if (c.breaking) breaking++;
    return { breaking, other: changes.items.length - breaking };
  }, [changes.items]);
  const createdAt = new Map(versions.items.map((v) => [v.version, v.created_at]));

  return (
    <section class="card" aria-labelledby="changes-title">
      <div class="section-head">
        <h2 id="changes-title">Changes</h2>
        {changes.items.length > 0 && (
          <label class="check">
            <input type="checkbox" checked={onlyBreaking} onChange={(e) => setOnlyBreaking((e.target as HTMLInputElement).checked)} />
            Only breaking ({formatCount(totals.breaking)}
            {changes.more ? '+' : ''})
          </label>
        )}
      </div>
      <p class="muted">
        What changed from each version to the next, newest first. A <strong>breaking</strong> change breaks a copilot that calls the API: an operation removed,
        a new required parameter, a changed operationId.
      </p>
      <ErrorNotice error={changes.error} />
      {changes.loading && changes.items.length === 0 ? (
        <Loading label="Loading the changes…" />
      ) : groups.length === 0 && !changes.error ? (
        <p class="empty" data-testid="changes-empty">
          No changes yet: they appear once a second, different version is recorded.
        </p>
      ) : (
        <ol class="change-groups">
          {groups.map((g) => (
            <ChangeGroupView key={g.version} group={g} createdAt={createdAt.get(g.version)} onlyBreaking={onlyBreaking} />
          ))}
        </ol>
      )}
      <MoreButton paged={changes} label="Older changes" />
    </section>
  );
}

function ChangeGroupView({ group, createdAt, onlyBreaking }: { group: ChangeGroup; createdAt: string | undefined; onlyBreaking: boolean }) {
  const shown = onlyBreaking ? group.breaking : [...group.breaking, ...group.other];
  return (
    <li class="change-group" data-version={group.version}>
      <h3>
        Version {group.version}
        <span class="muted">
          {createdAt ? ` · ${formatTimestamp(createdAt)}` : ''} · since version {group.version - 1}: {plural(group.breaking.length, 'breaking change')},{' '}
          {formatCount(group.other.length)} other
        </span>
      </h3>
      {shown.length === 0 ? (
        <p class="muted">No breaking change.</p>
      ) : (
        <ul class="changes">
          {shown.map((c, i) => (
            <li key={i} class={`change${c.breaking ? ' breaking' : ''}`} data-kind={c.kind} data-breaking={c.breaking ? 'true' : 'false'}>
              {c.breaking ? <span class="badge badge-failed">breaking</span> : <span class="badge">other</span>}
              <span class="change-what">
                {c.method && <MethodBadge method={c.method} />} {c.path && <PathText path={c.path} />} <code class="kind">{c.kind}</code>
              </span>
              <span class="change-message">{c.message}</span>
            </li>
          ))}
        </ul>
      )}
    </li>
  );
}
