/**
 * Issue 17 §1: the settings an operator sets in front of a deployment — METRICS_TOKEN keeps
 * /metrics to a scraper that holds it, and TRUST_PROXY decides whether the client's address in
 * the logs and the audit log comes from X-Forwarded-For (only from the proxies it names).
 */
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { createServices } from '../../src/services.js';
import { buildTestApp, type TestApp } from '../support/app.js';
import { createTestDatabase, DIALECTS } from '../support/databases.js';
import { AUDIT_PATH, COPILOTS_PATH, expectError } from '../support/http.js';

const METRICS_TOKEN = 'scrape-0123456789-abcdef';

interface LogLine {
  reqId?: string;
  req?: { remoteAddress?: string };
}

for (const dialect of DIALECTS) {
  describe(`METRICS_TOKEN (${dialect})`, () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await buildTestApp(dialect, { env: { METRICS_TOKEN } });
    });
    afterAll(async () => t.close());

    const metrics = (authorization?: string) => t.app.inject({ method: 'GET', url: '/metrics', headers: authorization === undefined ? {} : { authorization } });

    it('answers the token alone; without it, 401 with the error body', async () => {
      const ok = await metrics(`Bearer ${METRICS_TOKEN}`);
      expect(ok.statusCode).toBe(200);
      expect(ok.body).toContain('# TYPE http_requests_total counter');
      for (const wrong of [undefined, '', `Bearer ${METRICS_TOKEN}x`, `Bearer ${METRICS_TOKEN.slice(1)}`, METRICS_TOKEN, `Basic ${METRICS_TOKEN}`]) {
        const body = expectError(await metrics(wrong), 401, 'unauthorized');
        expect(body.message).toContain('METRICS_TOKEN');
        expect(JSON.stringify(body)).not.toContain(METRICS_TOKEN);
      }
      // An API key, even an admin's, is not the metrics token.
      expectError(await metrics(t.admin), 401, 'unauthorized');
    });

    it('leaves the other open endpoints open', async () => {
      for (const url of ['/healthz', '/readyz', '/backend/openapi.json']) expect((await t.app.inject({ method: 'GET', url })).statusCode, url).toBe(200);
    });

    it('without the setting, /metrics stays open', async () => {
      const open = await t.anotherApp({ config: loadConfig({ ...envOf(t), METRICS_TOKEN: '' }) });
      try {
        expect((await open.inject({ method: 'GET', url: '/metrics' })).statusCode).toBe(200);
      } finally {
        await open.close();
      }
    });
  });

  describe(`TRUST_PROXY and the client's address (${dialect})`, () => {
    const lines: LogLine[] = [];
    let trusting: TestApp;
    let plain: FastifyInstance;
    beforeAll(async () => {
      trusting = await buildTestApp(dialect, {
        env: { TRUST_PROXY: '10.0.0.0/8' },
        logger: { level: 'info', stream: { write: (line: string) => void lines.push(JSON.parse(line) as LogLine) } },
      });
      plain = await trusting.anotherApp({ config: loadConfig({ ...envOf(trusting), TRUST_PROXY: '' }) });
    });
    afterAll(async () => {
      await plain.close();
      await trusting.close();
    });

    /** Creates a copilot from `peer` with `forwardedFor`, and returns the client_ip its audit entry holds. */
    async function auditedAddress(app: FastifyInstance, peer: string, forwardedFor: string | undefined, requestId: string): Promise<unknown> {
      const headers: Record<string, string> = { authorization: trusting.admin, 'content-type': 'application/json', 'x-request-id': requestId };
      if (forwardedFor !== undefined) headers['x-forwarded-for'] = forwardedFor;
      const created = await app.inject({ method: 'POST', url: COPILOTS_PATH, remoteAddress: peer, headers, payload: JSON.stringify({ name: requestId }) });
      expect(created.statusCode, created.body).toBe(201);
      const audit = await app.inject({ method: 'GET', url: `${AUDIT_PATH}?bot_id=${created.json().id}`, headers: { authorization: trusting.admin } });
      expect(audit.statusCode, audit.body).toBe(200);
      const entries = audit.json() as Array<{ action: string; details: Record<string, unknown> }>;
      return entries.find((e) => e.action === 'copilot.create')!.details.client_ip;
    }

    it('from a trusted proxy, the address is the first untrusted hop of X-Forwarded-For, in the audit log and the request log', async () => {
      expect(await auditedAddress(trusting.app, '10.1.2.3', '203.0.113.9, 10.9.9.9', 'via-proxy')).toBe('203.0.113.9');
      const logged = lines.find((l) => l.reqId === 'via-proxy' && l.req !== undefined);
      expect(logged?.req?.remoteAddress).toBe('203.0.113.9');
    });

    it('from a peer the setting does not name, X-Forwarded-For is ignored', async () => {
      expect(await auditedAddress(trusting.app, '192.0.2.1', '203.0.113.9', 'not-a-proxy')).toBe('192.0.2.1');
      expect(lines.find((l) => l.reqId === 'not-a-proxy' && l.req !== undefined)?.req?.remoteAddress).toBe('192.0.2.1');
    });

    it('without TRUST_PROXY (the default), the peer is the client whatever the headers say', async () => {
      expect(await auditedAddress(plain, '10.1.2.3', '203.0.113.9', 'no-trust')).toBe('10.1.2.3');
      expect(await auditedAddress(plain, '10.1.2.3', undefined, 'no-header')).toBe('10.1.2.3');
    });
  });
}

/** The variables a test app was built from, to build a second instance that differs in one. */
function envOf(t: TestApp): Record<string, string> {
  return {
    DATA_DIR: t.config.dataDir,
    ...(t.config.databaseUrl && { DATABASE_URL: t.config.databaseUrl }),
    LOG_LEVEL: 'silent',
  };
}

if (DIALECTS.includes('postgres')) {
  describe('DATABASE_LOCK_TIMEOUT_MS (postgres)', () => {
    it("sets the service's pool's lock_timeout: how long a request waits for a row another session holds (it was a constant)", async () => {
      const database = await createTestDatabase('postgres');
      try {
        for (const [value, shown] of [
          ['1234', '1234ms'],
          [undefined, '30s'],
          ['0', '0'],
        ] as const) {
          const env = { DATABASE_URL: database.databaseUrl!, DATA_DIR: database.dataDir, ...(value !== undefined && { DATABASE_LOCK_TIMEOUT_MS: value }) };
          const services = createServices(loadConfig(env));
          try {
            const { rows } = await sql<{ lock_timeout: string }>`show lock_timeout`.execute(services.storage.db);
            expect(rows[0]!.lock_timeout, value).toBe(shown);
          } finally {
            await services.close();
          }
        }
      } finally {
        await database.drop();
      }
    });
  });
}
