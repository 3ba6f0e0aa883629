import net from 'node:net';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { expect } from 'vitest';
import { Copilot } from '../../src/domain/wire.js';
import type { TestApp } from './app.js';

// The API's paths.
export const COPILOTS_PATH = '/backend/api/copilots';
export const KEYS_PATH = '/backend/api/keys';
export const AUDIT_PATH = '/backend/api/audit';
export const copilotPath = (id: string) => `/backend/api/copilot/${id}`;
export const swaggerPath = (id: string) => `${copilotPath(id)}/swagger`;
export const validatorPath = (id: string) => `${copilotPath(id)}/validator`;
export const purgePath = (id: string) => `${copilotPath(id)}/purge`;
export const kbPath = (bot: string) => `/backend/knowledgebase/b/${bot}`;

/** Every copilot field, in the wire order (the schema's; test/contract/document.test.ts holds it to interface §2.1). */
export const COPILOT_KEYS = Object.keys(Copilot.properties);

export const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;
export const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
export const API_KEY = /^cms_[A-Za-z0-9]{16}_[A-Za-z0-9]{32}$/;

/** Anything that would leak internals into a response body. */
export const LEAKS: Array<[string, RegExp]> = [
  ['stack frame', /\bat [\w$.<>]+ \(|\bat (file:\/\/|\/)|\n\s+at /],
  ['source location', /\.(ts|js|mjs|cjs):\d+/],
  ['node_modules', /node_modules/],
  ['absolute path', /(^|[\s"'(=])\/(work|home|usr|tmp|var|etc|opt|root|srv|app)\//],
  ['file URL', /file:\/\//],
  ['SQL text', /\b(select|insert|update|delete)\b[\s\S]*\b(from|into|set|where)\b|\bsqlite|postgres|\bpg_|relation "|syntax error at/i],
  ['error class', /\b(TypeError|ReferenceError|SqliteError|DatabaseError|FastifyError|SyntaxError)\b/],
];

export function expectNoLeaks(body: string): void {
  for (const [what, pattern] of LEAKS) {
    expect(pattern.test(body), `${what} in response body: ${body}`).toBe(false);
  }
}

/** Asserts the contract's error body: exactly {error, message[, details]}, snake_case code. */
export function expectError(res: LightMyRequestResponse, status: number, code: string): Record<string, unknown> {
  expect(res.statusCode, res.body).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  const body = res.json() as Record<string, unknown>;
  const keys = Object.keys(body);
  expect(keys.slice(0, 2)).toEqual(['error', 'message']);
  expect(keys.length === 2 || (keys.length === 3 && keys[2] === 'details'), `unexpected keys ${keys.join(',')}`).toBe(true);
  expect(body.error).toBe(code);
  expect(body.error).toMatch(/^[a-z]+(_[a-z]+)*$/);
  expect(typeof body.message).toBe('string');
  expect((body.message as string).length).toBeGreaterThan(0);
  expectNoLeaks(res.body);
  return body;
}

/** Asserts a copilot on the wire and returns it. */
export function expectCopilot(value: unknown): Record<string, unknown> {
  const c = value as Record<string, unknown>;
  expect(Object.keys(c)).toEqual([...COPILOT_KEYS]);
  expect(c.id).toMatch(UUID_V4);
  expect(typeof c.name).toBe('string');
  expect(c.token).toMatch(/^[A-Za-z0-9]{20}$/);
  expect(typeof c.website).toBe('string');
  expect(['draft', 'live']).toContain(c.status);
  expect(typeof c.prompt_message).toBe('string');
  for (const flag of ['enhanced_privacy', 'smart_sync', 'is_premade_demo_template']) {
    expect([0, 1], `${flag} = ${JSON.stringify(c[flag])}`).toContain(c[flag]);
    expect(Number.isInteger(c[flag])).toBe(true);
  }
  expect(typeof c.swagger_url).toBe('string');
  expect(c.created_at).toMatch(TIMESTAMP);
  expect(c.updated_at).toMatch(TIMESTAMP);
  if (c.deleted_at !== null) expect(c.deleted_at).toMatch(TIMESTAMP);
  return c;
}

/** The body is compact JSON exactly as JSON.stringify writes it. */
export function expectCanonicalJson(res: LightMyRequestResponse): void {
  expect(res.body).toBe(JSON.stringify(JSON.parse(res.body)));
}

export interface Call {
  key?: string | null;
  payload?: unknown;
  headers?: Record<string, string>;
}

/** app.inject with the admin key unless told otherwise (`key: null` sends none). */
export function call(t: TestApp, method: InjectOptions['method'], url: string, options: Call = {}): Promise<LightMyRequestResponse> {
  const key = options.key === undefined ? t.admin : options.key;
  return t.app.inject({
    method,
    url,
    headers: { ...(key !== null && { authorization: key }), ...options.headers },
    ...(options.payload !== undefined && { payload: options.payload as InjectOptions['payload'] }),
  });
}

/** Creates a copilot with the admin key (`name` 'Copilot' unless given); expects 201 and returns it. */
export async function createCopilot(t: TestApp, fields: Record<string, unknown> = {}): Promise<Copilot> {
  const res = await call(t, 'POST', COPILOTS_PATH, { payload: { name: 'Copilot', ...fields } });
  expect(res.statusCode, res.body).toBe(201);
  return res.json();
}

/** The target of a `Link: <…>; rel="next"` header, or null. */
export function nextLink(res: LightMyRequestResponse): string | null {
  const header = res.headers.link;
  if (header === undefined) return null;
  const match = /^<([^>]+)>;\s*rel="next"$/.exec(String(header));
  expect(match, `Link header: ${header}`).not.toBeNull();
  return match![1]!;
}

/** A TCP port free on 127.0.0.1 a moment ago, for a service the test starts as a process. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}
