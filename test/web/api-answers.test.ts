import { afterEach, describe, expect, it, vi } from 'vitest';
import { ApiError, request } from '../../web/src/api.js';

/** request(): what the dashboard makes of the service's answers, fetch stubbed. */
function answering(status: number, contentType: string | null, body: string) {
  vi.stubGlobal('document', { baseURI: 'http://127.0.0.1:8080/' });
  vi.stubGlobal('sessionStorage', { getItem: () => 'key', setItem: () => undefined, removeItem: () => undefined });
  vi.stubGlobal('fetch', async () => new Response(body === '' ? null : body, { status, headers: contentType ? { 'content-type': contentType } : {} }));
}

describe('request', () => {
  afterEach(() => vi.unstubAllGlobals());

  it('gives the JSON of a success, and null for an empty one (204)', async () => {
    answering(200, 'application/json; charset=utf-8', '[{"id":"a"}]');
    expect((await request('GET', '/backend/api/copilots')).data).toEqual([{ id: 'a' }]);
    answering(204, null, '');
    expect((await request('DELETE', '/backend/api/keys/x')).data).toBeNull();
  });

  it.each([
    ['an HTML page', 'text/html', '<!doctype html><title>Sign in</title>'],
    ['JSON it cannot read', 'application/json', '{"items": ['],
  ])('a success that is %s is an error, not empty data (it showed "No copilots yet")', async (_label, contentType, body) => {
    answering(200, contentType, body);
    const error = await request('GET', '/backend/api/copilots').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect(error).toMatchObject({ status: 200, code: 'unexpected_answer' });
    expect((error as ApiError).message).toMatch(/not its JSON/);
  });
});
