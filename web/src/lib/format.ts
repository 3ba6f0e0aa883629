const number = new Intl.NumberFormat('en');

export function formatCount(n: number): string {
  return number.format(n);
}

export function plural(n: number, one: string, many = `${one}s`): string {
  return `${formatCount(n)} ${n === 1 ? one : many}`;
}

/** "2023-08-20T08:15:21.000000Z" → "2023-08-20 08:15 UTC" (the API's timestamps are UTC with microseconds). */
export function formatTimestamp(ts: string | null | undefined): string {
  if (!ts) return '—';
  const m = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2})/.exec(ts);
  return m ? `${m[1]} ${m[2]} UTC` : ts;
}
