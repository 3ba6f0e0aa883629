import { useMemo, useState } from 'preact/hooks';
import { api, ApiError, type Copilot } from '../api';
import { ErrorNotice, Loading, MethodBadge } from '../components/feedback';
import { useLoad } from '../hooks';
import { formatCount, plural } from '../lib/format';
import { buildReport, filterRows, FLAG_KINDS, isFlagged, type FlagKind, type Report, type ReportRow } from '../lib/report-model';
import { href } from '../router';

/** Rows rendered at once: the largest descriptions (thousands of endpoints) are shown a page at a time. */
export const ROWS_PER_PAGE = 100;

export function ReportScreen({ copilot }: { copilot: Copilot }) {
  const result = useLoad((signal) => api.validate(copilot.id, signal), [copilot.id, copilot.swagger_url, copilot.updated_at]);
  const report = useMemo(() => (result.data ? buildReport(result.data) : null), [result.data]);
  const [onlyFlagged, setOnlyFlagged] = useState(false);
  const [kind, setKind] = useState<FlagKind | null>(null);
  const [text, setText] = useState('');
  const [page, setPage] = useState(0);
  const [open, setOpen] = useState<ReadonlySet<number>>(new Set());

  const rows = useMemo(() => (report ? filterRows(report.rows, { onlyFlagged, kind, text }) : []), [report, onlyFlagged, kind, text]);
  const pages = Math.max(1, Math.ceil(rows.length / ROWS_PER_PAGE));
  const current = Math.min(page, pages - 1);
  const visible = rows.slice(current * ROWS_PER_PAGE, (current + 1) * ROWS_PER_PAGE);

  if (result.loading && !report) return <Loading label="Validating the API description…" />;
  if (!report) {
    const missing = result.error instanceof ApiError && result.error.code === 'swagger_missing';
    return (
      <ErrorNotice error={result.error}>
        {missing ? (
          <p>
            <a href={href({ name: 'copilot', id: copilot.id, tab: 'settings' })}>Upload an API description or set its URL</a> first.
          </p>
        ) : (
          <button type="button" onClick={() => result.reload()}>
            Try again
          </button>
        )}
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

      <Readiness report={report} />
      <FindingsList report={report} />

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
          <table class="endpoints">
            <caption class="visually-hidden">Endpoints; choose a path to see its parameters, request body and responses</caption>
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
  return (
    <tbody class={`endpoint${isFlagged(row) ? ' flagged' : ''}${open ? ' open' : ''}`} data-index={row.index}>
      <tr>
        <td>
          <MethodBadge method={e.type} />
        </td>
        <td class="path">
          <button type="button" class="row-toggle" aria-expanded={open} aria-controls={detailId} onClick={onToggle}>
            <span class="caret" aria-hidden="true">
              ▸
            </span>
            <code>{e.path}</code>
          </button>
        </td>
        <td class={has('no_name') ? 'flag' : undefined} data-label="Name">
          {has('no_name') ? <Missing what="name" /> : e.name}
        </td>
        <td class={opFlag ? 'flag' : undefined} data-label="operationId">
          {has('no_operation_id') ? <Missing what="operationId" /> : <code>{e.operationId}</code>}
          {duplicate && <span class="tag">duplicate</span>}
          {invalid && <span class="tag">invalid</span>}
        </td>
        <td class={`opt desc${has('no_description') ? ' flag' : ''}`}>{has('no_description') ? <Missing what="description" /> : e.description}</td>
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

function JsonBlock({ value }: { value: Json }) {
  const text = JSON.stringify(value, null, 2) ?? 'null';
  const cut = text.length > 50_000;
  return <pre class="json">{cut ? `${text.slice(0, 50_000)}\n… (${formatCount(text.length - 50_000)} more characters)` : text}</pre>;
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
              <span class={`severity severity-${f.severity}`}>{f.severity}</span> <code>{f.rule}</code> {f.message}
              {f.fix !== null && f.fix !== undefined && (
                <>
                  {' '}
                  Fix: <code>{fixText(f.fix)}</code>
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
      {e.requestBody == null ? <p class="muted">None.</p> : <JsonBlock value={e.requestBody} />}
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
                <details>
                  <summary>
                    <strong>{code}</strong> {typeof r.description === 'string' ? r.description : typeof r.$ref === 'string' ? r.$ref : ''}
                    {types.length > 0 && <span class="muted"> · {types.join(', ')}</span>}
                  </summary>
                  <JsonBlock value={response} />
                </details>
              </li>
            );
          })}
        </ul>
      )}
    </div>
  );
}

const PLATFORM_NAMES: Record<string, string> = {
  openai: 'OpenAI',
  gpt_actions: 'GPT Actions',
  anthropic: 'Anthropic',
  gemini: 'Gemini',
  mcp: 'MCP',
  copilot_studio: 'Copilot Studio',
};

/** The readiness score and a verdict per platform. */
function Readiness({ report }: { report: Report }) {
  if (report.score === null) return null;
  return (
    <section class="readiness" aria-label="Readiness">
      <p class="readiness-score">
        <span class="stat-value" data-stat="score">
          {report.score}
        </span>
        <span class="stat-label">/100 LLM readiness</span>
      </p>
      <ul class="platforms" aria-label="Platforms">
        {report.platforms.map((p) => (
          <li key={p.platform} class={p.ready ? 'stat-ok' : 'stat-warn'} data-platform={p.platform} data-ready={p.ready ? 'true' : 'false'}>
            <strong>{PLATFORM_NAMES[p.platform] ?? p.platform}</strong> {p.ready ? 'ready' : `${formatCount(p.blocking)} blocking`}
            {p.warnings > 0 && <span class="muted"> · {plural(p.warnings, 'warning')}</span>}
          </li>
        ))}
      </ul>
    </section>
  );
}

/** Findings listed at once; the rest are counted. */
export const FINDINGS_SHOWN = 200;

/** Every rule finding: severity, rule, endpoint, message and the computed fix. */
function FindingsList({ report }: { report: Report }) {
  const { findings } = report;
  if (findings.length === 0) return null;
  const shown = findings.slice(0, FINDINGS_SHOWN);
  return (
    <details class="findings">
      <summary data-testid="findings-count">{plural(findings.length, 'finding')}</summary>
      <div class="table-wrap">
        <table class="findings-table">
          <thead>
            <tr>
              <th scope="col">Severity</th>
              <th scope="col">Rule</th>
              <th scope="col">Where</th>
              <th scope="col">Why</th>
              <th scope="col">Fix</th>
            </tr>
          </thead>
          <tbody>
            {shown.map((f, i) => {
              const endpoint = f.endpoint === null ? null : report.rows[f.endpoint]?.endpoint;
              return (
                <tr key={i} data-rule={f.rule} data-severity={f.severity}>
                  <td>
                    <span class={`severity severity-${f.severity}`}>{f.severity}</span>
                  </td>
                  <td>
                    <code>{f.rule}</code>
                  </td>
                  <td>
                    {endpoint ? (
                      <>
                        {endpoint.type} <code>{endpoint.path}</code>
                      </>
                    ) : (
                      <code>{f.pointer || '/'}</code>
                    )}
                  </td>
                  <td>
                    {f.message} <span class="muted">({f.platforms.join(', ')})</span>
                  </td>
                  <td>{f.fix === null || f.fix === undefined ? '' : <code>{fixText(f.fix)}</code>}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
      {findings.length > shown.length && <p class="muted">… and {formatCount(findings.length - shown.length)} more.</p>}
    </details>
  );
}

function fixText(fix: unknown): string {
  const text = typeof fix === 'string' ? fix : (JSON.stringify(fix) ?? '');
  return text.length > 300 ? `${text.slice(0, 300)}…` : text;
}
