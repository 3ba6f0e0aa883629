/**
 * The audit log's filters, and a copilot's webhook deliveries, read along an index, whatever the
 * table's size (scale sweep: with 339,000 entries a bot's or an action's page read the whole log,
 * newest first, on both databases; a key limited to one bot filters every audit page by its bot;
 * a purge, and a limited key's deliveries list, read every delivery).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nowTimestamp } from '../../src/domain/ids.js';
import { insertAuditEntries, listAuditSizes } from '../../src/storage/audit.repository.js';
import { deleteDeliveriesOf, listDeliveries } from '../../src/storage/webhook.repository.js';
import type { Storage } from '../../src/storage/database.js';
import { createTestStorage, DIALECTS } from '../support/databases.js';
import { queryPlans } from '../support/query-plans.js';

for (const dialect of DIALECTS) {
  describe(`the audit log's filters and a copilot's deliveries (${dialect})`, () => {
    let storage: Storage;
    let cleanup: () => Promise<void>;
    const bot = randomUUID();
    beforeAll(async () => {
      ({ storage, cleanup } = await createTestStorage(dialect));
      await insertAuditEntries(
        storage.db,
        Array.from({ length: 50 }, (_, i) => ({
          at: nowTimestamp(),
          actor_key_id: 'k',
          action: i % 2 === 0 ? 'copilot.create' : 'copilot.update',
          bot_id: i % 5 === 0 ? bot : randomUUID(),
          details: '{}',
        })),
      );
    });
    afterAll(async () => cleanup?.());

    it("a bot's entries and an action's are read along their index, newest first, nothing sorted", async () => {
      for (const [index, page] of [
        ['audit_log_bot', { limit: 3, botIds: [bot] }],
        ['audit_log_bot', { limit: 3, botIds: [bot], beforeId: 40 }],
        ['audit_log_action', { limit: 3, action: 'copilot.update' }],
        ['audit_log_action', { limit: 3, action: 'copilot.update', beforeId: 40 }],
      ] as const) {
        const [{ sql, plan }] = await queryPlans(storage, (db) => listAuditSizes(db, page));
        expect(plan, sql).toContain(index);
        expect(plan, sql).not.toMatch(/TEMP B-TREE|Sort|Seq Scan/);
      }
      const entries = await listAuditSizes(storage.db, { limit: 100, botIds: [bot] });
      expect(entries).toHaveLength(10);
    });

    it("a copilot's webhook deliveries are listed and deleted along their index", async () => {
      const plans = await queryPlans(storage, async (db) => {
        await listDeliveries(db, { limit: 3, copilots: [bot] });
        await listDeliveries(db, { limit: 3, copilots: [bot], after: { createdAt: nowTimestamp(), id: 'z' } });
        await deleteDeliveriesOf(db, bot);
      });
      expect(plans).toHaveLength(3);
      for (const { sql, plan } of plans) {
        expect(plan, sql).toContain('webhook_deliveries_copilot');
        expect(plan, sql).not.toMatch(/TEMP B-TREE|Sort|Seq Scan/);
      }
    });
  });
}
