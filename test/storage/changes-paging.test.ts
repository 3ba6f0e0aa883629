/**
 * GET …/swagger/changes pages a copilot's changes newest version first, each version's in their
 * order. Every statement a page runs reads along the primary key (copilot_id, version, seq) and
 * sorts nothing (amplification sweep: one query ordered by version descending and seq ascending,
 * with an OR for its cursor, scanned and sorted all of a copilot's rows on SQLite's main thread:
 * 1–10 s for a 100-byte request, every tenant waiting).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Storage } from '../../src/storage/database.js';
import { listChanges } from '../../src/storage/api-description-history.repository.js';
import type { ApiDescriptionChangeRow } from '../../src/storage/schema.js';
import { createTestStorage, DIALECTS } from '../support/databases.js';
import { queryPlans } from '../support/query-plans.js';

for (const dialect of DIALECTS) {
  describe(`paging a copilot's changes (${dialect})`, () => {
    let storage: Storage;
    let cleanup: () => Promise<void>;
    const copilot = randomUUID();
    // Versions 5, 4 (no changes), 3 and 1, with 3, 0, 4 and 2 changes; another copilot's between.
    const counts: Record<number, number> = { 5: 3, 3: 4, 1: 2 };
    beforeAll(async () => {
      ({ storage, cleanup } = await createTestStorage(dialect));
      const rows: ApiDescriptionChangeRow[] = [];
      const change = (copilotId: string, version: number, seq: number): ApiDescriptionChangeRow => ({
        copilot_id: copilotId,
        version,
        seq,
        kind: 'endpoint-added',
        breaking: 0,
        method: 'GET',
        path: `/v${version}/s${seq}`,
        message: 'added',
        before_value: null,
        after_value: null,
      });
      for (const [version, n] of Object.entries(counts)) for (let seq = 0; seq < n; seq++) rows.push(change(copilot, Number(version), seq));
      for (let seq = 0; seq < 5; seq++) rows.push(change(randomUUID(), 4, seq));
      await storage.db.insertInto('api_description_changes').values(rows).execute();
    });
    afterAll(async () => cleanup?.());

    const all = ['5.0', '5.1', '5.2', '3.0', '3.1', '3.2', '3.3', '1.0', '1.1'];
    const position = (r: ApiDescriptionChangeRow) => `${r.version}.${r.seq}`;

    it('pages newest version first, each version in its order, from any position, across versions without changes', async () => {
      expect((await listChanges(storage.db, copilot, { limit: 100 })).map(position)).toEqual(all);
      for (let limit = 1; limit <= 4; limit++) {
        const seen: string[] = [];
        let after: { version: number; seq: number } | undefined;
        for (;;) {
          const page = await listChanges(storage.db, copilot, { limit, after });
          seen.push(...page.map(position));
          if (page.length < limit) break;
          const last = page[page.length - 1]!;
          after = { version: Number(last.version), seq: Number(last.seq) };
        }
        expect(seen).toEqual(all);
      }
      expect(await listChanges(storage.db, randomUUID(), { limit: 10 })).toEqual([]);
    });

    it('reads along the primary key and sorts nothing, whatever the position', async () => {
      const plans = await queryPlans(storage, async (db) => {
        await listChanges(db, copilot, { limit: 5 });
        await listChanges(db, copilot, { limit: 5, after: { version: 5, seq: 1 } });
      });
      expect(plans.length).toBeGreaterThan(0);
      for (const { sql, plan } of plans) {
        if (dialect === 'sqlite') {
          expect(plan, sql).not.toMatch(/TEMP B-TREE|^SCAN/m);
          expect(plan, sql).toMatch(/SEARCH api_description_changes USING (COVERING )?INDEX/);
        } else {
          expect(plan, sql).not.toMatch(/Sort|Seq Scan/);
          expect(plan, sql).toMatch(/Index (Only )?Scan/);
        }
      }
    });
  });
}
