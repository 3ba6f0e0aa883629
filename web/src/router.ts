import { useEffect, useMemo, useState } from 'preact/hooks';
import { auditQueryString, parseAuditFilters, type AuditFilters } from './lib/audit-filters.js';

/**
 * Hash routes (#/copilots/…): the service serves one index.html at `/`, so the
 * dashboard's own addresses never reach the server and never collide with the API.
 */
export type CopilotTab = 'settings' | 'report' | 'versions' | 'knowledge-base';

/** The copilot list's filters, kept in the address (#/copilots?q=…&status=…) so a reload or a shared link keeps them. */
export interface CopilotFilters {
  q?: string;
  status?: 'draft' | 'live';
}

export type Route =
  | { name: 'copilots'; filters?: CopilotFilters }
  | { name: 'copilot'; id: string; tab: CopilotTab }
  | { name: 'keys' }
  | { name: 'audit'; filters: AuditFilters }
  | { name: 'not-found'; path: string };

const TABS: readonly CopilotTab[] = ['settings', 'report', 'versions', 'knowledge-base'];

export function parseRoute(hash: string): Route {
  const path = hash.replace(/^#/, '') || '/';
  if (path === '/' || path === '/copilots') return { name: 'copilots' };
  const list = /^\/(?:copilots)?\?(.*)$/.exec(path);
  if (list) return { name: 'copilots', filters: parseCopilotFilters(list[1]!) };
  if (path === '/keys') return { name: 'keys' };
  // The audit screen keeps its filters in the address: #/audit?bot_id=…&action=…&since=…&until=…
  const audit = /^\/audit(?:\?(.*))?$/.exec(path);
  if (audit) return { name: 'audit', filters: parseAuditFilters(audit[1] ?? '') };
  const m = /^\/copilots\/([^/]+)(?:\/([a-z-]+))?$/.exec(path);
  if (m) {
    const tab = (m[2] ?? 'settings') as CopilotTab;
    const id = decoded(m[1]!);
    if (TABS.includes(tab) && id !== null) return { name: 'copilot', id, tab };
  }
  return { name: 'not-found', path };
}

/** A percent-encoded segment decoded; null for a malformed escape (`%`, `%E0%A4%A`), which names no page. */
function decoded(segment: string): string | null {
  try {
    return decodeURIComponent(segment);
  } catch {
    return null;
  }
}

export function href(route: Route): string {
  switch (route.name) {
    case 'copilots': {
      const query = copilotFiltersQuery(route.filters ?? {});
      return `#/copilots${query ? `?${query}` : ''}`;
    }
    case 'copilot':
      return `#/copilots/${encodeURIComponent(route.id)}${route.tab === 'settings' ? '' : `/${route.tab}`}`;
    case 'keys':
      return '#/keys';
    case 'audit': {
      const query = auditQueryString(route.filters);
      return `#/audit${query ? `?${query}` : ''}`;
    }
    default:
      return `#${route.path}`;
  }
}

export function navigate(route: Route): void {
  location.hash = href(route);
}

/**
 * Like navigate, without a new history entry (a filter typed into the list, say): a screen
 * rewriting its own address. Only while the address still shows that screen: a screen's effect
 * runs after it is drawn, and must not take back a person (or a link) already gone elsewhere.
 */
export function replaceRoute(route: Route): void {
  const target = href(route);
  if (location.hash !== target && parseRoute(location.hash).name === route.name) location.replace(target);
}

export function parseCopilotFilters(query: string): CopilotFilters {
  const params = new URLSearchParams(query);
  const q = (params.get('q') ?? '').trim();
  const status = params.get('status');
  return { ...(q && { q }), ...((status === 'draft' || status === 'live') && { status }) };
}

/** The copilot list's filters in the address as it is now, as `copilotFiltersQuery` writes them ('' on another screen). */
export function currentCopilotFiltersQuery(): string {
  const route = parseRoute(location.hash);
  return route.name === 'copilots' ? copilotFiltersQuery(route.filters ?? {}) : '';
}

export function copilotFiltersQuery(filters: CopilotFilters): string {
  const params = new URLSearchParams();
  if (filters.q) params.set('q', filters.q);
  if (filters.status) params.set('status', filters.status);
  return params.toString();
}

export function useRoute(): Route {
  const [hash, setHash] = useState(() => location.hash);
  useEffect(() => {
    const update = () => setHash(location.hash);
    window.addEventListener('hashchange', update);
    // The address as it is now: it may have changed between the first draw and this effect (a
    // frame later), and that hashchange went unheard.
    update();
    return () => window.removeEventListener('hashchange', update);
  }, []);
  return useMemo(() => parseRoute(hash), [hash]);
}

/** A message shown once on the next screen (e.g. "Deleted …" after leaving a deleted copilot). */
let flashMessage: string | null = null;
export const flash = {
  set(message: string): void {
    flashMessage = message;
  },
  take(): string | null {
    const message = flashMessage;
    flashMessage = null;
    return message;
  },
};
