import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Storage } from '../../src/storage/database.js';
import { insertPassages } from '../../src/storage/knowledge-base.repository.js';
import { canonicalLinks } from '../../src/storage/migrations/006-canonical-links.js';
import { createTestStorage, DIALECTS } from '../support/databases.js';

const T = (n: number) => `2024-01-0${n}T00:00:00.000000Z`;

for (const dialect of DIALECTS) {
  describe(`migration 006-canonical-links (${dialect})`, () => {
    let storage: Storage;
    let cleanup: () => Promise<void>;
    beforeAll(async () => {
      ({ storage, cleanup } = await createTestStorage(dialect));
    });
    afterAll(async () => cleanup?.());

    async function link(bot: string, url: string, status: string, updatedAt: string, passages: string[] = []): Promise<string> {
      const id = randomUUID();
      await storage.db
        .insertInto('knowledge_bases')
        .values({ bot_id: bot, created_at: T(1), updated_at: T(1) })
        .onConflict((oc) => oc.column('bot_id').doNothing())
        .execute();
      await storage.db
        .insertInto('kb_links')
        .values({
          id,
          bot_id: bot,
          url,
          status,
          error: status === 'failed' ? 'gone' : null,
          passages: passages.length,
          attempts: 1,
          generation: 0,
          run_after: T(1),
          lease_owner: null,
          lease_expires_at: null,
          created_at: T(1),
          updated_at: updatedAt,
        })
        .execute();
      if (passages.length > 0) {
        await insertPassages(
          storage.db,
          passages.map((content, seq) => ({ link_id: id, bot_id: bot, seq, content })),
        );
      }
      return id;
    }

    const rows = (bot: string) => storage.db.selectFrom('kb_links').select(['id', 'url', 'status']).where('bot_id', '=', bot).orderBy('url').execute();
    const passages = (ids: string[]) =>
      storage.db.selectFrom('kb_passages').select(['link_id', 'content']).where('link_id', 'in', ids).orderBy('link_id').orderBy('seq').execute();

    it('is registered and applied by migrateToLatest', async () => {
      const names = (await (storage.db as any).selectFrom('kysely_migration').select('name').execute()).map((r: { name: string }) => r.name);
      expect(names).toContain('006-canonical-links');
    });

    it('brings stored links to the canonical form, merging the spellings of one page into the best row with its passages', async () => {
      const a = randomUUID();
      const b = randomUUID();
      const best = await link(a, 'HTTPS://Docs.example/a/../guide', 'indexed', T(3), ['keptword one', 'keptword two']);
      const failed = await link(a, 'https://docs.example/guide', 'failed', T(4));
      const older = await link(a, 'https://docs.example/guide#top', 'indexed', T(2), ['loserword']);
      const pending = await link(a, 'https://docs.example:443/%7euser', 'pending', T(2));
      const other = await link(a, 'https://docs.example/other', 'indexed', T(2), ['otherword']);
      const idn = await link(a, 'https://bücher.example./', 'indexed', T(2), ['idnword']);
      const idnPending = await link(a, 'https://xn--bcher-kva.example/', 'pending', T(5));
      const elsewhere = await link(b, 'HTTPS://Docs.example/a/../guide', 'pending', T(1));

      await canonicalLinks().up(storage.db);

      expect(await rows(a)).toEqual([
        { id: best, url: 'https://docs.example/guide', status: 'indexed' },
        { id: other, url: 'https://docs.example/other', status: 'indexed' },
        { id: pending, url: 'https://docs.example/~user', status: 'pending' },
        { id: idn, url: 'https://xn--bcher-kva.example/', status: 'indexed' },
      ]);
      expect(await rows(b)).toEqual([{ id: elsewhere, url: 'https://docs.example/guide', status: 'pending' }]);
      expect(await passages([best, failed, older, other, idn, idnPending])).toEqual(
        [
          { link_id: best, content: 'keptword one' },
          { link_id: best, content: 'keptword two' },
          { link_id: other, content: 'otherword' },
          { link_id: idn, content: 'idnword' },
        ].sort((x, y) => (x.link_id < y.link_id ? -1 : x.link_id > y.link_id ? 1 : 0)),
      );

      // Nothing left to do the second time.
      await canonicalLinks().up(storage.db);
      expect((await rows(a)).map((r) => r.id).sort()).toEqual([best, other, pending, idn].sort());
    });

    it('pages through more links than one batch', async () => {
      const bot = randomUUID();
      await link(bot, 'HTTPS://Bulk.example/first', 'pending', T(1));
      const values = Array.from({ length: 1204 }, (_, i) => ({
        id: randomUUID(),
        bot_id: bot,
        url: `HTTPS://Bulk.example/${i}#x`,
        status: 'pending',
        error: null,
        passages: 0,
        attempts: 0,
        generation: 0,
        run_after: T(1),
        lease_owner: null,
        lease_expires_at: null,
        created_at: T(1),
        updated_at: T(1),
      }));
      for (let i = 0; i < values.length; i += 300)
        await storage.db
          .insertInto('kb_links')
          .values(values.slice(i, i + 300))
          .execute();
      await canonicalLinks().up(storage.db);
      const after = await rows(bot);
      expect(after).toHaveLength(1205);
      expect(after.every((r) => /^https:\/\/bulk\.example\/(\d+|first)$/.test(r.url))).toBe(true);
    });
  });
}
