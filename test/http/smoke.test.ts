import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../support/app.js';
import { DIALECTS } from '../support/databases.js';

for (const dialect of DIALECTS) {
  describe(`copilots smoke (${dialect})`, () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await buildTestApp(dialect);
    });
    afterAll(async () => t.close());

    it('creates and lists a copilot', async () => {
      const created = await t.app.inject({
        method: 'POST',
        url: '/backend/api/copilots',
        headers: { authorization: t.admin },
        payload: { name: 'Shop helper' },
      });
      expect(created.statusCode).toBe(201);
      const list = await t.app.inject({ method: 'GET', url: '/backend/api/copilots', headers: { authorization: t.admin } });
      expect(list.statusCode).toBe(200);
      const body = list.json();
      expect(body).toHaveLength(1);
      expect(Object.keys(body[0])).toEqual([
        'id',
        'name',
        'token',
        'website',
        'status',
        'prompt_message',
        'enhanced_privacy',
        'smart_sync',
        'swagger_url',
        'is_premade_demo_template',
        'created_at',
        'updated_at',
        'deleted_at',
      ]);
      expect(list.body).toBe(JSON.stringify(body));
    });
  });
}
