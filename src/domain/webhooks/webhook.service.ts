import type { FastifyBaseLogger } from 'fastify';
import { createHmac, randomUUID } from 'node:crypto';
import { FetchError, fetchGuarded, type FetchPolicy } from '../../net/guarded-fetch.js';
import type { Db, WebhookDeliveryRow } from '../../storage/schema.js';
import * as deliveries from '../../storage/webhook.repository.js';
import { decodeCursor, pageByCreation } from '../cursor.js';
import { clockNow, nowTimestamp, timestampIn } from '../ids.js';
import type { WebhookDelivery } from '../wire.js';

/**
 * Webhooks (issue 16 §1): an event the service wants someone told of (today: an API
 * description changed in a way that breaks a copilot calling it) becomes a delivery row at
 * once, and the delivery job POSTs it to WEBHOOK_URL through the guarded fetcher, signed, with
 * retries and backoff. Every instance runs the job; a delivery's lease makes one send it.
 */

/** Attempts before a delivery is given up (`failed`). */
export const MAX_ATTEMPTS = 8;

export interface WebhookTarget {
  url: string;
  secret: string;
}

/** Queues `event` for the webhook, if one is configured; returns the delivery id. */
export async function enqueueWebhook(db: Db, target: WebhookTarget | null, event: string, copilotId: string | null, data: unknown): Promise<string | null> {
  if (!target) return null;
  const id = randomUUID();
  const now = nowTimestamp();
  await deliveries.insertDelivery(db, {
    id,
    event,
    copilot_id: copilotId,
    url: target.url,
    payload: JSON.stringify({ id, event, created_at: now, copilot_id: copilotId, data }),
    state: 'pending',
    attempts: 0,
    next_attempt_at: now,
    lease_owner: null,
    lease_expires_at: null,
    last_status: null,
    last_error: null,
    created_at: now,
    delivered_at: null,
  });
  return id;
}

/**
 * The signature a receiver checks: HMAC-SHA256 with WEBHOOK_SECRET over `<timestamp>.<body>`
 * (the `x-cms-timestamp` header, a dot, the raw body), hex, as `x-cms-signature: sha256=<hex>`.
 */
export function signWebhook(secret: string, timestamp: string, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`;
}

export interface DeliveryDeps {
  policy: FetchPolicy;
  secret: string;
  owner: string;
  /** The wait after the first failed attempt; each next one doubles it, up to an hour. */
  retryBaseMs: number;
  /** Where a failed attempt is said (the delivery job's logger): the receiver's origin only, its path may be its secret. */
  logger?: Pick<FastifyBaseLogger, 'info' | 'warn'>;
}

/** Sends one delivery if it is still due and no other instance has it; true when an attempt was made. */
export async function attemptDelivery(db: Db, deps: DeliveryDeps, id: string): Promise<boolean> {
  const row = await deliveries.claimDelivery(db, id, deps.owner, nowTimestamp(), timestampIn(2 * deps.policy.timeoutMs + 60_000));
  if (!row) return false;
  // The claim counted this attempt; past the last, an attempt an instance stopping cut off was the last.
  const attempts = Number(row.attempts);
  if (attempts > MAX_ATTEMPTS) {
    await deliveries.recordAttempt(db, row.id, deps.owner, {
      state: 'failed',
      attempts: MAX_ATTEMPTS,
      next_attempt_at: row.next_attempt_at,
      last_status: row.last_status,
      last_error: 'Its last attempt was cut off (its instance stopped during it); no further attempt.',
      delivered_at: null,
    });
    return true;
  }
  const timestamp = String(Math.floor(clockNow() / 1000));
  let status: number | null = null;
  let error: string | null = null;
  try {
    const answer = await fetchGuarded(row.url, deps.policy, {
      post: {
        body: row.payload,
        headers: {
          'content-type': 'application/json',
          'x-cms-event': row.event,
          'x-cms-delivery': row.id,
          'x-cms-timestamp': timestamp,
          'x-cms-signature': signWebhook(deps.secret, timestamp, row.payload),
        },
      },
      // A 2xx says it arrived: whatever body the receiver sends after is not read.
      statusOnly: true,
    });
    status = answer.status;
  } catch (err) {
    if (!(err instanceof FetchError)) throw err;
    status = err.status ?? null;
    error = err.message;
  }
  const delivered = error === null;
  const gaveUp = !delivered && attempts >= MAX_ATTEMPTS;
  // A receiver that refuses was said nowhere but in the deliveries' list (operator sweep).
  if (!delivered) {
    const said = { delivery: row.id, receiver: webhookUrlOrigin(row.url), attempt: attempts, status, reason: error };
    if (gaveUp) deps.logger?.warn(said, `A webhook delivery failed for good after ${attempts} attempts`);
    else deps.logger?.info(said, 'A webhook delivery attempt failed; it is tried again later');
  }
  await deliveries.recordAttempt(db, row.id, deps.owner, {
    state: delivered ? 'delivered' : gaveUp ? 'failed' : 'pending',
    attempts,
    next_attempt_at: delivered || gaveUp ? row.next_attempt_at : timestampIn(Math.min(3_600_000, deps.retryBaseMs * 2 ** (attempts - 1))),
    last_status: status,
    last_error: error,
    delivered_at: delivered ? nowTimestamp() : null,
  });
  return true;
}

/** Deliveries due now, oldest first (the job's batch). */
export function dueDeliveries(db: Db, limit: number): Promise<string[]> {
  return deliveries.findDueDeliveries(db, nowTimestamp(), limit);
}

/**
 * WEBHOOK_URL as a key limited to some bots sees it: its origin (scheme, host, port) and `/…`,
 * whatever its path. The URL is the operator's, and the path or query of a hook URL is often
 * its secret (Slack's `/services/T…/B…/<token>`, a `?sig=`); `/…` is shown even for an empty
 * path, so the form says nothing of what was cut. A URL that does not parse shows as `…`.
 */
export function webhookUrlOrigin(url: string): string {
  try {
    const { origin } = new URL(url);
    return origin === 'null' ? '…' : `${origin}/…`;
  } catch {
    return '…';
  }
}

function deliveryOf(row: WebhookDeliveryRow, originOnly: boolean): WebhookDelivery {
  return {
    id: row.id,
    event: row.event,
    copilot_id: row.copilot_id,
    url: originOnly ? webhookUrlOrigin(row.url) : row.url,
    state: row.state as WebhookDelivery['state'],
    attempts: Number(row.attempts),
    last_status: row.last_status === null ? null : Number(row.last_status),
    last_error: row.last_error,
    created_at: row.created_at,
    next_attempt_at: row.state === 'pending' ? row.next_attempt_at : null,
    delivered_at: row.delivered_at,
  };
}

/**
 * GET /backend/api/webhooks/deliveries: newest first, a page at a time. A key limited to some
 * bots (`copilots`) sees their deliveries only, each URL as its origin (webhookUrlOrigin).
 */
export async function listDeliveries(db: Db, page: { limit: number; cursor?: string; copilots?: readonly string[] }) {
  const after = page.cursor === undefined ? undefined : decodeCursor('deliveries', page.cursor);
  const { rows, nextCursor } = pageByCreation(
    await deliveries.listDeliveries(db, { limit: page.limit + 1, after, copilots: page.copilots }),
    page.limit,
    'deliveries',
  );
  const originOnly = page.copilots !== undefined;
  return { items: rows.map((row) => deliveryOf(row, originOnly)), nextCursor };
}
