import { randomInt } from 'node:crypto';

const ALPHANUMERIC = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** `length` characters of [A-Za-z0-9] from the cryptographic generator. */
export function randomAlphanumeric(length: number): string {
  let out = '';
  for (let i = 0; i < length; i++) out += ALPHANUMERIC[randomInt(ALPHANUMERIC.length)];
  return out;
}

let lastMicros = 0;
let lastWallMs = 0;

/**
 * How far the database server's clock is from this machine's (PostgreSQL: measured at start and
 * every minute, jobs/database-clock.ts), added to every reading: instances on one database then
 * time leases, due work and retention by one clock, whatever their machines' clocks say.
 */
let clockOffsetMs = 0;

/**
 * Follows the database server's clock, `offsetMs` ahead of this machine's. A change of a second
 * or less is the measurement's noise, not followed (timestamps stay as they were read). Returns
 * whether the offset changed.
 */
export function followClockOffset(offsetMs: number): boolean {
  if (Math.abs(offsetMs - clockOffsetMs) <= 1000) return false;
  clockOffsetMs = Math.round(offsetMs);
  return true;
}

/** The service's clock in milliseconds: this machine's wall clock, read now, plus the database server's offset. */
export const clockNow = (): number => Date.now() + clockOffsetMs;

/**
 * Current UTC time as the wire format wants it: microseconds and a trailing Z,
 * e.g. 2023-08-20T08:15:21.123456Z. Read from the service's clock (clockNow) at every call, so a clock that NTP
 * steps is followed at once (a start-up reading plus a monotonic timer kept a boot-time error for
 * the life of the process). Strictly increasing while the clock does not go back (the
 * microseconds count the calls within a millisecond); a clock stepped back is followed back.
 */
export function nowTimestamp(): string {
  const wallMs = clockNow();
  const micros = wallMs < lastWallMs ? wallMs * 1000 : Math.max(wallMs * 1000, lastMicros + 1);
  lastWallMs = wallMs;
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
  return formatMicros((clockNow() - days * 86_400_000) * 1000);
}

/** The wire timestamp `ms` milliseconds from now (negative: ago). */
export function timestampIn(ms: number): string {
  return formatMicros(Math.floor((clockNow() + ms) * 1000));
}
