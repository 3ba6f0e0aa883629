/**
 * Issue 15 §4: what the served OpenAPI document must say — an operationId on every operation,
 * the uploads' request bodies, GET …/swagger as it answers, the named components, the headers
 * the service answers with, and each route's error answers.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { Copilot } from '../../src/domain/wire.js';
import { ERROR_STATUS } from '../../src/errors.js';
import { COPILOT_KEYS } from '../support/http.js';
import { operations, servedDocument, type Json } from './served-document.js';

const RAW_UPLOAD_TYPES = ['application/json', 'application/yaml', 'application/x-yaml', 'text/yaml', 'text/x-yaml'];

describe('the OpenAPI document', () => {
  let doc: Json;
  beforeAll(async () => {
    doc = await servedDocument();
  });

  const op = (method: string, path: string): Json => doc.paths[path][method];
  const resolve = (schema: Json): Json => (schema.$ref ? doc.components.schemas[schema.$ref.replace('#/components/schemas/', '')] : schema);

  it('gives every operation a unique operationId, a summary, a description and a tag', () => {
    const all = operations(doc);
    expect(all.length).toBeGreaterThan(20);
    for (const { method, path, operation } of all) {
      expect(operation.operationId, `${method} ${path}`).toMatch(/^[a-z][A-Za-z]+$/);
      expect(operation.summary, `${method} ${path}`).toBeTruthy();
      expect(operation.description, `${method} ${path}`).toBeTruthy();
      expect(operation.tags?.length, `${method} ${path}`).toBe(1);
    }
    const ids = all.map((o) => o.operation.operationId);
    expect(new Set(ids).size).toBe(ids.length);
    const tags = new Set((doc.tags as Json[]).map((t) => t.name));
    for (const { operation } of all) expect(tags.has(operation.tags[0]), operation.tags[0]).toBe(true);
  });

  it('names its servers (relative: wherever the service is reached)', () => {
    expect(doc.servers).toEqual([expect.objectContaining({ url: '/' })]);
  });

  it('names the wire shapes as components, every key typed', () => {
    const schemas = doc.components.schemas as Json;
    for (const name of [
      'Copilot',
      'ApiKey',
      'Endpoint',
      'ValidationResult',
      'Validations',
      'FlagMap',
      'KnowledgeBaseLink',
      'SearchResult',
      'AuditEntry',
      'Error',
    ]) {
      expect(schemas[name], name).toBeDefined();
    }
    // The copilot keeps the interface's key order (§2.1), all of them required.
    expect(Object.keys(schemas.Copilot.properties)).toEqual([...COPILOT_KEYS]);
    expect(schemas.Copilot.required).toEqual([...COPILOT_KEYS]);
    expect(Object.keys(Copilot.properties)).toEqual([...COPILOT_KEYS]);
    // The error codes are a closed list: the one in src/errors.ts.
    expect(schemas.Error.properties.error.enum).toEqual(Object.keys(ERROR_STATUS));
    // The validator's answer is typed to the last key (interface §2.3, §2.4).
    const result = schemas.ValidationResult;
    expect(Object.keys(result.properties)).toEqual(['chatbot_id', 'all_endpoints', 'validations']);
    expect(result.properties.all_endpoints.items.$ref).toBe('#/components/schemas/Endpoint');
    expect(result.properties.validations.$ref).toBe('#/components/schemas/Validations');
    expect(Object.keys(schemas.Endpoint.properties)).toEqual([
      'operationId',
      'type',
      'name',
      'description',
      'requestBody',
      'requestParameters',
      'responseBody',
      'path',
    ]);
    expect(Object.keys(schemas.Validations.properties).slice(0, 4)).toEqual([
      'endpoints_without_operation_id',
      'endpoints_without_description',
      'endpoints_without_name',
      'auth_type',
    ]);
    for (const [key, schema] of Object.entries(schemas.Validations.properties as Json)) {
      expect(schema.$ref ?? schema.type ?? schema.anyOf, key).toBeDefined();
    }
    const validator = op('get', '/backend/api/copilot/{id}/validator').responses['200'].content['application/json'].schema;
    expect(validator.$ref).toBe('#/components/schemas/ValidationResult');
  });

  it('gives both uploads their request bodies: each raw media type and the multipart fields', () => {
    const put = op('put', '/backend/api/copilot/{id}/swagger').requestBody.content as Json;
    expect(Object.keys(put)).toEqual([...RAW_UPLOAD_TYPES, 'multipart/form-data']);
    expect(put['application/json'].schema.type).toBe('object');
    expect(put['application/yaml'].schema.type).toBe('string');
    expect(Object.keys(put['multipart/form-data'].schema.properties)).toEqual(['file', 'swagger_file']);
    const post = op('post', '/backend/api/copilot/swagger').requestBody.content as Json;
    expect(Object.keys(post)).toEqual(['multipart/form-data']);
    expect(post['multipart/form-data'].schema.required).toEqual(['swagger_file', 'name']);
    expect(Object.keys(post['multipart/form-data'].schema.properties)).toEqual(['swagger_file', 'name', 'website', 'prompt_message']);
  });

  it('declares GET …/swagger as it answers: the stored JSON object or YAML text, with Content-Disposition', () => {
    const answer = op('get', '/backend/api/copilot/{id}/swagger').responses['200'];
    expect(answer.content['application/json'].schema.type).toBe('object');
    expect(answer.content['application/yaml'].schema.type).toBe('string');
    expect(answer.headers['content-disposition'].schema.type).toBe('string');
  });

  it('declares the Link, Location, x-request-id and Retry-After headers where they are answered', () => {
    for (const [method, path] of [
      ['get', '/backend/api/copilots'],
      ['get', '/backend/knowledgebase/b/{bot_id}'],
      ['get', '/backend/api/audit'],
    ]) {
      expect(op(method!, path!).responses['200'].headers.link, `${method} ${path}`).toBeDefined();
    }
    for (const [method, path] of [
      ['post', '/backend/api/copilots'],
      ['post', '/backend/api/copilot/swagger'],
    ]) {
      expect(op(method!, path!).responses['201'].headers.location, `${method} ${path}`).toBeDefined();
    }
    expect(doc.components.headers.XRequestId.schema.type).toBe('string');
    expect(doc.components.headers.RetryAfter.schema.type).toBe('integer');
    expect(doc.components.headers.WwwAuthenticate.schema.const).toBe('Bearer');
    for (const { method, path, operation } of operations(doc)) {
      for (const [status, response] of Object.entries(operation.responses as Json)) {
        expect(response.headers?.['x-request-id']?.$ref, `${method} ${path} ${status}`).toBe('#/components/headers/XRequestId');
        if (status === '503') expect(response.headers['retry-after'].$ref, `${method} ${path}`).toBe('#/components/headers/RetryAfter');
        if (status === '401') expect(response.headers['www-authenticate']?.$ref, `${method} ${path}`).toBe('#/components/headers/WwwAuthenticate');
      }
    }
  });

  it("lists each route's error answers, the framework's own refusals included, with the Error schema", () => {
    for (const { method, path, operation } of operations(doc)) {
      const responses = operation.responses as Json;
      const errors = Object.keys(responses).filter((s) => Number(s) >= 400);
      expect(errors, `${method} ${path}`).toContain('500');
      if (path.startsWith('/backend/')) {
        // documentFrameworkErrors (src/http/errors.ts): 408, 431 and 503 everywhere, 414 with path parameters.
        expect(errors, `${method} ${path}`).toEqual(expect.arrayContaining(['408', '431', '503', ...(path.includes('{') ? ['414'] : [])]));
        if (operation.security.length > 0) expect(errors, `${method} ${path}`).toContain('401');
      }
      for (const status of errors) {
        expect(resolve(responses[status].content['application/json'].schema).title, `${method} ${path} ${status}`).toBe('Error');
        expect(responses[status].description).toMatch(/^Error: [a-z_]+(, [a-z_]+)*$/);
      }
    }
  });

  it('marks a query parameter with a default as optional', () => {
    const limit = (op('get', '/backend/api/copilots').parameters as Json[]).find((p) => p.name === 'limit')!;
    expect(limit).toMatchObject({ required: false, schema: { default: 100 } });
    const q = (op('get', '/backend/knowledgebase/b/{bot_id}/search').parameters as Json[]).find((p) => p.name === 'q')!;
    expect(q.required).toBe(true);
  });
});
