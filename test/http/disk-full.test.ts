/**
 * A database with no space left to write (crash sweep): SQLite rolled the transaction back
 * itself, the writer's own rollback then failed ("cannot rollback - no transaction is active")
 * and that error replaced the real one, so the client got 500 and the log said nothing of the
 * disk. A full disk is now 503 `service_unavailable` with Retry-After, and logged at error as
 * such. SQLite: the file is held to its size (`max_page_count`); PostgreSQL's own code for it
 * (53100 disk_full) cannot be produced here, so the statement is made to fail with it.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import * as copilots from '../../src/storage/copilot.repository.js';
import { buildTestApp, type TestApp } from '../support/app.js';
import { DIALECTS } from '../support/databases.js';
import { call, COPILOTS_PATH, expectError } from '../support/http.js';

interface LogLine {
  level: number;
  msg: string;
  err?: { message?: string };
}

for (const dialect of DIALECTS) {
  describe(`a database with no space left (${dialect})`, () => {
    const lines: LogLine[] = [];
    let t: TestApp;
    beforeAll(async () => {
      t = await buildTestApp(dialect, { logger: { level: 'warn', stream: { write: (line: string) => void lines.push(JSON.parse(line) as LogLine) } } });
    });
    afterAll(async () => {
      vi.restoreAllMocks();
      await t?.close();
    });

    it('a write is 503 service_unavailable with Retry-After, logged at error as a full disk; what was stored stays, and writes go on once there is space', async () => {
      const kept = await call(t, 'POST', COPILOTS_PATH, { payload: { name: 'Before' } });
      expect(kept.statusCode).toBe(201);
      let restore: () => Promise<void>;
      if (dialect === 'sqlite') {
        const pages = Number((await sql<{ page_count: number }>`pragma page_count`.execute(t.storage.db)).rows[0]!.page_count);
        await sql.raw(`pragma max_page_count = ${pages}`).execute(t.storage.db);
        restore = async () => void (await sql.raw('pragma max_page_count = 1073741823').execute(t.storage.db));
      } else {
        const spy = vi
          .spyOn(copilots, 'insertCopilot')
          .mockRejectedValue(Object.assign(new Error('could not extend file: No space left on device'), { code: '53100' }));
        restore = async () => spy.mockRestore();
      }
      lines.length = 0;
      const res = await call(t, 'POST', COPILOTS_PATH, { payload: { name: 'Full', prompt_message: 'x'.repeat(90_000) } });
      const body = expectError(res, 503, 'service_unavailable');
      expect(body.message).toMatch(/no space left/i);
      expect(res.headers['retry-after']).toBeDefined();
      const logged = lines.filter((l) => l.level >= 50);
      expect(logged.map((l) => l.msg)).toEqual(["the database has no space left to write: free space on the database's disk"]);
      expect(JSON.stringify(lines)).not.toMatch(/cannot rollback/);

      await restore();
      expect((await call(t, 'POST', COPILOTS_PATH, { payload: { name: 'After' } })).statusCode).toBe(201);
      const names = ((await call(t, 'GET', COPILOTS_PATH)).json() as Array<{ name: string }>).map((c) => c.name);
      expect(names).toEqual(expect.arrayContaining(['Before', 'After']));
      expect(names).not.toContain('Full');
    });
  });
}
