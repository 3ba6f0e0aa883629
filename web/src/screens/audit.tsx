import { useMemo, useState } from 'preact/hooks';
import { api, type AuditEntry } from '../api';
import { ErrorNotice, Loading } from '../components/feedback';
import { useDocumentTitle, useLoad } from '../hooks';
import { ACTION_LABELS, AUDIT_ACTIONS, auditQueryString, describeDetails, fromUtcInput, toUtcInput, type AuditFilters } from '../lib/audit-filters';
import { plural } from '../lib/format';
import { href, navigate, parseRoute } from '../router';
import { usePermissions } from '../use-permissions';

const PAGE_SIZE = 50;

/** "2026-01-31T12:00:05.123456Z" → "2026-01-31 12:00:05 UTC". */
function formatSeconds(ts: string): string {
  const m = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2}:\d{2})/.exec(ts);
  return m ? `${m[1]} ${m[2]} UTC` : ts;
}

/**
 * The audit log (admin): who did what to which copilot, newest first. The filters live in the
 * address (#/audit?bot_id=…&action=…&since=…&until=…); pages follow the API's Link header.
 */
export function AuditScreen({ filters }: { filters: AuditFilters }) {
  const permissions = usePermissions();
  useDocumentTitle('Audit log');
  const filterKey = auditQueryString(filters);
  // Cursors of the pages seen so far under these filters: [null, c2, c3…]; the last is on screen.
  const [pages, setPages] = useState<{ key: string; cursors: Array<string | null> }>({ key: filterKey, cursors: [null] });
  const cursors = pages.key === filterKey ? pages.cursors : [null];
  const cursor = cursors[cursors.length - 1] ?? null;
  const allowed = permissions.mayReadAudit;

  const list = useLoad(
    (signal) => (allowed ? api.listAudit({ ...filters, cursor, limit: PAGE_SIZE }, signal) : Promise.resolve(null)),
    [filterKey, cursor, allowed],
  );
  const copilots = useLoad((signal) => (allowed ? api.allCopilots(signal) : Promise.resolve([])), [allowed]);
  const names = useMemo(() => new Map((copilots.data ?? []).map((c) => [c.id, c.name])), [copilots.data]);

  if (!allowed) {
    return (
      <section aria-labelledby="page-title">
        <h1 id="page-title" tabIndex={-1}>
          Audit log
        </h1>
        <div class="notice notice-warn" role="status">
          <p>This key may not read the audit log: that needs a key with the admin scope.</p>
        </div>
      </section>
    );
  }

  // A change builds on the address as it is now, not on the filters this screen was drawn with:
  // a second change made before the first one's hashchange arrives keeps the first.
  const set = (change: Partial<AuditFilters>) => {
    const current = parseRoute(location.hash);
    navigate({ name: 'audit', filters: { ...(current.name === 'audit' ? current.filters : filters), ...change } });
  };
  const rows = list.data?.data ?? [];
  const next = list.data?.next ?? null;
  const page = cursors.length;
  const filtered = filterKey !== '';
  const botOptions = [...names.entries()].map(([id, name]) => ({ id, name }));
  if (filters.bot_id && !names.has(filters.bot_id)) botOptions.unshift({ id: filters.bot_id, name: filters.bot_id });

  return (
    <section aria-labelledby="page-title" class="audit-screen">
      <div class="page-head">
        <h1 id="page-title" tabIndex={-1}>
          Audit log
        </h1>
      </div>
      <p class="muted">
        Every sensitive action: keys created and revoked, copilots created, changed and deleted, API descriptions uploaded, links added and deleted. Times are
        UTC.
        {permissions.grantableBots !== null && ' This key reads only the entries of its own copilots.'}
      </p>

      <form class="filters audit-filters" role="search" aria-label="Filter the audit log" onSubmit={(e) => e.preventDefault()}>
        <div class="field">
          <label for="audit-bot">Copilot</label>
          <select id="audit-bot" value={filters.bot_id ?? ''} onChange={(e) => set({ bot_id: (e.target as HTMLSelectElement).value || undefined })}>
            <option value="">Any copilot</option>
            {botOptions.map((c) => (
              <option key={c.id} value={c.id}>
                {c.name}
              </option>
            ))}
          </select>
        </div>
        <div class="field">
          <label for="audit-action">Action</label>
          <select id="audit-action" value={filters.action ?? ''} onChange={(e) => set({ action: (e.target as HTMLSelectElement).value || undefined })}>
            <option value="">Any action</option>
            {AUDIT_ACTIONS.map((a) => (
              <option key={a} value={a}>
                {ACTION_LABELS[a]}
              </option>
            ))}
            {filters.action && !(AUDIT_ACTIONS as readonly string[]).includes(filters.action) && <option value={filters.action}>{filters.action}</option>}
          </select>
        </div>
        <div class="field">
          <label for="audit-since">From (UTC)</label>
          <input
            id="audit-since"
            type="datetime-local"
            value={toUtcInput(filters.since)}
            onChange={(e) => set({ since: fromUtcInput((e.target as HTMLInputElement).value) })}
          />
        </div>
        <div class="field">
          <label for="audit-until">Until (UTC)</label>
          <input
            id="audit-until"
            type="datetime-local"
            value={toUtcInput(filters.until)}
            onChange={(e) => set({ until: fromUtcInput((e.target as HTMLInputElement).value) })}
          />
        </div>
        {filtered && (
          <button type="button" onClick={() => navigate({ name: 'audit', filters: {} })}>
            Clear filters
          </button>
        )}
      </form>

      <ErrorNotice error={list.error}>
        <button type="button" onClick={() => list.reload()}>
          Try again
        </button>
      </ErrorNotice>
      {list.loading && <Loading label="Loading the audit log…" />}
      {!list.loading && !list.error && rows.length === 0 && (
        <p class="empty">{filtered ? 'No entry matches these filters.' : 'Nothing has been audited yet.'}</p>
      )}
      {rows.length > 0 && (
        <>
          <p class="result-count" data-testid="audit-count">
            {plural(rows.length, 'entry', 'entries')} on this page{next ? '; more on the next' : ''}
          </p>
          <div class="table-wrap" aria-busy={list.loading}>
            <table class="audit-table stack-table">
              <caption class="visually-hidden">Audit log entries, newest first</caption>
              <thead>
                <tr>
                  <th scope="col">When</th>
                  <th scope="col">Action</th>
                  <th scope="col">Copilot</th>
                  <th scope="col">By key</th>
                  <th scope="col">Details</th>
                </tr>
              </thead>
              <tbody>
                {rows.map((entry) => (
                  <AuditRow key={entry.id} entry={entry} names={names} filters={filters} />
                ))}
              </tbody>
            </table>
          </div>
        </>
      )}
      {(page > 1 || next) && (
        <nav class="pager" aria-label="Pages of the audit log">
          <button type="button" disabled={page <= 1 || list.loading} onClick={() => setPages({ key: filterKey, cursors: cursors.slice(0, -1) })}>
            ← Previous
          </button>
          <span>Page {page}</span>
          <button type="button" disabled={!next || list.loading} onClick={() => next && setPages({ key: filterKey, cursors: [...cursors, next] })}>
            Next →
          </button>
        </nav>
      )}
    </section>
  );
}

function AuditRow({ entry, names, filters }: { entry: AuditEntry; names: ReadonlyMap<string, string>; filters: AuditFilters }) {
  const details = describeDetails(entry.details);
  return (
    <tr data-action={entry.action}>
      <td class="nowrap" data-label="When">
        {formatSeconds(entry.at)}
      </td>
      <td data-label="Action">
        {ACTION_LABELS[entry.action] ?? entry.action}
        <code class="sub">{entry.action}</code>
      </td>
      <td data-label="Copilot">
        {entry.bot_id === null ? (
          <span class="muted">—</span>
        ) : (
          <a href={href({ name: 'audit', filters: { ...filters, bot_id: entry.bot_id } })} title="Show only this copilot’s entries">
            {names.get(entry.bot_id) ?? <code class="clip">{entry.bot_id}</code>}
          </a>
        )}
      </td>
      <td data-label="By key">
        {entry.actor_key_id !== null ? (
          <code>{entry.actor_key_id}</code>
        ) : (
          <span class="muted">{entry.details.trigger === 'schedule' ? 'The service (sync schedule)' : 'Operator (command line)'}</span>
        )}
      </td>
      <td data-label="Details">
        {details.length > 0 && (
          <dl class="audit-details">
            {details.map(([k, v]) => (
              <div key={k}>
                <dt>{k}</dt>
                <dd>{v}</dd>
              </div>
            ))}
          </dl>
        )}
      </td>
    </tr>
  );
}
