import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Storage } from '../../src/storage/database.js';
import { countPassagesOfOtherLinks, deleteLinks, insertPassages, purgeKnowledgeBase } from '../../src/storage/knowledge-base.repository.js';
import { knowledgeBaseTotals } from '../../src/storage/migrations/014-knowledge-base-totals.js';
import { inTransaction } from '../../src/storage/transaction.js';
import { createTestStorage, DIALECTS } from '../support/databases.js';

const T = '2024-01-01T00:00:00.000000Z';

// Migration 014: each knowledge base row keeps the sums of its links' passages and terms, which
// the passage limit and every search's bm25 statistics read instead of summing the bot's links.
for (const dialect of DIALECTS) {
  describe(`knowledge base totals (${dialect})`, () => {
    let storage: Storage;
    let cleanup: () => Promise<void>;
    beforeAll(async () => {
      ({ storage, cleanup } = await createTestStorage(dialect));
    });
    afterAll(async () => cleanup?.());

    async function bot(): Promise<string> {
      const id = randomUUID();
      await storage.db.insertInto('knowledge_bases').values({ bot_id: id, created_at: T, updated_at: T }).execute();
      return id;
    }

    async function link(botId: string, passages = 0): Promise<string> {
      const id = randomUUID();
      await storage.db
        .insertInto('kb_links')
        .values({
          id,
          bot_id: botId,
          url: `https://docs.example/${id}`,
          status: 'indexed',
          error: null,
          passages,
          attempts: 1,
          generation: 0,
          run_after: T,
          lease_owner: null,
          lease_expires_at: null,
          created_at: T,
          updated_at: T,
        })
        .execute();
      return id;
    }

    const totals = async (botId: string) => {
      const kb = await storage.db.selectFrom('knowledge_bases').select(['passages', 'term_count']).where('bot_id', '=', botId).executeTakeFirstOrThrow();
      return { passages: Number(kb.passages), term_count: Number(kb.term_count) };
    };
    const sums = async (botId: string) => {
      const rows = await storage.db.selectFrom('kb_links').select(['passages', 'term_count']).where('bot_id', '=', botId).execute();
      return {
        passages: rows.reduce((n, r) => n + Number(r.passages), 0),
        term_count: rows.reduce((n, r) => n + Number(r.term_count), 0),
      };
    };

    it('follows every insert, update and delete of the bot’s links, and no other bot’s', async () => {
      const [a, b] = [await bot(), await bot()];
      const other = await link(b, 7);
      const ids = [await link(a, 3), await link(a), await link(a)];
      await insertPassages(storage.db, [
        { link_id: ids[1]!, bot_id: a, seq: 0, content: 'alpha beta gamma' },
        { link_id: ids[1]!, bot_id: a, seq: 1, content: 'delta' },
      ]);
      await storage.db.updateTable('kb_links').set({ passages: 2 }).where('id', '=', ids[1]!).execute();
      await storage.db.updateTable('kb_links').set({ passages: 5, term_count: 40 }).where('id', '=', ids[2]!).execute();
      // Updates that change no count (a claim, a lease) leave the totals alone.
      await storage.db.updateTable('kb_links').set({ status: 'pending', updated_at: T }).where('bot_id', '=', a).execute();
      expect(await totals(a)).toEqual(await sums(a));
      expect(await totals(a)).toEqual({ passages: 10, term_count: 44 });

      await inTransaction(storage.db, (trx) => deleteLinks(trx, [ids[0]!, ids[2]!], T));
      expect(await totals(a)).toEqual({ passages: 2, term_count: 4 });
      expect(await totals(b)).toEqual({ passages: 7, term_count: 0 });
      expect(await countPassagesOfOtherLinks(storage.db, a, ids[1]!)).toBe(0);
      expect(await countPassagesOfOtherLinks(storage.db, b, 'no such link')).toBe(7);
      expect(await countPassagesOfOtherLinks(storage.db, b, other)).toBe(0);
    });

    it('equals the sums of the links after any sequence of changes', async () => {
      const command = fc.oneof(
        fc.record({ kind: fc.constant('add' as const), passages: fc.nat(50) }),
        fc.record({ kind: fc.constant('set' as const), pick: fc.nat(), passages: fc.nat(50), terms: fc.nat(500) }),
        fc.record({ kind: fc.constant('delete' as const), pick: fc.nat(), many: fc.nat(3) }),
      );
      await fc.assert(
        fc.asyncProperty(fc.array(command, { maxLength: 12 }), async (commands) => {
          const a = await bot();
          const ids: string[] = [];
          for (const c of commands) {
            if (c.kind === 'add') ids.push(await link(a, c.passages));
            else if (ids.length > 0 && c.kind === 'set') {
              await storage.db
                .updateTable('kb_links')
                .set({ passages: c.passages, term_count: c.terms })
                .where('id', '=', ids[c.pick % ids.length]!)
                .execute();
            } else if (ids.length > 0 && c.kind === 'delete') {
              const gone = ids.splice(c.pick % ids.length, c.many + 1);
              await inTransaction(storage.db, (trx) => deleteLinks(trx, gone, T));
            }
          }
          expect(await totals(a)).toEqual(await sums(a));
        }),
        { numRuns: 25 },
      );
    });

    it('is gone with a purged knowledge base', async () => {
      const a = await bot();
      await link(a, 4);
      await inTransaction(storage.db, (trx) => purgeKnowledgeBase(trx, dialect, a));
      expect(await storage.db.selectFrom('knowledge_bases').select('bot_id').where('bot_id', '=', a).executeTakeFirst()).toBeUndefined();
    });

    it('is computed by the migration for knowledge bases stored before it', async () => {
      const migration = knowledgeBaseTotals(dialect);
      const a = await bot();
      await link(a, 6);
      await storage.db.updateTable('kb_links').set({ term_count: 60 }).where('bot_id', '=', a).execute();
      await migration.down!(storage.db);
      try {
        await link(a, 2); // stored while no trigger keeps the totals
      } finally {
        await migration.up(storage.db);
      }
      expect(await totals(a)).toEqual({ passages: 8, term_count: 60 });
      await link(a, 1);
      expect(await totals(a)).toEqual({ passages: 9, term_count: 60 });
    });
  });
}
