import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../support/app.js';
import { DIALECTS } from '../support/databases.js';
import { setSwaggerUrl, uploadSpec } from '../support/documents.js';
import { createCopilot, swaggerPath, validatorPath } from '../support/http.js';

for (const dialect of DIALECTS) {
  describe(`stored API descriptions belong to their copilot (${dialect})`, () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await buildTestApp(dialect);
    });
    afterAll(async () => t.close());
    beforeEach(() => t.validationCache.clear());

    it("a copilot whose swagger_url names another copilot's stored file reads nothing (422 swagger_missing)", async () => {
      const owner = await createCopilot(t, { name: 'owner' });
      const uploaded = await uploadSpec(t, owner.id, 'petstore3.json');
      const intruder = await createCopilot(t, { name: 'intruder' });
      await setSwaggerUrl(t, intruder.id, uploaded.swagger_url);
      const limited = await t.key(['copilots:read'], [intruder.id]);
      for (const path of [validatorPath(intruder.id), swaggerPath(intruder.id)]) {
        const res = await t.app.inject({ method: 'GET', url: path, headers: { authorization: limited } });
        expect(res.statusCode, path).toBe(422);
        expect(res.json().error).toBe('swagger_missing');
      }
      const own = await t.app.inject({ method: 'GET', url: validatorPath(owner.id), headers: { authorization: t.admin } });
      expect(own.statusCode).toBe(200);
    });

    it('the upload parses the document once: its first validation is answered from the cache', async () => {
      const copilot = await createCopilot(t, { name: 'cached' });
      await uploadSpec(t, copilot.id, 'slack.json');
      const before = t.validationCache.stats();
      const res = await t.app.inject({ method: 'GET', url: validatorPath(copilot.id), headers: { authorization: t.admin } });
      expect(res.statusCode).toBe(200);
      const after = t.validationCache.stats();
      expect(after.hits).toBe(before.hits + 1);
      expect(after.misses).toBe(before.misses);
    });
  });
}
