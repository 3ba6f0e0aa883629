/**
 * The audit log (DESIGN §7): every sensitive action — who (key id; null for the operator's
 * CLI), what, which bot, when — written in the same transaction as the action itself, so an
 * action and its entry commit or fail together.
 */
import { AppError } from '../errors.js';
import * as audit from '../storage/audit.repository.js';
import type { Storage } from '../storage/database.js';
import type { Db } from '../storage/schema.js';
import type { Principal } from './auth/api-keys.js';
import { nowTimestamp } from './ids.js';
import { loggedUrl } from './knowledgebase/links.js';
import { asScan } from './scans.js';
import { AUDIT_ACTIONS, type AuditAction, type AuditEntry } from './wire.js';

export { AUDIT_ACTIONS, type AuditAction, type AuditEntry };

/**
 * The most characters (as JSON) of an entry's details. What a request names is bounded, but
 * not so tightly that the entry is: 1,000 links of 2,048 characters are 2 MB, written anew by
 * every request. Past it, each list keeps its first items and `<name>_total` says how many it had.
 */
export const AUDIT_DETAILS_MAX_CHARS = 64 * 1024;
/** The most characters of details one page of the audit log answers (at least one entry): the rest are on the next page. */
export const AUDIT_PAGE_MAX_CHARS = 4 * 1024 * 1024;

/**
 * `details` within AUDIT_DETAILS_MAX_CHARS: when they are longer, the lists among them are cut,
 * each followed by `<name>_total`. What the other fields leave is shared among the lists, the
 * shortest first, so a short list stays whole and a long one gets the rest.
 */
export function boundedDetails(details: Record<string, unknown>, max = AUDIT_DETAILS_MAX_CHARS): Record<string, unknown> {
  if (JSON.stringify(details).length <= max) return details;
  const lists = Object.entries(details)
    .filter((entry): entry is [string, unknown[]] => Array.isArray(entry[1]))
    .map(([key, items]) => ({ key, items, chars: JSON.stringify(items).length }))
    .sort((a, b) => a.chars - b.chars);
  const listed = new Set(lists.map((l) => l.key));
  const rest = JSON.stringify(Object.fromEntries(Object.entries(details).filter(([k]) => !listed.has(k)))).length;
  // Each list's name twice (itself and its `_total`), quotes, colons and the total's digits.
  let room = max - rest - lists.reduce((n, l) => n + 2 * l.key.length + 32, 0);
  const kept = new Map<string, number>();
  lists.forEach(({ key, items, chars }, i) => {
    const share = Math.max(0, Math.floor(room / (lists.length - i)));
    let used = 2;
    let n = 0;
    if (chars <= share) [used, n] = [chars, items.length];
    else {
      for (; n < items.length; n++) {
        const next = JSON.stringify(items[n] ?? null).length + 1;
        if (used + next > share) break;
        used += next;
      }
    }
    kept.set(key, n);
    room -= used;
  });
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(details)) {
    const n = kept.get(key);
    if (n === undefined || !Array.isArray(value)) {
      out[key] = value;
      continue;
    }
    out[key] = value.slice(0, n);
    if (n < value.length) out[`${key}_total`] = value.length;
  }
  return out;
}

/**
 * Writes an entry: of one bot, of none (null), or of several (a key limited to them): one entry
 * per bot, so that a key limited to any of them reads it among its bots' entries. Several share
 * the details' bound (each at least 1 Ki characters): a key naming 1,000 bots writes 1,000
 * entries, not 1,000 copies of its whole list.
 */
export async function recordAudit(
  db: Db,
  actor: Principal | undefined,
  action: AuditAction,
  bots: string | null | readonly string[],
  details: Record<string, unknown>,
): Promise<void> {
  const at = nowTimestamp();
  const actorKeyId = actor?.kind === 'key' ? actor.keyId : null;
  const botIds = bots === null || typeof bots === 'string' ? [bots] : bots;
  const max = Math.max(1024, Math.floor(AUDIT_DETAILS_MAX_CHARS / Math.max(1, botIds.length)));
  // The client's address (behind a proxy, as TRUST_PROXY lets the HTTP layer read it).
  const written = JSON.stringify(
    boundedDetails(actor?.kind === 'key' && actor.clientIp !== undefined ? { ...details, client_ip: actor.clientIp } : details, max),
  );
  await audit.insertAuditEntries(
    db,
    botIds.map((botId) => ({ at, actor_key_id: actorKeyId, action, bot_id: botId, details: written })),
  );
}

/**
 * A copilot that turns enhanced_privacy on keeps no URL in its earlier audit entries other than
 * as its new ones are written (DESIGN §3): every http(s) URL in their details as logged
 * (loggedUrl: no query string or fragment, no e-mail address or credential in its path).
 */
export async function redactAuditUrls(db: Db, botId: string): Promise<void> {
  const redact = (value: unknown): unknown => {
    if (typeof value === 'string') return /^https?:\/\//i.test(value) ? loggedUrl(value) : value;
    if (Array.isArray(value)) return value.map(redact);
    if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, redact(item)]));
    return value;
  };
  await audit.rewriteAuditDetails(db, botId, (details) => JSON.stringify(redact(JSON.parse(details))));
}

export interface AuditQuery {
  limit: number;
  cursor?: string;
  botId?: string;
  action?: AuditAction;
  /** ISO 8601 date-times: entries at or after `since`, before `until`. */
  since?: string;
  until?: string;
}

/**
 * An ISO 8601 date, or date-time with an optional fraction and offset (none: UTC). `T` may be
 * lower case or a space, as RFC 3339 allows.
 */
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(\.\d+)?)?([Zz]|[+-](\d{2}):?(\d{2}))?)?$/;

/** The instant a date-time names, or NaN for one no calendar has (`Date.parse` read 2024-02-30 as 1 March). */
function instant(value: string): number {
  const m = DATE_TIME.exec(value);
  if (!m) return Number.NaN;
  const [, year, month, day, hour = '00', minute = '00', second = '00', fraction = '', zone = 'Z', zoneHours = '00', zoneMinutes = '00'] = m;
  const midnight = new Date(Date.parse(`${year}-${month}-${day}T00:00:00Z`));
  const realDay = midnight.getUTCMonth() + 1 === Number(month) && midnight.getUTCDate() === Number(day);
  const realTime = Number(hour) < 24 && Number(minute) < 60 && Number(second) < 60 && Number(zoneHours) < 24 && Number(zoneMinutes) < 60;
  if (!realDay || !realTime) return Number.NaN;
  const offset = /^[Zz]$/.test(zone) ? 'Z' : `${zone[0]}${zoneHours}:${zoneMinutes}`;
  return Date.parse(`${year}-${month}-${day}T${hour}:${minute}:${second}${fraction.slice(0, 4)}${offset}`);
}

function toWireTime(field: string, value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const ms = instant(value);
  if (Number.isNaN(ms)) {
    throw new AppError('invalid_request', `${field} must be an ISO 8601 date-time such as 2026-01-31T12:00:00Z (or a date, 2026-01-31).`, { field });
  }
  // The whole seconds in UTC from the instant, the fraction as written (an offset is whole
  // minutes): microseconds as a number lose precision past year 2255.
  const seconds = Math.floor(ms / 1000) * 1000;
  if (seconds < FIRST_SECOND) return '0000-01-01T00:00:00.000000Z';
  if (seconds > LAST_SECOND) return '9999-12-31T23:59:59.999999Z';
  const fraction = /\.(\d{1,6})/.exec(value)?.[1] ?? '';
  return `${new Date(seconds).toISOString().slice(0, 19)}.${fraction.padEnd(6, '0')}Z`;
}

/** The first and last whole seconds that the wire's four-digit years can write. */
const FIRST_SECOND = Date.parse('0000-01-01T00:00:00Z');
const LAST_SECOND = Date.parse('9999-12-31T23:59:59Z');

/**
 * Newest first, paged by id. A key limited to bots reads only its bots' entries: asking
 * for another bot is 403, and entries of no bot (keys for every bot) are not shown. A time
 * range is read newest first for as long as it matches little: a scan (scans.ts), in the
 * viewing key's turns; other pages are index reads on `readDb`.
 */
export async function listAudit(
  storage: Pick<Storage, 'readDb' | 'scan'>,
  query: AuditQuery,
  viewer?: Principal,
): Promise<{ items: AuditEntry[]; nextCursor: string | null }> {
  let beforeId: number | undefined;
  if (query.cursor !== undefined) {
    if (!/^\d{1,15}$/.test(query.cursor)) throw new AppError('invalid_cursor', 'The cursor is not one this service issued.');
    beforeId = Number(query.cursor);
  }
  const limitedTo = viewer?.kind === 'key' ? viewer.bots : null;
  const botId = query.botId?.toLowerCase();
  if (limitedTo !== null && botId !== undefined && !limitedTo.includes(botId)) {
    throw new AppError('forbidden', 'This API key is limited to other bots.', { bot_id: query.botId });
  }
  const filters = {
    beforeId,
    botIds: botId !== undefined ? [botId] : (limitedTo ?? undefined),
    action: query.action,
    since: toWireTime('since', query.since),
    until: toWireTime('until', query.until),
  };
  const read = async (db: Db) => {
    // The page's entries by their size first, so that no more details are read than a page answers.
    const sizes = await audit.listAuditSizes(db, { ...filters, limit: query.limit + 1 });
    let fit = 0;
    for (let chars = 0; fit < Math.min(sizes.length, query.limit); fit++) {
      chars += Number(sizes[fit]!.chars);
      if (fit > 0 && chars > AUDIT_PAGE_MAX_CHARS) break;
    }
    const ids = sizes.slice(0, fit).map((s) => Number(s.id));
    const rows = ids.length === 0 ? [] : await audit.listAuditEntriesById(db, ids);
    return { items: rows.map(toEntry), nextCursor: fit < sizes.length ? String(ids.at(-1)) : null };
  };
  if (filters.since === undefined && filters.until === undefined) return read(storage.readDb);
  return asScan(storage, viewer?.kind === 'key' ? `key:${viewer.keyId}` : 'anonymous', read, {
    waiting: (n) => `This API key has ${n} audit ranges waiting already, its limit; try again when they have answered.`,
    timedOut: (ms) => `This audit range ran past its time limit of ${ms} ms and was stopped; filter by bot_id or action as well.`,
  });
}

function toEntry(row: Awaited<ReturnType<typeof audit.listAuditEntriesById>>[number]): AuditEntry {
  return {
    id: Number(row.id),
    at: row.at,
    actor_key_id: row.actor_key_id,
    action: row.action,
    bot_id: row.bot_id,
    // Written by recordAudit from an object (bounded since 0.1: an entry written before is bounded here).
    details: boundedDetails(JSON.parse(row.details)),
  };
}
