/**
 * The retention job: webhook deliveries queued longer ago than WEBHOOK_DELIVERIES_KEPT_DAYS and
 * audit entries written longer ago than AUDIT_LOG_KEPT_DAYS are deleted, a batch per statement;
 * 0 keeps them. (Purging deleted copilots: copilot-purge.test.ts.)
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { daysAgo, nowTimestamp } from '../../src/domain/ids.js';
import { retentionWanted, startRetention } from '../../src/jobs/retention.js';
import { buildTestApp, type TestApp } from '../support/app.js';
import { DIALECTS } from '../support/databases.js';

/** More than one batch of the job (1,000 rows a statement). */
const OLD = 2_345;

for (const dialect of DIALECTS) {
  describe(`retention of webhook deliveries and audit entries (${dialect})`, () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await buildTestApp(dialect);
    });
    afterAll(() => t?.close());

    async function addDeliveries(count: number, createdAt: string, state: string): Promise<void> {
      const rows = Array.from({ length: count }, () => ({
        id: randomUUID(),
        event: 'api_description.breaking_change',
        copilot_id: null,
        url: 'https://hooks.example.com/x',
        payload: '{}',
        state,
        attempts: 1,
        next_attempt_at: createdAt,
        lease_owner: null,
        lease_expires_at: null,
        last_status: 200,
        last_error: null,
        created_at: createdAt,
        delivered_at: state === 'delivered' ? createdAt : null,
      }));
      for (let i = 0; i < rows.length; i += 500)
        await t.storage.db
          .insertInto('webhook_deliveries')
          .values(rows.slice(i, i + 500))
          .execute();
    }

    async function addAuditEntries(count: number, at: string, action: string): Promise<void> {
      const rows = Array.from({ length: count }, () => ({ at, actor_key_id: null, action, bot_id: null, details: '{}' }));
      for (let i = 0; i < rows.length; i += 500)
        await t.storage.db
          .insertInto('audit_log')
          .values(rows.slice(i, i + 500))
          .execute();
    }

    const deliveriesSince = async (since: string) =>
      Number(
        (
          await t.storage.db
            .selectFrom('webhook_deliveries')
            .select((eb) => eb.fn.countAll().as('n'))
            .where('created_at', '>=', since)
            .executeTakeFirstOrThrow()
        ).n,
      );
    const deliveries = async () =>
      Number(
        (
          await t.storage.db
            .selectFrom('webhook_deliveries')
            .select((eb) => eb.fn.countAll().as('n'))
            .executeTakeFirstOrThrow()
        ).n,
      );
    const auditOf = async (action: string) =>
      Number(
        (
          await t.storage.db
            .selectFrom('audit_log')
            .select((eb) => eb.fn.countAll().as('n'))
            .where('action', '=', action)
            .executeTakeFirstOrThrow()
        ).n,
      );

    async function runOnce(settings: { webhookDeliveriesKeptDays: number; auditLogKeptDays: number }): Promise<unknown[]> {
      const logs: unknown[] = [];
      const job = startRetention(t.storage, {
        purgeDeletedAfterDays: 0,
        ...settings,
        logger: { info: (o: unknown) => logs.push(o), error: (o: unknown) => logs.push(o) } as never,
      });
      await job.stop(); // the round at start, whole
      return logs;
    }

    it('deletes deliveries queued and audit entries written before their retention, whatever their state; keeps the rest', async () => {
      await t.storage.db.deleteFrom('webhook_deliveries').execute();
      const recent = nowTimestamp();
      await addDeliveries(OLD - 45, daysAgo(31), 'delivered');
      await addDeliveries(40, daysAgo(40), 'failed');
      await addDeliveries(5, daysAgo(100), 'pending');
      await addDeliveries(3, daysAgo(29), 'delivered');
      await addDeliveries(2, recent, 'pending');
      await addAuditEntries(OLD, daysAgo(366), 'retention.test.old');
      await addAuditEntries(4, daysAgo(364), 'retention.test.kept');

      const logs = await runOnce({ webhookDeliveriesKeptDays: 30, auditLogKeptDays: 365 });

      expect(await deliveries()).toBe(5);
      expect(await deliveriesSince(daysAgo(29.5))).toBe(5);
      expect(await auditOf('retention.test.old')).toBe(0);
      expect(await auditOf('retention.test.kept')).toBe(4);
      expect(logs).toEqual([{ deleted: OLD }, { deleted: OLD }]);
    });

    it('0 keeps them: the default keeps every audit entry, and the job is not started for nothing', async () => {
      await t.storage.db.deleteFrom('webhook_deliveries').execute();
      await addDeliveries(3, daysAgo(1000), 'delivered');
      await addAuditEntries(3, daysAgo(1000), 'retention.test.ancient');
      expect(await runOnce({ webhookDeliveriesKeptDays: 0, auditLogKeptDays: 0 })).toEqual([]);
      expect(await deliveries()).toBe(3);
      expect(await auditOf('retention.test.ancient')).toBe(3);

      const defaults = loadConfig({});
      expect(defaults).toMatchObject({ webhookDeliveriesKeptDays: 30, auditLogKeptDays: 0, purgeDeletedAfterDays: 0 });
      expect(retentionWanted(defaults)).toBe(true);
      expect(retentionWanted(loadConfig({ WEBHOOK_DELIVERIES_KEPT_DAYS: '0' }))).toBe(false);
      expect(retentionWanted(loadConfig({ WEBHOOK_DELIVERIES_KEPT_DAYS: '0', AUDIT_LOG_KEPT_DAYS: '90' }))).toBe(true);
    });
  });
}
