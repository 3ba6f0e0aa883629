/**
 * The `rel="next"` target of an RFC 8288 `Link` header (the API pages lists with it),
 * or null. Several links may be comma-separated; parameters may come in any order.
 */
export function nextLinkTarget(header: string | null | undefined): string | null {
  if (!header) return null;
  for (const match of header.matchAll(/<([^>]*)>([^<]*)/g)) {
    const rel = /;\s*rel\s*=\s*(?:"([^"]*)"|([^\s;,]+))/i.exec(match[2] ?? '');
    const values = (rel?.[1] ?? rel?.[2] ?? '').toLowerCase().split(/\s+/);
    if (values.includes('next')) return match[1] ?? null;
  }
  return null;
}

/** The `cursor` query parameter of a next-page target (the only part the dashboard reuses). */
export function nextCursor(header: string | null | undefined): string | null {
  const target = nextLinkTarget(header);
  if (target === null) return null;
  const query = target.includes('?') ? target.slice(target.indexOf('?') + 1) : '';
  return new URLSearchParams(query).get('cursor');
}
