/**
 * The copilot list's JSON is written with JSON.stringify rather than the schema serialiser
 * (issue 15 §2, bench section 3): its bytes must be exactly what JSON.stringify writes for the
 * copilots as one GET answers them, keys in wire order, on both databases, whatever text the
 * copilots hold.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../support/app.js';
import { DIALECTS } from '../support/databases.js';
import { call, COPILOT_KEYS } from '../support/http.js';

const LIST = '/backend/api/copilots';

// Every control character but NUL (refused at input), quotes, backslashes, the line and
// paragraph separators, DEL, non-ASCII letters, astral characters.
const awkward = ['\u0001', '\b', '\t', '\n', '\u000b', '\f', '\r', '\u001f', '"', '\\', '/', '\u007f', '\u2028', '\u2029', 'é', 'ß', '€', '😀', '𝄞', 'a', ' '];
const text = fc.array(fc.constantFrom(...awkward), { minLength: 1, maxLength: 24 }).map((chars) => chars.join(''));
// A name holds no control or invisible formatting character (refused at input): the rest of them.
const nameText = fc
  .array(fc.constantFrom(...awkward.filter((c) => !/[\u0000-\u001f\u007f\u2028\u2029]/.test(c))), { minLength: 1, maxLength: 24 })
  .map((chars) => chars.join(''));

for (const dialect of DIALECTS) {
  describe(`copilot list bytes (${dialect})`, () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await buildTestApp(dialect);
    });
    afterAll(async () => t?.close());

    it('are JSON.stringify of the copilots themselves, for any text they hold', async () => {
      await fc.assert(
        fc.asyncProperty(nameText, text, async (name, prompt) => {
          const created = await call(t, 'POST', LIST, { payload: { name: `x${name}`, prompt_message: prompt, enhanced_privacy: true } });
          expect(created.statusCode, created.body).toBe(201);
          const id = (created.json() as { id: string }).id;
          const list = await call(t, 'GET', `${LIST}?limit=3`);
          expect(list.statusCode).toBe(200);
          const one = (await call(t, 'GET', `/backend/api/copilot/${id}`)).json() as Record<string, unknown>;
          const items = list.json() as Array<Record<string, unknown>>;
          expect(items[0]).toEqual(one);
          for (const item of items) expect(Object.keys(item)).toEqual([...COPILOT_KEYS]);
          // Parsed objects keep their key order: stringifying them again gives the bytes the
          // database wrote only if it escaped every character as JSON.stringify does.
          expect(list.body).toBe(JSON.stringify(items));
        }),
        { numRuns: 40 },
      );
    });

    it('an empty page is []', async () => {
      const res = await call(t, 'GET', `${LIST}?status=live&q=${encodeURIComponent('no copilot has this name')}`);
      expect(res.statusCode).toBe(200);
      expect(res.body).toBe('[]');
      expect(res.headers.link).toBeUndefined();
    });
  });
}
