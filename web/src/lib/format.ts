import { escapeOf, INVISIBLE_IN_TEXT } from '../../../src/text/invisible.js';

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

/** 26214400 → "25 MB", 1536 → "1.5 KB" (binary multiples, as the service's limits are set). */
export function formatBytes(bytes: number): string {
  const units = ['bytes', 'KB', 'MB', 'GB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  const shown = unit === 0 ? formatCount(value) : new Intl.NumberFormat('en', { maximumFractionDigits: 1 }).format(value);
  return `${shown} ${units[unit]}`;
}

/**
 * A text of an API description as the dashboard shows it: control and invisible formatting
 * characters (bidi overrides, zero-width space, …; src/text/invisible.ts) written as escapes
 * (`\u202e`), tab and line feed kept. An operationId `repos\u202eteg` then reads as what it
 * holds, and cannot turn the sentence around it.
 */
export function shown(text: string): string {
  return text.replace(INVISIBLE_IN_TEXT, escapeOf);
}

/** A `JSON.parse` reviver that applies `shown` to every string value (keys are shown where they are drawn). */
export function revivedShown(_key: string, value: unknown): unknown {
  return typeof value === 'string' ? shown(value) : value;
}
