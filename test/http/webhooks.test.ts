/**
 * Issue 16 §1: a breaking change of an API description is POSTed to WEBHOOK_URL, signed with
 * WEBHOOK_SECRET (HMAC-SHA256 over `<timestamp>.<body>`), through the guarded fetcher, retried
 * with backoff until it is answered 2xx or its attempts are used up; deliveries are listed.
 */
import { createHmac } from 'node:crypto';
import type http from 'node:http';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { attemptDelivery, MAX_ATTEMPTS, type DeliveryDeps } from '../../src/domain/webhooks/webhook.service.js';
import { nowTimestamp } from '../../src/domain/ids.js';
import { claimDelivery } from '../../src/storage/webhook.repository.js';
import { startWebhookDelivery } from '../../src/jobs/webhook-delivery.js';
import { buildTestApp, type TestApp } from '../support/app.js';
import { DIALECTS } from '../support/databases.js';
import { apiOfPaths as api, putRaw } from '../support/documents.js';
import { call, createCopilot, expectError } from '../support/http.js';
import { PageServer } from '../support/pages.js';

const SECRET = 'a-webhook-secret-of-some-length';
const DELIVERIES = '/backend/api/webhooks/deliveries';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Received {
  headers: http.IncomingHttpHeaders;
  body: string;
}

for (const dialect of DIALECTS) {
  describe(`webhooks (${dialect})`, () => {
    let t: TestApp;
    let pages: PageServer;
    let answer = 200;
    const received: Received[] = [];
    let deps: DeliveryDeps;

    beforeAll(async () => {
      pages = await PageServer.start();
      pages.set('/hook', (req: http.IncomingMessage, res: http.ServerResponse) => {
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', () => {
          received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
          res.writeHead(answer).end();
        });
      });
      pages.set('/moved', { status: 307, body: '' });
      t = await buildTestApp(dialect, { env: { WEBHOOK_URL: pages.url('/hook'), WEBHOOK_SECRET: SECRET } });
      deps = { policy: t.services.sync.policy, secret: SECRET, owner: 'test', retryBaseMs: 0 };
    });
    afterAll(async () => {
      await t?.close();
      await pages?.close();
    });

    /** The deliveries of a copilot, once the queueing (after the version's commit) has happened. */
    async function deliveriesOf(copilotId: string, count: number) {
      for (let i = 0; i < 50; i++) {
        const rows = await t.storage.db.selectFrom('webhook_deliveries').selectAll().where('copilot_id', '=', copilotId).execute();
        if (rows.length >= count) return rows;
        await sleep(20);
      }
      return t.storage.db.selectFrom('webhook_deliveries').selectAll().where('copilot_id', '=', copilotId).execute();
    }

    it('a breaking change is delivered once, signed; a change that breaks nothing is not sent', async () => {
      const copilot = await createCopilot(t);
      expect((await putRaw(t, copilot.id, api(['/a', '/b']), 'application/json')).statusCode).toBe(200);
      expect((await putRaw(t, copilot.id, api(['/a', '/b', '/c']), 'application/json')).statusCode).toBe(200); // added only
      await sleep(100);
      expect(await deliveriesOf(copilot.id, 0)).toEqual([]);

      expect((await putRaw(t, copilot.id, api(['/a']), 'application/json')).statusCode).toBe(200); // /b and /c removed
      const [row] = await deliveriesOf(copilot.id, 1);
      expect(row).toMatchObject({ event: 'api_description.breaking_change', state: 'pending', url: pages.url('/hook') });
      received.length = 0;
      answer = 200;
      expect(await attemptDelivery(t.storage.db, deps, row!.id)).toBe(true);
      expect(await attemptDelivery(t.storage.db, deps, row!.id)).toBe(false); // delivered: not again

      expect(received).toHaveLength(1);
      const [got] = received;
      const body = JSON.parse(got!.body);
      expect(body).toMatchObject({ id: row!.id, event: 'api_description.breaking_change', copilot_id: copilot.id });
      expect(body.data).toMatchObject({ version: 3, source: 'upload', changes: { breaking: 2, other: 0 } });
      expect(body.data.breaking_changes.map((c: { kind: string; path: string }) => `${c.kind} ${c.path}`).sort()).toEqual([
        'endpoint-removed /b',
        'endpoint-removed /c',
      ]);
      expect(got!.headers['content-type']).toBe('application/json');
      expect(got!.headers['x-cms-event']).toBe('api_description.breaking_change');
      expect(got!.headers['x-cms-delivery']).toBe(row!.id);
      const timestamp = String(got!.headers['x-cms-timestamp']);
      const expected = `sha256=${createHmac('sha256', SECRET).update(`${timestamp}.${got!.body}`).digest('hex')}`;
      expect(got!.headers['x-cms-signature']).toBe(expected);

      const listed = await call(t, 'GET', DELIVERIES);
      expect(listed.statusCode, listed.body).toBe(200);
      expect(listed.json().find((d: { id: string }) => d.id === row!.id)).toMatchObject({
        state: 'delivered',
        attempts: 1,
        last_status: 200,
        last_error: null,
        next_attempt_at: null,
      });
    });

    it('a breaking change and its delivery are written in one transaction: the version is not kept without its event', async () => {
      // The delivery was queued after the version's commit, outside its transaction: a failure
      // (or a crash) between the two kept the version and lost its webhook for good.
      const copilot = await createCopilot(t);
      expect((await putRaw(t, copilot.id, api(['/m', '/n']), 'application/json')).statusCode).toBe(200);
      await sql`alter table webhook_deliveries rename to webhook_deliveries_away`.execute(t.storage.db);
      let breaking: Awaited<ReturnType<typeof putRaw>>;
      try {
        breaking = await putRaw(t, copilot.id, api(['/m']), 'application/json');
      } finally {
        await sql`alter table webhook_deliveries_away rename to webhook_deliveries`.execute(t.storage.db);
      }
      expect(breaking.statusCode).toBeGreaterThanOrEqual(500);
      const versions = (await call(t, 'GET', `/backend/api/copilot/${copilot.id}/swagger/versions`)).json() as Array<{ version: number }>;
      expect(versions.map((v) => v.version)).toEqual([1]);
      // Sent again, the change is kept with its delivery, in the same breath.
      expect((await putRaw(t, copilot.id, api(['/m']), 'application/json')).statusCode).toBe(200);
      const rows = await t.storage.db.selectFrom('webhook_deliveries').selectAll().where('copilot_id', '=', copilot.id).execute();
      expect(rows).toHaveLength(1);
    });

    it('a failing receiver is retried with backoff until the attempts are used up', async () => {
      const copilot = await createCopilot(t);
      expect((await putRaw(t, copilot.id, api(['/x', '/y']), 'application/json')).statusCode).toBe(200);
      expect((await putRaw(t, copilot.id, api(['/x']), 'application/json')).statusCode).toBe(200);
      const [row] = await deliveriesOf(copilot.id, 1);
      answer = 500;
      const logger = { info: vi.fn(), warn: vi.fn() };
      const slow = { ...deps, retryBaseMs: 60_000, logger };
      expect(await attemptDelivery(t.storage.db, slow, row!.id)).toBe(true);
      // Said in the log, by the receiver's origin only (operator sweep: a refusing receiver was said nowhere).
      expect(logger.info).toHaveBeenCalledWith(
        expect.objectContaining({ delivery: row!.id, receiver: `${new URL(pages.url('/hook')).origin}/…`, attempt: 1, status: 500 }),
        'A webhook delivery attempt failed; it is tried again later',
      );
      expect(JSON.stringify(logger.info.mock.calls)).not.toContain('/hook');
      const after = await t.storage.db.selectFrom('webhook_deliveries').selectAll().where('id', '=', row!.id).executeTakeFirstOrThrow();
      expect(after).toMatchObject({ state: 'pending', last_status: 500 });
      expect(Number(after.attempts)).toBe(1);
      expect(after.next_attempt_at > row!.next_attempt_at).toBe(true);
      expect(await attemptDelivery(t.storage.db, slow, row!.id)).toBe(false); // not due yet
      await t.storage.db.updateTable('webhook_deliveries').set({ next_attempt_at: row!.next_attempt_at }).where('id', '=', row!.id).execute();

      for (let i = 1; i < MAX_ATTEMPTS; i++) expect(await attemptDelivery(t.storage.db, { ...deps, logger }, row!.id)).toBe(true);
      expect(logger.warn).toHaveBeenCalledTimes(1);
      expect(logger.warn).toHaveBeenCalledWith(
        expect.objectContaining({ delivery: row!.id, attempt: MAX_ATTEMPTS }),
        `A webhook delivery failed for good after ${MAX_ATTEMPTS} attempts`,
      );
      const failed = await t.storage.db.selectFrom('webhook_deliveries').selectAll().where('id', '=', row!.id).executeTakeFirstOrThrow();
      expect(failed).toMatchObject({ state: 'failed', last_status: 500 });
      expect(Number(failed.attempts)).toBe(MAX_ATTEMPTS);
      answer = 200;
    });

    it('an attempt cut off by its instance stopping counts: the next instance sends it as attempt 2, and past the last no further send (several-instances sweep: a crash left it uncounted)', async () => {
      const copilot = await createCopilot(t);
      expect((await putRaw(t, copilot.id, api(['/k', '/l']), 'application/json')).statusCode).toBe(200);
      expect((await putRaw(t, copilot.id, api(['/k']), 'application/json')).statusCode).toBe(200);
      const [row] = await deliveriesOf(copilot.id, 1);
      const past = '2000-01-01T00:00:00.000000Z';
      // An instance took it and stopped (kill -9) before recording what became of it.
      expect(await claimDelivery(t.storage.db, row!.id, 'stopped', nowTimestamp(), past)).toBeDefined();
      received.length = 0;
      answer = 200;
      expect(await attemptDelivery(t.storage.db, deps, row!.id)).toBe(true);
      const after = await t.storage.db.selectFrom('webhook_deliveries').selectAll().where('id', '=', row!.id).executeTakeFirstOrThrow();
      expect(after).toMatchObject({ state: 'delivered' });
      expect(Number(after.attempts)).toBe(2);
      expect(received).toHaveLength(1);
      // Its last attempt cut off: failed, not sent a ninth time.
      await t.storage.db
        .updateTable('webhook_deliveries')
        .set({ state: 'pending', attempts: MAX_ATTEMPTS - 1, next_attempt_at: past, delivered_at: null })
        .where('id', '=', row!.id)
        .execute();
      expect(await claimDelivery(t.storage.db, row!.id, 'stopped', nowTimestamp(), past)).toBeDefined();
      received.length = 0;
      expect(await attemptDelivery(t.storage.db, deps, row!.id)).toBe(true);
      expect(received).toHaveLength(0);
      const last = await t.storage.db.selectFrom('webhook_deliveries').selectAll().where('id', '=', row!.id).executeTakeFirstOrThrow();
      expect(last).toMatchObject({ state: 'failed' });
      expect(Number(last.attempts)).toBe(MAX_ATTEMPTS);
      expect(last.last_error).toMatch(/cut off/);
    });

    it('a receiver that answers 2xx has the delivery delivered, however long or slow the body it sends after', async () => {
      // The answer's body was read like a document: one that trickled (or was over the document
      // limit) failed the delivery after the status had said it arrived, and it was sent again.
      pages.set('/trickle', (req: http.IncomingMessage, res: http.ServerResponse) => {
        req.resume();
        req.on('end', () => {
          res.writeHead(200, { 'content-type': 'text/plain' });
          const drip = setInterval(() => res.write('x'), 100);
          res.on('close', () => clearInterval(drip));
        });
      });
      const copilot = await createCopilot(t);
      expect((await putRaw(t, copilot.id, api(['/p', '/q']), 'application/json')).statusCode).toBe(200);
      expect((await putRaw(t, copilot.id, api(['/p']), 'application/json')).statusCode).toBe(200);
      const [row] = await deliveriesOf(copilot.id, 1);
      await t.storage.db
        .updateTable('webhook_deliveries')
        .set({ url: pages.url('/trickle') })
        .where('id', '=', row!.id)
        .execute();
      const quick = { ...deps, policy: { ...deps.policy, timeoutMs: 1500 } };
      expect(await attemptDelivery(t.storage.db, quick, row!.id)).toBe(true);
      const after = await t.storage.db.selectFrom('webhook_deliveries').selectAll().where('id', '=', row!.id).executeTakeFirstOrThrow();
      expect(after).toMatchObject({ state: 'delivered', last_status: 200, last_error: null });
    });

    it('the delivery job sends what is due by itself', async () => {
      const copilot = await createCopilot(t);
      expect((await putRaw(t, copilot.id, api(['/p', '/q']), 'application/json')).statusCode).toBe(200);
      expect((await putRaw(t, copilot.id, api(['/p']), 'application/json')).statusCode).toBe(200);
      const [row] = await deliveriesOf(copilot.id, 1);
      const job = startWebhookDelivery(t.storage, deps, { intervalMs: 20, logger: { error: () => undefined, warn: () => undefined, info: () => undefined } });
      try {
        for (let i = 0; i < 100 && !received.some((r) => r.headers['x-cms-delivery'] === row!.id); i++) await sleep(20);
      } finally {
        await job.stop();
      }
      expect(received.filter((r) => r.headers['x-cms-delivery'] === row!.id)).toHaveLength(1);
    });

    it('a redirect is not followed and a refused address is never reached', async () => {
      const copilot = await createCopilot(t);
      const now = '2026-11-24T00:00:00.000000Z';
      const row = (url: string, id: string) => ({
        id,
        event: 'test',
        copilot_id: copilot.id,
        url,
        payload: '{}',
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
      const ids = [`moved-${dialect}`, `refused-${dialect}`];
      await t.storage.db
        .insertInto('webhook_deliveries')
        .values([row(pages.url('/moved'), ids[0]!), row('http://10.1.2.3/hook', ids[1]!)])
        .execute();
      const before = pages.count('/moved');
      for (const id of ids) expect(await attemptDelivery(t.storage.db, deps, id)).toBe(true);
      const rows = await t.storage.db.selectFrom('webhook_deliveries').selectAll().where('id', 'in', ids).orderBy('id').execute();
      expect(rows[0]).toMatchObject({ state: 'pending', last_status: 307 });
      expect(pages.count('/moved')).toBe(before + 1);
      expect(rows[1]).toMatchObject({ state: 'pending', last_status: null });
      expect(rows[1]!.last_error).toMatch(/not allowed|refused|private/i);
    });

    it('lists deliveries newest first, a page at a time; a bot-limited key sees its bots only; others are refused', async () => {
      const page = await call(t, 'GET', `${DELIVERIES}?limit=1`);
      expect(page.statusCode).toBe(200);
      expect(page.json()).toHaveLength(1);
      expect(String(page.headers.link)).toMatch(/rel="next"/);
      expectError(await call(t, 'GET', `${DELIVERIES}?cursor=nope`), 400, 'invalid_cursor');
      expectError(await call(t, 'GET', DELIVERIES, { key: await t.key(['copilots:read']) }), 403, 'forbidden');
      const other = await createCopilot(t);
      const limited = await t.key(['admin'], [other.id]);
      expect((await call(t, 'GET', DELIVERIES, { key: limited })).json()).toEqual([]);
    });
  });
}

describe('webhook configuration', () => {
  it('WEBHOOK_URL needs an http(s) URL and a WEBHOOK_SECRET of 16 characters or more', () => {
    expect(() => loadConfig({ WEBHOOK_URL: 'https://hooks.example.com/x' })).toThrow(/WEBHOOK_SECRET/);
    expect(() => loadConfig({ WEBHOOK_URL: 'https://hooks.example.com/x', WEBHOOK_SECRET: 'short' })).toThrow(/WEBHOOK_SECRET/);
    expect(() => loadConfig({ WEBHOOK_URL: 'ftp://hooks.example.com/x', WEBHOOK_SECRET: SECRET })).toThrow(/WEBHOOK_URL/);
    const config = loadConfig({ WEBHOOK_URL: 'https://hooks.example.com/x', WEBHOOK_SECRET: SECRET });
    expect(config).toMatchObject({ webhookUrl: 'https://hooks.example.com/x', webhookSecret: SECRET });
    expect(loadConfig({})).toMatchObject({ webhookUrl: null });
  });
});
