/**
 * Issue 14 §4: the copilot list's `q` (name contains) folds case and diacritics the same way
 * on SQLite and PostgreSQL (src/text/folding.ts), for every script, and keeps treating
 * `%`, `_` and `\` literally.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../support/app.js';
import { DIALECTS } from '../support/databases.js';
import { call, COPILOTS_PATH, copilotPath, createCopilot } from '../support/http.js';

for (const dialect of DIALECTS) {
  describe(`copilot list q: Unicode folding (${dialect})`, () => {
    let t: TestApp;
    const ids = new Map<string, string>();
    const names = ['Éclair équipe ÜBER', 'Straße Helper', 'ΟΔΟΣ bot', 'ПРИВЕТ bot', 'ﬁle ＡＰＩ', 'İstanbul desk', 'Plain eclair', '50% _off\\'];

    const found = async (q: string) =>
      ((await call(t, 'GET', `${COPILOTS_PATH}?q=${encodeURIComponent(q)}&limit=1000`)).json() as Array<{ name: string }>).map((c) => c.name).sort();

    beforeAll(async () => {
      t = await buildTestApp(dialect);
      for (const name of names) ids.set(name, (await createCopilot(t, { name })).id);
    });
    afterAll(async () => t?.close());

    it('finds a name by any case and with or without its diacritics', async () => {
      for (const q of ['éclair', 'ÉCLAIR', 'eclair', 'Eclair']) expect(await found(q), q).toEqual(['Plain eclair', 'Éclair équipe ÜBER']);
      for (const q of ['über', 'uber', 'UBER', 'Über', 'equipe über', 'ÉQUIPE UBER']) expect(await found(q), q).toEqual(['Éclair équipe ÜBER']);
      expect(await found('e\u0301clair')).toEqual(['Plain eclair', 'Éclair équipe ÜBER']); // decomposed é
    });

    it('folds case beyond ASCII: ß and ss, Greek final sigma, Cyrillic, dotted İ', async () => {
      for (const q of ['straße', 'STRASSE', 'strasse']) expect(await found(q), q).toEqual(['Straße Helper']);
      for (const q of ['οδος', 'οδοσ', 'ΟΔΟΣ']) expect(await found(q), q).toEqual(['ΟΔΟΣ bot']);
      for (const q of ['привет', 'Привет']) expect(await found(q), q).toEqual(['ПРИВЕТ bot']);
      expect(await found('istanbul')).toEqual(['İstanbul desk']);
    });

    it('matches compatibility forms (ligatures, full-width letters)', async () => {
      expect(await found('file api')).toEqual(['ﬁle ＡＰＩ']);
      expect(await found('ＦＩＬＥ')).toEqual(['ﬁle ＡＰＩ']);
    });

    it('still treats %, _ and \\ literally', async () => {
      expect(await found('%')).toEqual(['50% _off\\']);
      expect(await found('_')).toEqual(['50% _off\\']);
      expect(await found('\\')).toEqual(['50% _off\\']);
      expect(await found('0%_')).toEqual([]);
    });

    it('a renamed copilot is found by its new name only', async () => {
      const id = ids.get('Plain eclair')!;
      const res = await call(t, 'PATCH', copilotPath(id), { payload: { name: 'Crème brûlée' } });
      expect(res.statusCode, res.body).toBe(200);
      expect(await found('creme brulee')).toEqual(['Crème brûlée']);
      expect(await found('eclair')).toEqual(['Éclair équipe ÜBER']);
      // Updating another field keeps the name findable.
      expect((await call(t, 'PATCH', copilotPath(id), { payload: { status: 'live' } })).statusCode).toBe(200);
      expect(await found('CRÈME')).toEqual(['Crème brûlée']);
    });
  });
}
