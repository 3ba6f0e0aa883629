/**
 * Issue 15 §4: the service's own validator, as the API uses it (upload, then GET …/validator),
 * flags none of the service's own endpoints and finds its base URL.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENDPOINT_FINDINGS } from '../../src/domain/validator/index.js';
import { buildTestApp, type TestApp } from '../support/app.js';
import { DIALECTS } from '../support/databases.js';
import { call, createCopilot, swaggerPath, validatorPath } from '../support/http.js';
import { operations } from './served-document.js';

for (const dialect of DIALECTS) {
  describe(`the service's own validator passes the service's own document (${dialect})`, () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await buildTestApp(dialect);
    });
    afterAll(async () => t.close());

    it('flags no endpoint, names the auth type and finds the base URL', async () => {
      const served = await call(t, 'GET', '/backend/openapi.json', { key: null });
      const copilot = await createCopilot(t, { name: 'Itself' });
      const uploaded = await call(t, 'PUT', swaggerPath(copilot.id), {
        payload: served.body,
        headers: { 'content-type': 'application/json' },
      });
      expect(uploaded.statusCode, uploaded.body).toBe(200);
      const res = await call(t, 'GET', validatorPath(copilot.id));
      expect(res.statusCode, res.body).toBe(200);
      const result = res.json();
      expect(result.chatbot_id).toBe(copilot.id);
      expect(result.all_endpoints).toHaveLength(operations(served.json()).length);
      for (const finding of ENDPOINT_FINDINGS) {
        expect(result.validations[finding.key], `${finding.key}: ${JSON.stringify(Object.keys(result.validations[finding.key]))}`).toEqual([]);
      }
      expect(result.validations.auth_type).toBe('http');
      expect(result.validations.base_url).toBe('/');
      // Issue 18: no error on any platform (names, path parameters, references, text lengths);
      // the warnings that remain are a multipart-only upload and the relative server.
      const errors = result.validations.findings.filter((f: { severity: string }) => f.severity === 'error');
      expect(errors).toEqual([]);
      for (const verdict of Object.values(result.validations.readiness.platforms)) expect(verdict).toMatchObject({ ready: true, blocking: 0 });
    });
  });
}
