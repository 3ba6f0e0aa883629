/**
 * The audit screen's filters, kept in the dashboard's address (`#/audit?bot_id=…&action=…&since=…&until=…`)
 * with the API's own parameter names, so a filtered view can be reloaded, bookmarked and shared.
 */

/** The actions the service audits, in its order: the server's own list. */
export { AUDIT_ACTIONS } from '../../../src/domain/audit-actions.js';

export const ACTION_LABELS: Record<string, string> = {
  'key.create': 'Key created',
  'key.revoke': 'Key revoked',
  'copilot.create': 'Copilot created',
  'copilot.update': 'Copilot updated',
  'copilot.delete': 'Copilot deleted',
  'copilot.purge': 'Copilot purged',
  'api_description.upload': 'API description uploaded',
  'api_description.sync': 'API description synced',
  'knowledgebase.add_links': 'Links added',
  'knowledgebase.delete_links': 'Links deleted',
  'knowledgebase.crawl': 'Crawl started',
  'knowledgebase.cancel_crawl': 'Crawl cancelled',
  'knowledgebase.refresh': 'Links refreshed',
};

export interface AuditFilters {
  bot_id?: string;
  action?: string;
  /** ISO 8601, UTC: entries at or after. */
  since?: string;
  /** ISO 8601, UTC: entries before. */
  until?: string;
}

const NAMES = ['bot_id', 'action', 'since', 'until'] as const;

/** The filters of a query string (`bot_id=…&action=…`); unknown names and empty values are dropped. */
export function parseAuditFilters(query: string): AuditFilters {
  const params = new URLSearchParams(query.replace(/^\?/, ''));
  const out: AuditFilters = {};
  for (const name of NAMES) {
    const value = params.get(name)?.trim();
    if (value) out[name] = value;
  }
  return out;
}

/** The query string of the filters, in a fixed order, without a leading `?` ("" when none is set). */
export function auditQueryString(filters: AuditFilters): string {
  const params = new URLSearchParams();
  for (const name of NAMES) {
    const value = filters[name]?.trim();
    if (value) params.set(name, value);
  }
  return params.toString();
}

/** An ISO time (UTC) as a `datetime-local` input shows it: "2026-01-31T12:00:00Z" → "2026-01-31T12:00" ("" when unreadable). */
export function toUtcInput(iso: string | undefined): string {
  if (!iso) return '';
  const ms = Date.parse(iso);
  if (Number.isNaN(ms)) return '';
  return new Date(ms).toISOString().slice(0, 16);
}

/** A `datetime-local` value read as UTC: "2026-01-31T12:00" → "2026-01-31T12:00:00Z" (undefined when empty or unreadable). */
export function fromUtcInput(value: string): string | undefined {
  const m = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2})(?::(\d{2}))?/.exec(value.trim());
  if (!m) return undefined;
  const iso = `${m[1]}T${m[2]}:${m[3] ?? '00'}Z`;
  return Number.isNaN(Date.parse(iso)) ? undefined : iso;
}

/** One line per detail of an entry ("links: a, b"), client address last. */
export function describeDetails(details: Record<string, unknown>): Array<[string, string]> {
  const text = (value: unknown): string => {
    if (value === null) return 'all';
    if (Array.isArray(value)) return value.map((v) => (typeof v === 'string' ? v : JSON.stringify(v))).join(', ');
    if (typeof value === 'string') return value;
    return JSON.stringify(value);
  };
  const entries = Object.entries(details).filter(([k, v]) => k !== 'client_ip' && v !== undefined && v !== '');
  const lines = entries.map(([k, v]): [string, string] => [k.replace(/_/g, ' '), text(v)]);
  if (typeof details.client_ip === 'string') lines.push(['from', details.client_ip]);
  return lines;
}
