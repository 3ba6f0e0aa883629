import type { Db, WebhookDeliveryRow } from './schema.js';
import { pastKey } from './keyset.js';

export async function insertDelivery(db: Db, row: WebhookDeliveryRow): Promise<void> {
  await db.insertInto('webhook_deliveries').values(row).execute();
}

/** A purged copilot's deliveries, delivered or not: their payloads are taken from its API description. */
export async function deleteDeliveriesOf(db: Db, copilotId: string): Promise<void> {
  await db.deleteFrom('webhook_deliveries').where('copilot_id', '=', copilotId).execute();
}

/** Deletes up to `limit` deliveries queued before `cutoff`, whatever their state; how many. */
export async function deleteDeliveriesBefore(db: Db, cutoff: string, limit: number): Promise<number> {
  const result = await db
    .deleteFrom('webhook_deliveries')
    .where('id', 'in', (eb) => eb.selectFrom('webhook_deliveries').select('id').where('created_at', '<', cutoff).orderBy('created_at').limit(limit))
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** Ids of pending deliveries whose attempt is due and not leased, oldest first. */
export async function findDueDeliveries(db: Db, now: string, limit: number): Promise<string[]> {
  const rows = await db
    .selectFrom('webhook_deliveries')
    .select('id')
    .where('state', '=', 'pending')
    .where('next_attempt_at', '<=', now)
    .where((eb) => eb.or([eb('lease_expires_at', 'is', null), eb('lease_expires_at', '<', now)]))
    .orderBy('next_attempt_at')
    .limit(limit)
    .execute();
  return rows.map((r) => r.id);
}

/**
 * Takes the delivery's lease when it is still due and free (one statement: one instance wins),
 * counting the attempt it starts: one cut off by its instance stopping counts too. The row, or undefined.
 */
export async function claimDelivery(db: Db, id: string, owner: string, now: string, leaseUntil: string): Promise<WebhookDeliveryRow | undefined> {
  return db
    .updateTable('webhook_deliveries')
    .set((eb) => ({ lease_owner: owner, lease_expires_at: leaseUntil, attempts: eb('attempts', '+', 1) }))
    .where('id', '=', id)
    .where('state', '=', 'pending')
    .where('next_attempt_at', '<=', now)
    .where((eb) => eb.or([eb('lease_expires_at', 'is', null), eb('lease_expires_at', '<', now)]))
    .returningAll()
    .executeTakeFirst();
}

/** Records an attempt's outcome and ends the lease. */
export async function recordAttempt(
  db: Db,
  id: string,
  owner: string,
  outcome: Pick<WebhookDeliveryRow, 'state' | 'attempts' | 'next_attempt_at' | 'last_status' | 'last_error' | 'delivered_at'>,
): Promise<void> {
  await db
    .updateTable('webhook_deliveries')
    .set({ ...outcome, lease_owner: null, lease_expires_at: null })
    .where('id', '=', id)
    .where('lease_owner', '=', owner)
    .execute();
}

/** Newest first; `after`: the (created_at, id) position the page starts after; `copilots`: only theirs. */
export async function listDeliveries(
  db: Db,
  page: { limit: number; after?: { createdAt: string; id: string }; copilots?: readonly string[] },
): Promise<WebhookDeliveryRow[]> {
  return db
    .selectFrom('webhook_deliveries')
    .selectAll()
    .$if(page.copilots !== undefined, (q) => q.where('copilot_id', 'in', page.copilots!.length > 0 ? [...page.copilots!] : ['']))
    .$if(page.after !== undefined, (q) => q.where(pastKey(page.after!, 'desc')))
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(page.limit)
    .execute();
}
