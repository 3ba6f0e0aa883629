import { useEffect, useState } from 'preact/hooks';

/**
 * Hash routes (#/copilots/…): the service serves one index.html at `/`, so the
 * dashboard's own addresses never reach the server and never collide with the API.
 */
export type CopilotTab = 'settings' | 'report' | 'knowledge-base';

export type Route = { name: 'copilots' } | { name: 'copilot'; id: string; tab: CopilotTab } | { name: 'not-found'; path: string };

const TABS: readonly CopilotTab[] = ['settings', 'report', 'knowledge-base'];

export function parseRoute(hash: string): Route {
  const path = hash.replace(/^#/, '') || '/';
  if (path === '/' || path === '/copilots') return { name: 'copilots' };
  const m = /^\/copilots\/([^/]+)(?:\/([a-z-]+))?$/.exec(path);
  if (m) {
    const tab = (m[2] ?? 'settings') as CopilotTab;
    if (TABS.includes(tab)) return { name: 'copilot', id: decodeURIComponent(m[1]!), tab };
  }
  return { name: 'not-found', path };
}

export function href(route: Route): string {
  switch (route.name) {
    case 'copilots':
      return '#/copilots';
    case 'copilot':
      return `#/copilots/${encodeURIComponent(route.id)}${route.tab === 'settings' ? '' : `/${route.tab}`}`;
    default:
      return `#${route.path}`;
  }
}

export function navigate(route: Route): void {
  location.hash = href(route);
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const update = () => setRoute(parseRoute(location.hash));
    window.addEventListener('hashchange', update);
    return () => window.removeEventListener('hashchange', update);
  }, []);
  return route;
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
