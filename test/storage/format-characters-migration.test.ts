/**
 * Migration 023-format-characters: folding removes format characters since then (a soft hyphen
 * or zero-width joiner inside a word no longer splits it). A copilot name holding one was stored
 * folded with it, so `q`, folded without it, did not find it: such names are folded again.
 */
import type { Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatCharacters } from '../../src/storage/migrations/023-format-characters.js';
import { buildTestApp, type TestApp } from '../support/app.js';
import { DIALECTS } from '../support/databases.js';
import { call, COPILOTS_PATH, createCopilot } from '../support/http.js';

for (const dialect of DIALECTS) {
  describe(`migration 023-format-characters (${dialect})`, () => {
    let t: TestApp;
    let db: Kysely<any>;
    beforeAll(async () => {
      t = await buildTestApp(dialect);
      db = t.storage.db as unknown as Kysely<any>;
    });
    afterAll(async () => t?.close());

    const found = async (q: string) =>
      ((await call(t, 'GET', `${COPILOTS_PATH}?q=${encodeURIComponent(q)}`)).json() as Array<{ name: string }>).map((c) => c.name);

    it('a name holding a soft hyphen or a zero-width joiner is found by its word once folded again; other names are untouched', async () => {
      const soft = await createCopilot(t, { name: 'Pay\u00adments desk' });
      const joined = await createCopilot(t, { name: 'Family \u{1f468}\u200d\u{1f469} bot' });
      const plain = await createCopilot(t, { name: 'Plain desk' });
      expect(await found('payments')).toEqual(['Pay\u00adments desk']);
      // As a build before this folding stored them.
      await db.updateTable('copilots').set({ name_folded: 'pay\u00adments desk' }).where('id', '=', soft.id).execute();
      await db.updateTable('copilots').set({ name_folded: 'family \u{1f468}\u200d\u{1f469} bot' }).where('id', '=', joined.id).execute();
      await db.updateTable('copilots').set({ name_folded: 'kept as it was' }).where('id', '=', plain.id).execute();
      expect(await found('payments')).toEqual([]);

      await formatCharacters().up(db);

      expect(await found('payments')).toEqual(['Pay\u00adments desk']);
      expect(await found('\u{1f468}\u{1f469}')).toEqual(['Family \u{1f468}\u200d\u{1f469} bot']);
      expect(await found('\u{1f468}\u200d\u{1f469}')).toEqual(['Family \u{1f468}\u200d\u{1f469} bot']);
      const untouched = await db.selectFrom('copilots').select('name_folded').where('id', '=', plain.id).executeTakeFirstOrThrow();
      expect(untouched.name_folded).toBe('kept as it was');
    });
  });
}
