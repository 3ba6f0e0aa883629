/**
 * Text both databases store alike (DESIGN §8; src/storage/storable-text.ts): PostgreSQL's `text`
 * refuses U+0000, which SQLite stores. Text derived from content the service read (a site's
 * robots.txt, the changes between API descriptions) may hold it; every statement writes and
 * compares it with U+FFFD in its place, on both databases, and bytes are left as they are.
 */
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertCopilot } from '../../src/storage/copilot.repository.js';
import type { Storage } from '../../src/storage/database.js';
import { storable } from '../../src/storage/storable-text.js';
import { createTestStorage, DIALECTS } from '../support/databases.js';

const T = '2024-01-01T00:00:00.000000Z';

describe('storable', () => {
  it('replaces U+0000 in text and in lists of text, and leaves every other value as it is', () => {
    expect(storable('a\u0000b\u0000')).toBe('a\ufffdb\ufffd');
    expect(storable(['x', 'y\u0000'])).toEqual(['x', 'y\ufffd']);
    const list = ['x', 'y'];
    expect(storable(list)).toBe(list);
    const bytes = Buffer.from('a\u0000b');
    expect(storable(bytes)).toBe(bytes);
    expect(storable(7)).toBe(7);
    expect(storable(null)).toBe(null);
  });
});

for (const dialect of DIALECTS) {
  describe(`text stored alike (${dialect})`, () => {
    let storage: Storage;
    let cleanup: () => Promise<void>;
    beforeAll(async () => {
      ({ storage, cleanup } = await createTestStorage(dialect));
    });
    afterAll(async () => cleanup?.());

    it('writes, updates and finds text holding U+0000 with U+FFFD in its place, on every connection', async () => {
      const id = randomUUID();
      const written = { id, name: 'n\u0000ame', token: 't', website: '', status: 'draft', prompt_message: '', swagger_url: '' };
      await insertCopilot(storage.db, {
        ...written,
        enhanced_privacy: 0,
        smart_sync: 0,
        is_premade_demo_template: 0,
        created_at: T,
        updated_at: T,
        deleted_at: null,
      });
      await storage.db.updateTable('copilots').set({ prompt_message: 'pro\u0000mpt' }).where('id', '=', id).execute();
      const row = await storage.db.selectFrom('copilots').select(['name', 'prompt_message']).where('name', '=', 'n\u0000ame').executeTakeFirst();
      expect(row).toEqual({ name: 'n\ufffdame', prompt_message: 'pro\ufffdmpt' });
      const raw = await sql<{ v: string }>`select ${'r\u0000aw'} as v`.execute(storage.db);
      expect(raw.rows[0]!.v).toBe('r\ufffdaw');
      // The reader (SQLite's own connection) and the scans' connections too.
      expect((await sql<{ v: string }>`select ${'\u0000'} as v`.execute(storage.readDb)).rows[0]!.v).toBe('\ufffd');
      expect((await sql<{ v: string }>`select ${'\u0000'} as v`.execute(storage.scanDb)).rows[0]!.v).toBe('\ufffd');
    });
  });
}
