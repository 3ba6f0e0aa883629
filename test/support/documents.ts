/**
 * API-description test helpers (HTTP): fixture documents, multipart bodies, the upload
 * and validator calls, and the expected counts of test/fixtures/specs/README.md.
 */
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import type { LightMyRequestResponse } from 'fastify';
import { expect } from 'vitest';
import type { TestApp } from './app.js';
import { call, copilotPath, expectCopilot, swaggerPath } from './http.js';

const FIXTURES = new URL('../fixtures/', import.meta.url);

export const STORED_NAME = /^[A-Za-z0-9]{20}\.(json|yaml)$/;

export const spec = (name: string): Buffer => readFileSync(new URL(`specs/${name}`, FIXTURES));
export const hostile = (name: string): Buffer => readFileSync(new URL(`validator/hostile/${name}`, FIXTURES));
export const HOSTILE_FILES = readdirSync(new URL('validator/hostile/', FIXTURES)).sort();

/** A small OpenAPI 3 document (JSON text) with one described GET per path: versions of it differ by their paths. */
export const apiOfPaths = (paths: string[]): string =>
  JSON.stringify({
    openapi: '3.0.3',
    info: { title: 'T', version: '1' },
    servers: [{ url: 'https://api.example.com' }],
    paths: Object.fromEntries(
      paths.map((p) => [p, { get: { operationId: p.slice(1), summary: 's', description: 'd', responses: { '200': { description: 'ok' } } } }]),
    ),
  });

/** The media type a fixture is sent as, by its extension. */
export const mediaTypeOf = (file: string): string => (file.endsWith('.json') ? 'application/json' : 'application/yaml');

export interface FilePart {
  name: string;
  filename?: string;
  type?: string;
  content: Buffer | string;
}
export interface FieldPart {
  name: string;
  /** Bytes are sent as they are (a field that is not UTF-8, say). */
  value: string | Buffer;
}

/** A multipart/form-data body and its Content-Type header. */
export function multipart(parts: Array<FilePart | FieldPart>): { payload: Buffer; contentType: string } {
  const boundary = `----cms-test-${randomBytes(8).toString('hex')}`;
  const chunks: Buffer[] = [];
  for (const part of parts) {
    if ('value' in part) {
      chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${part.name}"\r\n\r\n`), Buffer.from(part.value), Buffer.from('\r\n'));
    } else {
      const filename = part.filename === undefined ? '' : `; filename="${part.filename}"`;
      const type = `Content-Type: ${part.type ?? 'application/octet-stream'}\r\n`;
      chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${part.name}"${filename}\r\n${type}\r\n`));
      chunks.push(Buffer.isBuffer(part.content) ? part.content : Buffer.from(part.content));
      chunks.push(Buffer.from('\r\n'));
    }
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { payload: Buffer.concat(chunks), contentType: `multipart/form-data; boundary=${boundary}` };
}

export function putRaw(t: TestApp, id: string, bytes: Buffer | string, type: string, key?: string | null): Promise<LightMyRequestResponse> {
  return call(t, 'PUT', swaggerPath(id), { payload: bytes, headers: { 'content-type': type }, key });
}

export function putMultipart(t: TestApp, id: string, parts: Array<FilePart | FieldPart>, key?: string | null): Promise<LightMyRequestResponse> {
  const { payload, contentType } = multipart(parts);
  return call(t, 'PUT', swaggerPath(id), { payload, headers: { 'content-type': contentType }, key });
}

/** Uploads a fixture of test/fixtures/specs (raw, by its extension); expects 200 and returns the copilot. */
export async function uploadSpec(t: TestApp, id: string, file: string): Promise<Record<string, any>> {
  const res = await putRaw(t, id, spec(file), mediaTypeOf(file));
  expect(res.statusCode, res.body).toBe(200);
  return expectCopilot(res.json());
}

export async function setSwaggerUrl(t: TestApp, id: string, url: string): Promise<void> {
  const res = await call(t, 'PATCH', copilotPath(id), { payload: { swagger_url: url } });
  expect(res.statusCode, res.body).toBe(200);
  expect(res.json().swagger_url).toBe(url);
}

/** Runs a request and measures how long the answer took. */
export async function timed(request: () => Promise<LightMyRequestResponse>): Promise<{ res: LightMyRequestResponse; ms: number }> {
  const started = performance.now();
  const res = await request();
  return { res, ms: performance.now() - started };
}

/** What the validator must report per real document (test/fixtures/specs/README.md). */
export interface SpecCounts {
  ops: number;
  noOperationId: number;
  noDescription: number;
  noSummary: number;
  authType: string;
}

export const SPEC_COUNTS: Record<string, SpecCounts> = {
  'petstore3.yaml': { ops: 19, noOperationId: 0, noDescription: 0, noSummary: 0, authType: 'oauth2' },
  'petstore3.json': { ops: 19, noOperationId: 0, noDescription: 0, noSummary: 0, authType: 'oauth2' },
  'petstore31.yaml': { ops: 6, noOperationId: 0, noDescription: 0, noSummary: 0, authType: 'oauth2' },
  'openfaas-gateway.swagger2.yaml': { ops: 16, noOperationId: 16, noDescription: 14, noSummary: 0, authType: 'http' },
  'uber.swagger2.json': { ops: 5, noOperationId: 5, noDescription: 0, noSummary: 0, authType: 'none' },
  'webhook-example.oas31.json': { ops: 0, noOperationId: 0, noDescription: 0, noSummary: 0, authType: 'none' },
  'conveyour.json': { ops: 10, noOperationId: 2, noDescription: 2, noSummary: 1, authType: 'none' },
  'educational_agencies.json': { ops: 12, noOperationId: 0, noDescription: 12, noSummary: 0, authType: 'none' },
  'guild_quality.json': { ops: 11, noOperationId: 0, noDescription: 0, noSummary: 0, authType: 'none' },
  'market_data.json': { ops: 10, noOperationId: 0, noDescription: 0, noSummary: 10, authType: 'none' },
  'nl_business_gov.json': { ops: 4, noOperationId: 0, noDescription: 0, noSummary: 0, authType: 'none' },
  'slack.json': { ops: 174, noOperationId: 0, noDescription: 0, noSummary: 174, authType: 'oauth2' },
  'telegram_reduced.json': { ops: 4, noOperationId: 4, noDescription: 0, noSummary: 4, authType: 'none' },
  'trello.json': { ops: 12, noOperationId: 0, noDescription: 0, noSummary: 0, authType: 'none' },
};

/** The validations keys the interface defines, first and in this order (DESIGN §5). */
export const INTERFACE_VALIDATION_KEYS = ['endpoints_without_operation_id', 'endpoints_without_description', 'endpoints_without_name', 'auth_type'];

/** Number of endpoints a flag map flags (`[]` when none, DESIGN §5). */
export function flagCount(map: unknown): number {
  if (Array.isArray(map)) {
    expect(map).toEqual([]);
    return 0;
  }
  expect(typeof map).toBe('object');
  return Object.keys(map as object).length;
}

/**
 * Asserts a validator answer for `id`: the body's exact prefix, canonical JSON, the key
 * order, and that every flag map (those of the interface and the additive ones) maps
 * valid indexes to objects deep-equal to `all_endpoints[index]`. Returns the parsed body.
 */
export function expectValidation(
  res: LightMyRequestResponse,
  id: string,
): { chatbot_id: string; all_endpoints: Array<Record<string, unknown>>; validations: Record<string, unknown> } {
  expect(res.statusCode, res.body.slice(0, 500)).toBe(200);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  expect(res.body.startsWith(`{"chatbot_id":"${id}","all_endpoints":`), res.body.slice(0, 120)).toBe(true);
  expect(res.body).toBe(JSON.stringify(JSON.parse(res.body)));
  const body = res.json();
  expect(Object.keys(body)).toEqual(['chatbot_id', 'all_endpoints', 'validations']);
  expect(Object.keys(body.validations).slice(0, 4)).toEqual(INTERFACE_VALIDATION_KEYS);
  for (const [key, value] of Object.entries(body.validations as Record<string, unknown>)) {
    if (!key.startsWith('endpoints_')) continue;
    if (Array.isArray(value)) {
      expect(value, key).toEqual([]);
      continue;
    }
    for (const [index, endpoint] of Object.entries(value as Record<string, unknown>)) {
      expect(index, `${key} index`).toMatch(/^(0|[1-9]\d*)$/);
      expect(Number(index), `${key}[${index}]`).toBeLessThan(body.all_endpoints.length);
      expect(endpoint, `${key}[${index}]`).toStrictEqual(body.all_endpoints[Number(index)]);
    }
  }
  return body;
}
