/**
 * The audit log (DESIGN §7): every sensitive action — who (key id; null for the operator's
 * CLI), what, which bot, when — written in the same transaction as the action itself, so an
 * action and its entry commit or fail together.
 */
import { AppError } from '../errors.js';
import * as audit from '../storage/audit.repository.js';
import type { Db } from '../storage/schema.js';
import type { Principal } from './auth/api-keys.js';
import { pageOf } from './cursor.js';
import { nowTimestamp } from './ids.js';
import { AUDIT_ACTIONS, type AuditAction, type AuditEntry } from './wire.js';

export { AUDIT_ACTIONS, type AuditAction, type AuditEntry };

export async function recordAudit(
  db: Db,
  actor: Principal | undefined,
  action: AuditAction,
  botId: string | null,
  details: Record<string, unknown>,
): Promise<void> {
  await audit.insertAuditEntry(db, {
    at: nowTimestamp(),
    actor_key_id: actor?.kind === 'key' ? actor.keyId : null,
    action,
    bot_id: botId,
    // The client's address (behind a proxy, as TRUST_PROXY lets the HTTP layer read it).
    details: JSON.stringify(actor?.kind === 'key' && actor.clientIp !== undefined ? { ...details, client_ip: actor.clientIp } : details),
  });
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

function toWireTime(field: string, value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const ms = Date.parse(value);
  if (!/^\d{4}-\d{2}-\d{2}/.test(value) || Number.isNaN(ms)) {
    throw new AppError('invalid_request', `${field} must be an ISO 8601 date-time such as 2026-01-31T12:00:00Z.`, { field });
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
 * for another bot is 403, and entries of no bot (keys made by unlimited keys) are not shown.
 */
export async function listAudit(db: Db, query: AuditQuery, viewer?: Principal): Promise<{ items: AuditEntry[]; nextCursor: string | null }> {
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
  const rows = await audit.listAuditEntries(db, {
    limit: query.limit + 1,
    beforeId,
    botIds: botId !== undefined ? [botId] : (limitedTo ?? undefined),
    action: query.action,
    since: toWireTime('since', query.since),
    until: toWireTime('until', query.until),
  });
  const page = pageOf(rows, query.limit, (last) => String(Number(last.id)));
  return { items: page.rows.map(toEntry), nextCursor: page.nextCursor };
}

function toEntry(row: Awaited<ReturnType<typeof audit.listAuditEntries>>[number]): AuditEntry {
  return {
    id: Number(row.id),
    at: row.at,
    actor_key_id: row.actor_key_id,
    action: row.action,
    bot_id: row.bot_id,
    // Written by recordAudit from an object.
    details: JSON.parse(row.details),
  };
}
