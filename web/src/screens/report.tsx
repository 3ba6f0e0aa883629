import type { ComponentChildren } from 'preact';
import { useEffect, useMemo, useState } from 'preact/hooks';
import { TOOL_PLATFORM_IDS } from '../../../src/domain/validator/platforms.js';
import { api, ApiError, type Copilot, type ToolDefinition } from '../api';
import { ErrorNotice, Loading, MethodBadge } from '../components/feedback';
import { useDebounced, useLoad } from '../hooks';
import { formatCount, plural } from '../lib/format';
import {
  buildReport,
  filterFindings,
  filterRows,
  FLAG_KINDS,
  groupFindings,
  isFlagged,
  pageOfEndpoint,
  pathSegments,
  severityCounts,
  type FindingFilter,
  type FindingGroup,
  type FlagKind,
  type Report,
  type ReportRow,
  type RuleFinding,
} from '../lib/report-model';
import { href } from '../router';

/** Rows rendered at once: the largest descriptions (thousands of endpoints) are shown a page at a time. */
export const ROWS_PER_PAGE = 100;
/** Findings of a group rendered at once; "Show more" adds as many again. */
export const FINDINGS_PER_STEP = 50;
/** Tools rendered a page at a time. */
export const TOOLS_PER_PAGE = 25;

const PLATFORM_NAMES: Record<string, string> = {
  openai: 'OpenAI',
  gpt_actions: 'GPT Actions',
  anthropic: 'Anthropic',
  gemini: 'Gemini',
  mcp: 'MCP',
  copilot_studio: 'Copilot Studio',
};
const platformName = (id: string) => PLATFORM_NAMES[id] ?? id;

export function ReportScreen({ copilot }: { copilot: Copilot }) {
  const hasDescription = copilot.swagger_url !== '';
  const result = useLoad(
    (signal) => (hasDescription ? api.validate(copilot.id, signal) : Promise.resolve(null)),
    [copilot.id, copilot.swagger_url, copilot.updated_at],
  );
  const report = useMemo(() => (result.data ? buildReport(result.data) : null), [result.data]);
  // The newest version's changes from the one before ("since the last version: 1 breaking, 2 other"); quietly absent on failure.
  const latest = useLoad(
    (signal) =>
      hasDescription
        ? api.listVersions(copilot.id, null, signal, 1).then(
            (res) => res.data[0] ?? null,
            () => null,
          )
        : Promise.resolve(null),
    [copilot.id, copilot.swagger_url, copilot.updated_at],
  );
  const [onlyFlagged, setOnlyFlagged] = useState(false);
  const [kind, setKind] = useState<FlagKind | null>(null);
  const [text, setText] = useState('');
  const [page, setPage] = useState(0);
  const [open, setOpen] = useState<ReadonlySet<number>>(new Set());
  const [reveal, setReveal] = useState<{ index: number } | null>(null);
  const [findingFilter, setFindingFilter] = useState<FindingFilter>({ platform: null, severity: null });

  const rows = useMemo(() => (report ? filterRows(report.rows, { onlyFlagged, kind, text }) : []), [report, onlyFlagged, kind, text]);
  const pages = Math.max(1, Math.ceil(rows.length / ROWS_PER_PAGE));
  const current = Math.min(page, pages - 1);
  const visible = rows.slice(current * ROWS_PER_PAGE, (current + 1) * ROWS_PER_PAGE);

  // After "show this endpoint": bring its row into view and put the focus on it.
  useEffect(() => {
    if (!reveal) return;
    const toggle = document.querySelector<HTMLElement>(`tbody.endpoint[data-index="${reveal.index}"] .row-toggle`);
    toggle?.scrollIntoView({ block: 'center' });
    toggle?.focus({ preventScroll: true });
  }, [reveal]);

  if (!hasDescription || (result.error instanceof ApiError && result.error.code === 'swagger_missing' && !report)) {
    return <EmptyReport copilot={copilot} />;
  }
  if (result.loading && !report) return <Loading label="Validating the API description…" />;
  if (!report) {
    return (
      <ErrorNotice error={result.error}>
        <button type="button" onClick={() => result.reload()}>
          Try again
        </button>
      </ErrorNotice>
    );
  }

  const total = report.rows.length;
  const toggle = (index: number) => {
    const next = new Set(open);
    if (next.has(index)) next.delete(index);
    else next.add(index);
    setOpen(next);
  };
  const filterBy = (next: FlagKind | null) => {
    setKind(next);
    setPage(0);
  };
  const showEndpoint = (index: number) => {
    // Every endpoint is listed in document order when no filter is on: its page is known.
    setOnlyFlagged(false);
    setKind(null);
    setText('');
    setPage(pageOfEndpoint(index, ROWS_PER_PAGE));
    setOpen(new Set(open).add(index));
    setReveal({ index });
  };

  return (
    <div class="report">
      <h2 class="visually-hidden">Validation report</h2>
      {result.error ? <ErrorNotice error={result.error} /> : null}
      <ul class="stats" aria-label="Summary">
        <li class="stat">
          <span class="stat-value" data-stat="endpoints">
            {formatCount(total)}
          </span>
          <span class="stat-label">Endpoints</span>
        </li>
        {FLAG_KINDS.map((k) => {
          const count = report.counts[k.kind];
          return (
            <li key={k.kind} class={`stat${count > 0 ? ' stat-warn' : ' stat-ok'}`}>
              <button
                type="button"
                class="stat-button"
                aria-pressed={kind === k.kind}
                disabled={count === 0}
                title={count > 0 ? `Show only endpoints ${k.label.toLowerCase()}` : undefined}
                onClick={() => filterBy(kind === k.kind ? null : k.kind)}
              >
                <span class="stat-value" data-stat={k.kind}>
                  {formatCount(count)}
                </span>
                <span class="stat-label">{k.label}</span>
              </button>
            </li>
          );
        })}
        <li class="stat">
          <span class="stat-value stat-text" data-stat="auth_type">
            {report.authType}
          </span>
          <span class="stat-label">Auth type</span>
        </li>
        <li class={`stat stat-wide${report.baseUrl ? '' : ' stat-warn'}`}>
          <span class="stat-value stat-text" data-stat="base_url">
            {report.baseUrl ?? 'none'}
          </span>
          <span class="stat-label">{report.baseUrl ? 'Base URL' : 'Base URL: the document names no server, so a copilot cannot call it'}</span>
        </li>
      </ul>

      {latest.data && latest.data.version > 1 && (
        <p class="since-last" data-testid="since-last">
          Since the last version (v{latest.data.version - 1} → v{latest.data.version}):{' '}
          <strong class={latest.data.changes.breaking > 0 ? 'severity-error' : undefined}>{plural(latest.data.changes.breaking, 'breaking change')}</strong>,{' '}
          {formatCount(latest.data.changes.other)} other · <a href={href({ name: 'copilot', id: copilot.id, tab: 'versions' })}>See the changes</a>
        </p>
      )}
      <Readiness
        copilot={copilot}
        report={report}
        platform={findingFilter.platform}
        onPlatform={(platform) => setFindingFilter({ ...findingFilter, platform: findingFilter.platform === platform ? null : platform })}
      />
      <Findings report={report} filter={findingFilter} onFilter={setFindingFilter} onShowEndpoint={showEndpoint} />
      <ToolPreview copilot={copilot} report={report} onShowEndpoint={showEndpoint} />

      <h3 class="report-section-title" id="endpoints-title">
        Endpoints
      </h3>
      <form class="filters" role="search" aria-label="Filter endpoints" onSubmit={(e) => e.preventDefault()}>
        <div class="field grow">
          <label for="endpoint-filter">Path, name or operationId contains</label>
          <input
            id="endpoint-filter"
            type="search"
            value={text}
            onInput={(e) => {
              setText((e.target as HTMLInputElement).value);
              setPage(0);
            }}
          />
        </div>
        <label class="check">
          <input
            type="checkbox"
            checked={onlyFlagged}
            onChange={(e) => {
              setOnlyFlagged((e.target as HTMLInputElement).checked);
              setPage(0);
            }}
          />
          Only flagged endpoints ({formatCount(report.flagged)})
        </label>
        {kind && (
          <button type="button" class="chip" onClick={() => filterBy(null)}>
            {FLAG_KINDS.find((k) => k.kind === kind)?.label} <span aria-hidden="true">×</span>
            <span class="visually-hidden">(remove this filter)</span>
          </button>
        )}
        {result.loading && <Loading label="Validating again…" />}
        <button type="button" onClick={() => result.reload()} disabled={result.loading}>
          Validate again
        </button>
      </form>

      <p class="result-count" role="status" data-testid="endpoint-count">
        {rows.length === total ? plural(total, 'endpoint') : `${plural(rows.length, 'endpoint')} of ${formatCount(total)}`}
        {pages > 1 && ` · showing ${formatCount(current * ROWS_PER_PAGE + 1)}–${formatCount(current * ROWS_PER_PAGE + visible.length)}`}
      </p>

      {rows.length === 0 ? (
        <p class="empty">{total === 0 ? 'The document describes no endpoints.' : 'No endpoint matches these filters.'}</p>
      ) : (
        <div class="table-wrap">
          {/* Fixed column widths: opening an endpoint never re-lays the table out. */}
          <table class="endpoints">
            <caption class="visually-hidden">Endpoints; choose a path to see its parameters, request body and responses</caption>
            <colgroup>
              <col class="col-method" />
              <col class="col-path" />
              <col class="col-name" />
              <col class="col-operation" />
              <col class="col-desc opt" />
            </colgroup>
            <thead>
              <tr>
                <th scope="col">Method</th>
                <th scope="col">Path</th>
                <th scope="col">Name</th>
                <th scope="col">operationId</th>
                <th scope="col" class="opt">
                  Description
                </th>
              </tr>
            </thead>
            {visible.map((row) => (
              <EndpointRows key={row.index} row={row} open={open.has(row.index)} onToggle={() => toggle(row.index)} />
            ))}
          </table>
        </div>
      )}
      {pages > 1 && (
        <nav class="pager" aria-label="Pages of endpoints">
          <button type="button" disabled={current === 0} onClick={() => setPage(current - 1)}>
            ← Previous
          </button>
          <span>
            Page {current + 1} of {formatCount(pages)}
          </span>
          <button type="button" disabled={current >= pages - 1} onClick={() => setPage(current + 1)}>
            Next →
          </button>
        </nav>
      )}
    </div>
  );
}

/** A copilot without an API description yet: what the report will show, and where to add one. */
function EmptyReport({ copilot }: { copilot: Copilot }) {
  return (
    <section class="card empty-state" data-testid="report-empty" aria-labelledby="report-empty-title">
      <h2 id="report-empty-title">No API description yet</h2>
      <p>
        Once this copilot has the OpenAPI 3 or Swagger 2.0 description of the API it calls, this report shows what an LLM will stumble over: a readiness score,
        a verdict for each platform copilots run on, every finding with its fix, and the tool definitions each platform would be given.
      </p>
      <p>
        <a class="button primary" href={href({ name: 'copilot', id: copilot.id, tab: 'settings' })}>
          Add an API description
        </a>
      </p>
    </section>
  );
}

/** A path that wraps only before a `/`, never inside a segment; the whole path is its title. */
export function PathText({ path }: { path: string }) {
  const segments = pathSegments(path);
  return (
    <code class="path-text" title={path}>
      {segments.map((segment, i) => (
        <>
          {i > 0 && <wbr />}
          <span class="seg">{segment}</span>
        </>
      ))}
    </code>
  );
}

function Missing({ what }: { what: string }) {
  return <span class="missing">no {what}</span>;
}

/** One endpoint: a row, and when open a second row with its parameters, request body and responses. */
function EndpointRows({ row, open, onToggle }: { row: ReportRow; open: boolean; onToggle(): void }) {
  const e = row.endpoint;
  const has = (k: FlagKind) => row.flags.includes(k);
  const hasRule = (...rules: string[]) => row.findings.some((f) => rules.includes(f.rule));
  const duplicate = hasRule('operation-id-duplicate');
  const invalid = hasRule('operation-id-invalid', 'operation-id-too-long');
  const opFlag = has('no_operation_id') || duplicate || invalid;
  const detailId = `endpoint-${row.index}`;
  const operation = `${(e.type || '?').toUpperCase()} ${e.path}`;
  return (
    <tbody class={`endpoint${isFlagged(row) ? ' flagged' : ''}${open ? ' open' : ''}`} data-index={row.index}>
      <tr>
        <td>
          <MethodBadge method={e.type} />
        </td>
        <td class="path">
          <button type="button" class="row-toggle" aria-label={operation} aria-expanded={open} aria-controls={detailId} onClick={onToggle}>
            <span class="caret" aria-hidden="true">
              ▸
            </span>
            <PathText path={e.path} />
          </button>
        </td>
        <td class={has('no_name') ? 'flag' : undefined} data-label="Name">
          {has('no_name') ? (
            <Missing what="name" />
          ) : (
            <span class="clamp" title={e.name}>
              {e.name}
            </span>
          )}
        </td>
        <td class={opFlag ? 'flag' : undefined} data-label="operationId">
          {has('no_operation_id') ? (
            <Missing what="operationId" />
          ) : (
            <code class="clamp" title={e.operationId ?? undefined}>
              {e.operationId}
            </code>
          )}
          {duplicate && <span class="tag">duplicate</span>}
          {invalid && <span class="tag">invalid</span>}
        </td>
        <td class={`opt desc${has('no_description') ? ' flag' : ''}`} title={has('no_description') ? undefined : e.description}>
          {has('no_description') ? <Missing what="description" /> : e.description}
        </td>
      </tr>
      {open && (
        <tr class="detail">
          <td colSpan={5} id={detailId}>
            <EndpointDetail row={row} />
          </td>
        </tr>
      )}
    </tbody>
  );
}

type Json = unknown;

/** JSON in a box that scrolls: focusable, so that it scrolls from the keyboard too, and named by `label`. */
function JsonBlock({ value, label }: { value: Json; label: string }) {
  const text = JSON.stringify(value, null, 2) ?? 'null';
  const cut = text.length > 50_000;
  return (
    // biome-ignore lint/a11y/noNoninteractiveTabindex: a box that scrolls must take the focus to be scrolled from the keyboard (WCAG 2.1.1).
    <pre class="json" tabIndex={0} role="region" aria-label={label}>
      {cut ? `${text.slice(0, 50_000)}\n… (${formatCount(text.length - 50_000)} more characters)` : text}
    </pre>
  );
}

/** A `<details>` whose content is rendered only while it is open (a schema of a thousand tools costs nothing until asked for). */
function LazyDetails({ summary, children, class: className }: { summary: ComponentChildren; children: () => ComponentChildren; class?: string }) {
  const [open, setOpen] = useState(false);
  return (
    <details class={className} onToggle={(e) => setOpen((e.currentTarget as HTMLDetailsElement).open)}>
      <summary>{summary}</summary>
      {open && children()}
    </details>
  );
}

function schemaType(schema: Json): string {
  if (!schema || typeof schema !== 'object') return '';
  const s = schema as Record<string, unknown>;
  if (typeof s.$ref === 'string') return s.$ref.replace(/^#\/components\/schemas\//, '');
  if (s.type === 'array') return `${schemaType(s.items) || 'any'}[]`;
  if (typeof s.type === 'string') return s.format ? `${s.type} (${String(s.format)})` : s.type;
  if (Array.isArray(s.type)) return s.type.join(' | ');
  return '';
}

function EndpointDetail({ row }: { row: ReportRow }) {
  const e = row.endpoint;
  const params = Array.isArray(e.requestParameters) ? (e.requestParameters as Array<Record<string, unknown>>) : [];
  const responses = e.responseBody && typeof e.responseBody === 'object' ? Object.entries(e.responseBody) : [];
  return (
    <div class="endpoint-detail">
      {isFlagged(row) && (
        <ul class="issues" aria-label="Findings">
          {FLAG_KINDS.filter((k) => row.flags.includes(k.kind)).map((k) => (
            <li key={k.kind}>{k.why}</li>
          ))}
          {row.findings.map((f, i) => (
            <li key={`r${i}`} data-rule={f.rule}>
              <SeverityBadge severity={f.severity} /> <code>{f.rule}</code> {f.message}
              {f.fix !== null && f.fix !== undefined && (
                <>
                  {' '}
                  Fix: <code class="fix">{fixText(f.fix)}</code>
                </>
              )}
            </li>
          ))}
        </ul>
      )}
      {e.description && <p class="description">{e.description}</p>}
      <h3>Parameters</h3>
      {params.length === 0 ? (
        <p class="muted">None.</p>
      ) : (
        <div class="table-wrap">
          <table class="params">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">In</th>
                <th scope="col">Required</th>
                <th scope="col">Type</th>
                <th scope="col">Description</th>
              </tr>
            </thead>
            <tbody>
              {params.map((p, i) =>
                typeof p.$ref === 'string' ? (
                  <tr key={i}>
                    <td colSpan={5}>
                      <code>{p.$ref}</code>
                    </td>
                  </tr>
                ) : (
                  <tr key={i}>
                    <td>
                      <code>{String(p.name ?? '')}</code>
                    </td>
                    <td>{String(p.in ?? '')}</td>
                    <td>{p.required === true ? 'yes' : 'no'}</td>
                    <td>
                      <code>{schemaType(p.schema ?? p)}</code>
                    </td>
                    <td>{typeof p.description === 'string' ? p.description : ''}</td>
                  </tr>
                ),
              )}
            </tbody>
          </table>
        </div>
      )}
      <h3>Request body</h3>
      {e.requestBody == null ? (
        <p class="muted">None.</p>
      ) : (
        <JsonBlock value={e.requestBody} label={`Request body of ${(e.type || '?').toUpperCase()} ${e.path} (JSON)`} />
      )}
      <h3>Responses</h3>
      {responses.length === 0 ? (
        <p class="muted">None declared.</p>
      ) : (
        <ul class="responses">
          {responses.map(([code, response]) => {
            const r = (response ?? {}) as Record<string, unknown>;
            const types = r.content && typeof r.content === 'object' ? Object.keys(r.content) : [];
            return (
              <li key={code}>
                <LazyDetails
                  summary={
                    <>
                      <strong>{code}</strong> {typeof r.description === 'string' ? r.description : typeof r.$ref === 'string' ? r.$ref : ''}
                      {types.length > 0 && <span class="muted"> · {types.join(', ')}</span>}
                    </>
                  }
                >
                  {() => <JsonBlock value={response} label={`Response ${code} of ${(e.type || '?').toUpperCase()} ${e.path} (JSON)`} />}
                </LazyDetails>
              </li>
            );
          })}
        </ul>
      )}
    </div>
  );
}

function SeverityBadge({ severity }: { severity: string }) {
  return <span class={`severity severity-${severity}`}>{severity}</span>;
}

/** A file name from the copilot's name: "Petstore assistant" → "petstore-assistant". */
function slug(name: string): string {
  return (
    name
      .normalize('NFKD')
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-+|-+$/g, '')
      .slice(0, 60) || 'copilot'
  );
}

/** The readiness score, a verdict per platform (a filter of the findings), and the Overlay of fixes to download. */
function Readiness({
  copilot,
  report,
  platform,
  onPlatform,
}: {
  copilot: Copilot;
  report: Report;
  platform: string | null;
  onPlatform(platform: string): void;
}) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  if (report.score === null) return null;
  const fixable = report.findings.reduce((n, f) => n + (f.fix !== null && f.fix !== undefined ? 1 : 0), 0);

  async function download() {
    setBusy(true);
    setError(null);
    try {
      await api.downloadFixes(copilot.id, `${slug(copilot.name)}-fixes.overlay.json`);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  }

  const tone = report.score >= 90 ? 'ok' : report.score >= 60 ? 'warn' : 'bad';
  return (
    <section class="card readiness" aria-labelledby="readiness-title">
      <div class="readiness-head">
        <p class={`readiness-score score-${tone}`}>
          <span class="stat-value" data-stat="score">
            {report.score}
          </span>
          <span class="stat-label">/100</span>
        </p>
        <div class="readiness-text">
          <h3 id="readiness-title">LLM readiness</h3>
          <p class="muted">A verdict for each platform copilots run on. Choose one to see only its findings.</p>
        </div>
        <div class="readiness-actions">
          <button type="button" onClick={download} disabled={busy || fixable === 0} data-testid="download-fixes">
            {busy ? 'Preparing…' : 'Download fixes (Overlay)'}
          </button>
          <span class="hint">
            {fixable === 0 ? 'No finding has a computed fix.' : `An OpenAPI Overlay 1.0 file applying ${plural(fixable, 'computed fix', 'computed fixes')}.`}
          </span>
        </div>
      </div>
      <ErrorNotice error={error} />
      <ul class="platforms" aria-label="Platforms">
        {report.platforms.map((p) => (
          <li key={p.platform} class={p.ready ? 'verdict-ok' : 'verdict-bad'} data-platform={p.platform} data-ready={p.ready ? 'true' : 'false'}>
            <button type="button" class="verdict" aria-pressed={platform === p.platform} onClick={() => onPlatform(p.platform)}>
              <strong>{platformName(p.platform)}</strong>
              <span class="verdict-text">
                {p.ready ? 'ready' : `${formatCount(p.blocking)} blocking`}
                {p.warnings > 0 && ` · ${plural(p.warnings, 'warning')}`}
              </span>
            </button>
          </li>
        ))}
      </ul>
    </section>
  );
}

/** Every rule finding, grouped by rule (errors first), filtered by platform and severity; each names its endpoint and fix. */
function Findings({
  report,
  filter,
  onFilter,
  onShowEndpoint,
}: {
  report: Report;
  filter: FindingFilter;
  onFilter(filter: FindingFilter): void;
  onShowEndpoint(index: number): void;
}) {
  const { findings } = report;
  const filtered = useMemo(() => filterFindings(findings, filter), [findings, filter]);
  const groups = useMemo(() => groupFindings(filtered), [filtered]);
  const counts = useMemo(() => severityCounts(filtered), [filtered]);
  const filterKey = `${filter.platform ?? '*'}|${filter.severity ?? '*'}`;
  const platforms = report.platforms.map((p) => p.platform);

  return (
    <section class="card findings" aria-labelledby="findings-title">
      <div class="section-head">
        <h3 id="findings-title">Findings</h3>
        <span class="muted" data-testid="findings-count">
          {plural(findings.length, 'finding')}
        </span>
      </div>
      {findings.length === 0 ? (
        <p class="muted">No rule finds anything to fix: every platform can use this API as it is.</p>
      ) : (
        <>
          <form class="filters" aria-label="Filter findings" onSubmit={(e) => e.preventDefault()}>
            <div class="field">
              <label for="finding-platform">Platform</label>
              <select
                id="finding-platform"
                value={filter.platform ?? ''}
                onChange={(e) => onFilter({ ...filter, platform: (e.target as HTMLSelectElement).value || null })}
              >
                <option value="">All platforms</option>
                {platforms.map((p) => (
                  <option key={p} value={p}>
                    {platformName(p)}
                  </option>
                ))}
              </select>
            </div>
            <div class="field">
              <label for="finding-severity">Severity</label>
              <select
                id="finding-severity"
                value={filter.severity ?? ''}
                onChange={(e) => onFilter({ ...filter, severity: ((e.target as HTMLSelectElement).value || null) as FindingFilter['severity'] })}
              >
                <option value="">All severities</option>
                <option value="error">Errors (block a platform)</option>
                <option value="warning">Warnings</option>
                <option value="info">Info</option>
              </select>
            </div>
          </form>
          <p class="result-count" role="status" data-testid="findings-shown">
            {filtered.length === findings.length
              ? plural(findings.length, 'finding')
              : `${plural(filtered.length, 'finding')} of ${formatCount(findings.length)}`}
            {' · '}
            {plural(counts.error, 'error')}, {plural(counts.warning, 'warning')}, {formatCount(counts.info)} info
          </p>
          {groups.length === 0 ? (
            <p class="empty">No finding matches these filters.</p>
          ) : (
            <ul class="finding-groups">
              {groups.map((g) => (
                <FindingGroupView key={`${filterKey}:${g.key}`} group={g} report={report} onShowEndpoint={onShowEndpoint} />
              ))}
            </ul>
          )}
        </>
      )}
    </section>
  );
}

function FindingGroupView({ group, report, onShowEndpoint }: { group: FindingGroup; report: Report; onShowEndpoint(index: number): void }) {
  const [open, setOpen] = useState(false);
  const [shown, setShown] = useState(FINDINGS_PER_STEP);
  const id = `findings-${group.key.replace(/[^a-z0-9-]/gi, '-')}`;
  const first = group.items[0]!;
  return (
    <li class={`finding-group severity-${group.severity}-group`} data-rule={group.rule} data-severity={group.severity}>
      <button type="button" class="group-toggle" aria-expanded={open} aria-controls={id} onClick={() => setOpen(!open)}>
        <span class="caret" aria-hidden="true">
          ▸
        </span>
        <SeverityBadge severity={group.severity} />
        <code class="rule">{group.rule}</code>
        <span class="group-count" data-testid="group-count">
          {formatCount(group.items.length)}
        </span>
        <span class="group-platforms muted">{group.platforms.map(platformName).join(', ')}</span>
        {group.fixable > 0 && <span class="fixable">{formatCount(group.fixable)} with a fix</span>}
      </button>
      {!open && <p class="group-example muted">{first.message}</p>}
      {open && (
        <div id={id}>
          <ol class="finding-items">
            {group.items.slice(0, shown).map((f, i) => (
              <FindingItem key={i} finding={f} report={report} onShowEndpoint={onShowEndpoint} />
            ))}
          </ol>
          {group.items.length > shown && (
            <button type="button" class="more" onClick={() => setShown(shown + FINDINGS_PER_STEP)}>
              Show {formatCount(Math.min(FINDINGS_PER_STEP, group.items.length - shown))} more (of {formatCount(group.items.length - shown)} left)
            </button>
          )}
        </div>
      )}
    </li>
  );
}

function FindingItem({ finding: f, report, onShowEndpoint }: { finding: RuleFinding; report: Report; onShowEndpoint(index: number): void }) {
  const endpoint = f.endpoint === null ? null : report.rows[f.endpoint]?.endpoint;
  return (
    <li class="finding" data-endpoint={f.endpoint ?? undefined}>
      <div class="finding-where">
        {endpoint ? (
          <button type="button" class="link-button" onClick={() => onShowEndpoint(f.endpoint!)} title="Show this endpoint in the table below">
            <MethodBadge method={endpoint.type} /> <PathText path={endpoint.path} />
          </button>
        ) : (
          <span class="muted">
            Whole document · <code class="pointer">{f.pointer || '/'}</code>
          </span>
        )}
      </div>
      <p class="finding-message">{f.message}</p>
      {f.fix !== null && f.fix !== undefined && (
        <p class="finding-fix">
          Fix: <code class="fix">{fixText(f.fix)}</code>
        </p>
      )}
    </li>
  );
}

function fixText(fix: unknown): string {
  const text = typeof fix === 'string' ? fix : (JSON.stringify(fix) ?? '');
  return text.length > 300 ? `${text.slice(0, 300)}…` : text;
}

/** The tool list an LLM would be given on a platform: loaded when opened, a page at a time. */
function ToolPreview({ copilot, report, onShowEndpoint }: { copilot: Copilot; report: Report; onShowEndpoint(index: number): void }) {
  const [open, setOpen] = useState(false);
  const [platform, setPlatform] = useState<string>(TOOL_PLATFORM_IDS[0]);
  const [query, setQuery] = useState('');
  const [page, setPage] = useState(0);
  const settled = useDebounced(query, 150);
  const tools = useLoad((signal) => (open ? api.tools(copilot.id, platform, signal) : Promise.resolve(null)), [open, platform, copilot.id, report]);
  const list = tools.data?.tools ?? [];
  const matching = useMemo(() => {
    const words = settled.toLowerCase().split(/\s+/).filter(Boolean);
    if (words.length === 0) return list;
    return list.filter((t) => {
      const hay = `${t.name}\n${t.path}\n${t.method}`.toLowerCase();
      return words.every((w) => hay.includes(w));
    });
  }, [list, settled]);
  const pages = Math.max(1, Math.ceil(matching.length / TOOLS_PER_PAGE));
  const current = Math.min(page, pages - 1);
  const visible = matching.slice(current * TOOLS_PER_PAGE, (current + 1) * TOOLS_PER_PAGE);

  return (
    <details class="card tools" onToggle={(e) => setOpen((e.currentTarget as HTMLDetailsElement).open)}>
      <summary>
        <h3>Tool definitions</h3>
        <span class="muted">What an LLM on each platform would be given: one tool per endpoint.</span>
      </summary>
      {open && (
        <div class="tools-body">
          <fieldset class="platform-picker">
            <legend>Platform</legend>
            {TOOL_PLATFORM_IDS.map((p) => (
              <label key={p} class="check">
                <input
                  type="radio"
                  name="tool-platform"
                  value={p}
                  checked={platform === p}
                  onChange={() => {
                    setPlatform(p);
                    setPage(0);
                  }}
                />
                {platformName(p)}
              </label>
            ))}
          </fieldset>
          <div class="field">
            <label for="tool-filter">Name or path contains</label>
            <input
              id="tool-filter"
              type="search"
              value={query}
              onInput={(e) => {
                setQuery((e.target as HTMLInputElement).value);
                setPage(0);
              }}
            />
          </div>
          {tools.loading && <Loading label={`Building the ${platformName(platform)} tools…`} />}
          <ErrorNotice error={tools.error} />
          {tools.data && (
            <>
              <p class="result-count" role="status" data-testid="tools-count" data-tools-platform={tools.data.platform}>
                {matching.length === list.length ? plural(list.length, 'tool') : `${plural(matching.length, 'tool')} of ${formatCount(list.length)}`} for{' '}
                {platformName(tools.data.platform)}
                {pages > 1 && ` · showing ${formatCount(current * TOOLS_PER_PAGE + 1)}–${formatCount(current * TOOLS_PER_PAGE + visible.length)}`}
              </p>
              <ol class="tool-list">
                {visible.map((t) => (
                  <ToolItem key={`${tools.data!.platform}:${t.endpoint}`} tool={t} onShowEndpoint={onShowEndpoint} />
                ))}
              </ol>
              {pages > 1 && (
                <nav class="pager" aria-label="Pages of tools">
                  <button type="button" disabled={current === 0} onClick={() => setPage(current - 1)}>
                    ← Previous tools
                  </button>
                  <span>
                    Page {current + 1} of {formatCount(pages)}
                  </span>
                  <button type="button" disabled={current >= pages - 1} onClick={() => setPage(current + 1)}>
                    Next tools →
                  </button>
                </nav>
              )}
            </>
          )}
        </div>
      )}
    </details>
  );
}

function ToolItem({ tool, onShowEndpoint }: { tool: ToolDefinition; onShowEndpoint(index: number): void }) {
  const field = tool.parameters !== undefined ? 'parameters' : tool.input_schema !== undefined ? 'input_schema' : 'inputSchema';
  const schema = tool.parameters ?? tool.input_schema ?? tool.inputSchema;
  return (
    <li class="tool" data-endpoint={tool.endpoint}>
      <div class="tool-head">
        <code class="tool-name">{tool.name}</code>
        <button type="button" class="link-button" onClick={() => onShowEndpoint(tool.endpoint)} title="Show this endpoint in the table below">
          <MethodBadge method={tool.method} /> <PathText path={tool.path} />
        </button>
      </div>
      <p class="tool-description">{tool.description || <span class="missing">no description</span>}</p>
      {schema !== undefined && (
        <LazyDetails
          class="tool-schema"
          summary={
            <>
              Input schema <code>{field}</code>
            </>
          }
        >
          {() => <JsonBlock value={schema} label={`Input schema of ${tool.name} (JSON)`} />}
        </LazyDetails>
      )}
    </li>
  );
}
