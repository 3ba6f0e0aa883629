import { randomInt } from 'node:crypto';

const ALPHANUMERIC = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** `length` characters of [A-Za-z0-9] from the cryptographic generator. */
export function randomAlphanumeric(length: number): string {
  let out = '';
  for (let i = 0; i < length; i++) out += ALPHANUMERIC[randomInt(ALPHANUMERIC.length)];
  return out;
}

let lastMicros = 0;

/**
 * Current UTC time as the wire format wants it: microseconds and a trailing Z,
 * e.g. 2023-08-20T08:15:21.123456Z. Strictly increasing within one process.
 */
export function nowTimestamp(): string {
  let micros = Math.floor((performance.timeOrigin + performance.now()) * 1000);
  if (micros <= lastMicros) micros = lastMicros + 1;
  lastMicros = micros;
  return formatMicros(micros);
}

export function formatMicros(micros: number): string {
  const ms = Math.floor(micros / 1000);
  const iso = new Date(ms).toISOString(); // 2023-08-20T08:15:21.123Z
  return `${iso.slice(0, 19)}.${String(micros % 1_000_000).padStart(6, '0')}Z`;
}

/** True for a string in the wire timestamp format. */
export function isTimestamp(value: string): boolean {
  return /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/.test(value);
}

/** The wire timestamp of `days` whole days before now. */
export function daysAgo(days: number): string {
  return formatMicros(Math.floor((performance.timeOrigin + performance.now() - days * 86_400_000) * 1000));
}

/** The wire timestamp `ms` milliseconds from now (negative: ago). */
export function timestampIn(ms: number): string {
  return formatMicros(Math.floor((performance.timeOrigin + performance.now() + ms) * 1000));
}
