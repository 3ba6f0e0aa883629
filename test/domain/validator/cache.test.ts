import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createValidationCache, renderFresh, renderValidation as renderNow, type Renderer, type ValidationCache } from '../../../src/domain/validator/index.js';
import type { DocumentSource } from '../../../src/domain/validator/index.js';
import { AppError } from '../../../src/errors.js';
import { expectAppErrorAsync, fixture, source } from './helpers.js';

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
/** What a renderer gives: its bytes, with a readiness summary. */
const rendered = (text: string | Uint8Array) => ({
  answer: typeof text === 'string' ? Buffer.from(text, 'utf8') : text,
  readiness: { score: 50, readyPlatforms: [] },
});
const doc = (title: string) =>
  source(JSON.stringify({ openapi: '3.0.3', info: { title, version: '1' }, paths: { '/a': { get: { summary: title } } } }), 'a.json');

describe('validation cache', () => {
  let cache: ValidationCache;
  beforeEach(() => {
    cache = createValidationCache({ maxBytes: 64 * 1024 * 1024 });
  });
  afterEach(() => vi.restoreAllMocks());
  const validationAnswer = async (src: DocumentSource, opts: { sha256?: string } = {}, render: Renderer = renderNow) =>
    (await cache.answer(src, opts, render)).answer;
  const renderValidation = async (src: DocumentSource, opts: { sha256?: string } = {}, render: Renderer = renderNow) =>
    (await validationAnswer(src, opts, render)).toString('utf8');
  const cachedValidation = (sha256: string) => cache.cached(sha256);
  const validationCacheStats = () => cache.stats();

  it('answers a repeated document without parsing it again (JSON)', async () => {
    const src = fixture('specs/petstore3.json');
    const first = await renderValidation(src);
    const parse = vi.spyOn(JSON, 'parse');
    const second = await renderValidation({ ...src, bytes: Buffer.from(src.bytes) });
    expect(parse).not.toHaveBeenCalled();
    expect(second).toBe(first);
    expect(validationCacheStats()).toMatchObject({ entries: 1, hits: 1, misses: 1 });
  });

  it('answers a repeated document without parsing it again (YAML)', async () => {
    const jsYaml = createRequire(import.meta.url)('js-yaml') as { load: (...args: unknown[]) => unknown };
    const load = vi.spyOn(jsYaml, 'load');
    const src = fixture('specs/petstore3.yaml');
    const first = await renderValidation(src);
    expect(load).toHaveBeenCalledTimes(1);
    expect(await renderValidation(src)).toBe(first);
    expect(load).toHaveBeenCalledTimes(1);
  });

  it('trusts a sha256 the caller already has (no hashing, no parsing)', async () => {
    const a = doc('a');
    const text = await renderValidation(a, { sha256: sha(a.bytes) });
    const parse = vi.spyOn(JSON, 'parse');
    expect(await renderValidation(doc('b'), { sha256: sha(a.bytes) })).toBe(text);
    expect(parse).not.toHaveBeenCalled();
  });

  it('serves cachedValidation(sha256) once a document was rendered', async () => {
    const a = doc('a');
    expect(cachedValidation(sha(a.bytes))).toBeUndefined();
    const text = await renderValidation(a);
    expect(cachedValidation(sha(a.bytes))?.toString('utf8')).toBe(text);
  });

  it('keeps answers as UTF-8 bytes and hands out the same Buffer every time (no copy, no encoding)', async () => {
    const src = fixture('specs/petstore3.json');
    const first = await validationAnswer(src);
    expect(Buffer.isBuffer(first)).toBe(true);
    expect(await validationAnswer(src)).toBe(first);
    expect(cachedValidation(sha(src.bytes))).toBe(first);
    expect(first.equals(renderFresh(src))).toBe(true);
  });

  it('keeps the readiness summary the renderer gives beside its answer, and answers both on a hit', async () => {
    const src = fixture('specs/slack.json');
    const first = await cache.answer(src, {}, renderNow);
    const render = vi.fn(renderNow);
    const second = await cache.answer({ ...src, bytes: Buffer.from(src.bytes) }, {}, render);
    expect(render).not.toHaveBeenCalled();
    expect(second).toBe(first);
    const { readiness } = JSON.parse(first.answer.toString('utf8')).validations;
    expect(second.readiness).toEqual({
      score: readiness.score,
      readyPlatforms: Object.keys(readiness.platforms).filter((p) => readiness.platforms[p].ready),
    });
  });

  it('takes the UTF-8 bytes a renderer gives as they are (a task thread’s answer)', async () => {
    const bytes = Buffer.from('{"all_endpoints":[],"validations":{"x":"é"}}', 'utf8');
    const answer = await validationAnswer(doc('a'), {}, () => rendered(new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength)));
    expect(answer.buffer).toBe(bytes.buffer);
    expect(answer.toString('utf8')).toBe('{"all_endpoints":[],"validations":{"x":"é"}}');
  });

  it('caches a document that cannot be read as its error, and never parses it twice', async () => {
    const bad = fixture('validator/hostile/billion-laughs.yaml');
    const first = await expectAppErrorAsync(renderValidation(bad));
    const jsYaml = createRequire(import.meta.url)('js-yaml') as { load: (...args: unknown[]) => unknown };
    const load = vi.spyOn(jsYaml, 'load');
    const second = await expectAppErrorAsync(renderValidation(bad));
    expect(load).not.toHaveBeenCalled();
    expect(second.message).toBe(first.message);
    expect(second.details).toEqual(first.details);
    expect(cachedValidation(sha(bad.bytes))).toBeUndefined();
  });

  it('caches what the renderer refuses as invalid_swagger_file, and nothing else it throws', async () => {
    const refuse = vi.fn(() => {
      throw new AppError('invalid_swagger_file', 'No.', { line: 1 });
    });
    const first = await expectAppErrorAsync(renderValidation(doc('a'), {}, refuse));
    const second = await expectAppErrorAsync(renderValidation(doc('a'), {}, refuse));
    expect(refuse).toHaveBeenCalledTimes(1);
    expect(second).toMatchObject({ message: first.message, details: { line: 1 } });

    // Not the document's fault (a busy or lost thread): tried again next time.
    const unavailable = vi.fn(async () => {
      throw new AppError('service_unavailable', 'Busy.');
    });
    await expectAppErrorAsync(renderValidation(doc('b'), {}, unavailable), 'service_unavailable');
    const crashed = vi.fn(async (): Promise<ReturnType<typeof rendered>> => {
      throw new Error('The task thread exited with code 1.');
    });
    await expect(renderValidation(doc('b'), {}, crashed)).rejects.toThrow('exited');
    expect(await renderValidation(doc('b'))).toContain('"path":"/a"');
    expect(unavailable).toHaveBeenCalledTimes(1);
    expect(crashed).toHaveBeenCalledTimes(1);
  });

  it('renders a document sent again while it is being rendered once, for both callers', async () => {
    let finish: (text: string) => void = () => {};
    const render = vi.fn(() => new Promise<string>((resolve) => (finish = resolve)).then(rendered));
    const known = { sha256: sha(doc('a').bytes) }; // no hashing: both calls reach the renderer's turn at once
    const a = renderValidation(doc('a'), known, render);
    const b = renderValidation({ ...doc('a'), bytes: Buffer.from(doc('a').bytes) }, known, render);
    await new Promise((resolve) => setImmediate(resolve));
    expect(render).toHaveBeenCalledTimes(1);
    finish('{"all_endpoints":[]}');
    expect(await a).toBe('{"all_endpoints":[]}');
    expect(await b).toBe('{"all_endpoints":[]}');
    expect(render).toHaveBeenCalledTimes(1);
    expect(cachedValidation(sha(doc('a').bytes))?.toString('utf8')).toBe('{"all_endpoints":[]}');
  });

  it('a caller that joined a render refused for its starter (busy, over its quota) renders for itself', async () => {
    // Two copilots with the same document: the second joined the first's render, which waited in
    // the first copilot's turn and was refused there (429): that refusal is not the second's.
    let refuse: (err: unknown) => void = () => {};
    const theirs = vi.fn(() => new Promise<never>((_resolve, reject) => (refuse = reject)));
    const mine = vi.fn(renderNow);
    const known = { sha256: sha(doc('a').bytes) };
    const first = cache.answer(doc('a'), known, theirs);
    const second = cache.answer(doc('a'), known, mine);
    await new Promise((resolve) => setImmediate(resolve));
    refuse(new AppError('quota_exceeded', 'This copilot has 8 API descriptions waiting.'));
    await expectAppErrorAsync(first, 'quota_exceeded');
    expect((await second).answer.toString('utf8')).toContain('"path":"/a"');
    expect(mine).toHaveBeenCalledTimes(1);
    // The document's own fault is the same for everyone: shared, never rendered twice.
    const bad = source('{"openapi":', 'bad.json');
    const badKnown = { sha256: sha(bad.bytes) };
    const render = vi.fn(renderNow);
    const a = cache.answer(bad, badKnown, render);
    const b = cache.answer(bad, badKnown, render);
    await expectAppErrorAsync(a, 'invalid_swagger_file');
    await expectAppErrorAsync(b, 'invalid_swagger_file');
    expect(render).toHaveBeenCalledTimes(1);
  });

  it('reads the same bytes again when they are to be read as another format', async () => {
    const text = '{"openapi":"3.0.3","paths":{}}';
    await renderValidation(source(text, 'a.json'));
    const parse = vi.spyOn(JSON, 'parse');
    await renderValidation(source(text, 'a.yaml'));
    expect(validationCacheStats()).toMatchObject({ entries: 1, misses: 2 });
    expect(parse).not.toHaveBeenCalled(); // YAML path
  });

  it('is bounded by the total bytes of the cached answers, least recently used out first', async () => {
    const size = (await validationAnswer(doc('a'))).length;
    cache = createValidationCache({ maxBytes: size * 2 + 1 });
    await renderValidation(doc('a'));
    await renderValidation(doc('b'));
    await renderValidation(doc('a')); // a is now the most recently used
    await renderValidation(doc('c')); // evicts b
    expect(validationCacheStats()).toMatchObject({ entries: 2, bytes: size * 2 });
    expect(cachedValidation(sha(doc('a').bytes))).toBeDefined();
    expect(cachedValidation(sha(doc('b').bytes))).toBeUndefined();
    expect(cachedValidation(sha(doc('c').bytes))).toBeDefined();
  });

  it('keeps the answer stored last even when it alone is larger than the whole cache: a repeat is a hit, never a render', async () => {
    cache = createValidationCache({ maxBytes: 10 });
    const render = vi.fn(renderNow);
    const first = await validationAnswer(doc('a'), {}, render);
    expect(first.length).toBeGreaterThan(10);
    expect(await validationAnswer(doc('a'), {}, render)).toBe(first);
    expect(render).toHaveBeenCalledTimes(1);
    expect(validationCacheStats()).toMatchObject({ entries: 1, bytes: first.length, maxBytes: 10, hits: 1, misses: 1 });
    // The next answer takes its place (the cache holds at most one answer over its bound).
    await validationAnswer(doc('b'), {}, render);
    expect(validationCacheStats()).toMatchObject({ entries: 1, misses: 2 });
    expect(cachedValidation(sha(doc('a').bytes))).toBeUndefined();
  });

  it('holds an answer over its bound alone, and drops it for the next answer that fits', async () => {
    const size = (await validationAnswer(doc('a'))).length;
    cache = createValidationCache({ maxBytes: size * 2 });
    await renderValidation(doc('a'));
    await renderValidation(doc('b'));
    expect(validationCacheStats()).toMatchObject({ entries: 2, bytes: size * 2 });
    const big = source(
      JSON.stringify({
        openapi: '3.0.3',
        info: { title: 'big', version: '1' },
        paths: Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`/p${i}`, { get: {} }])),
      }),
      'big.json',
    );
    const bigAnswer = await validationAnswer(big);
    expect(bigAnswer.length).toBeGreaterThan(size * 2);
    // Its memory is the larger of the bound and that one answer, never their sum.
    expect(validationCacheStats()).toMatchObject({ entries: 1, bytes: bigAnswer.length });
    expect(cachedValidation(sha(big.bytes))).toBe(bigAnswer);
    await renderValidation(doc('c'));
    expect(validationCacheStats()).toMatchObject({ entries: 1, bytes: size });
    expect(cachedValidation(sha(big.bytes))).toBeUndefined();
  });

  it('with a bound of 0 still keeps the newest answer', async () => {
    cache = createValidationCache({ maxBytes: 0 });
    await renderValidation(doc('a'));
    await renderValidation(doc('b'));
    expect(validationCacheStats()).toMatchObject({ entries: 1, maxBytes: 0 });
    expect(cachedValidation(sha(doc('b').bytes))).toBeDefined();
  });

  it('is one per instance: two caches share neither answers nor renders under way', async () => {
    const other = createValidationCache({ maxBytes: 64 * 1024 * 1024 });
    const render = vi.fn(renderNow);
    const known = { sha256: sha(doc('a').bytes) };
    await Promise.all([validationAnswer(doc('a'), known, render), other.answer(doc('a'), known, render)]);
    expect(render).toHaveBeenCalledTimes(2);
    expect(other.stats()).toMatchObject({ entries: 1, misses: 1 });
    other.clear();
    expect(cachedValidation(sha(doc('a').bytes))).toBeDefined();
  });

  describe('views (tools, fixes)', () => {
    const bytesOf = (text: string) => Buffer.from(text, 'utf8');

    it('keeps a view of the bytes under its name, apart from the answer and from other views', async () => {
      const a = doc('a');
      await renderValidation(a);
      const render = vi.fn((_src: DocumentSource) => bytesOf('tools of a'));
      const first = await cache.view(a, {}, 'tools:openai', render);
      expect(await cache.view({ ...a, bytes: Buffer.from(a.bytes) }, {}, 'tools:openai', render)).toBe(first);
      expect(render).toHaveBeenCalledTimes(1);
      expect(cache.cachedView(sha(a.bytes), 'tools:openai')).toBe(first);
      expect(cache.cachedView(sha(a.bytes), 'tools:gemini')).toBeUndefined();
      expect((await cache.view(a, {}, 'tools:gemini', () => bytesOf('gemini'))).toString()).toBe('gemini');
      // The answer is still the answer, and the views count in the bound.
      expect(cachedValidation(sha(a.bytes))?.toString()).toBe(renderFresh(a).toString());
      expect(validationCacheStats()).toMatchObject({ entries: 3, bytes: renderFresh(a).length + 'tools of a'.length + 'gemini'.length });
    });

    it('renders a view asked for twice at once once; a render refused for its starter (busy) is tried again, not kept', async () => {
      const a = doc('a');
      let calls = 0;
      const slow = () => new Promise<Uint8Array>((resolve) => setTimeout(() => resolve(bytesOf(`v${++calls}`)), 20));
      const [x, y] = await Promise.all([cache.view(a, {}, 'fixes:json', slow), cache.view(a, {}, 'fixes:json', slow)]);
      expect([x.toString(), y.toString(), calls]).toEqual(['v1', 'v1', 1]);
      const busy = () => Promise.reject(new AppError('service_unavailable', 'busy'));
      await expectAppErrorAsync(cache.view(a, {}, 'fixes:yaml', busy), 'service_unavailable');
      expect((await cache.view(a, {}, 'fixes:yaml', () => bytesOf('yaml'))).toString()).toBe('yaml');
    });

    it('another format of the same bytes has its own views', async () => {
      const a = doc('a');
      await cache.view(a, {}, 'tools:mcp', () => bytesOf('json view'));
      const asYaml = { ...a, fileName: 'a.yaml', mediaType: 'application/yaml' };
      expect((await cache.view(asYaml, {}, 'tools:mcp', () => bytesOf('yaml view'))).toString()).toBe('yaml view');
    });
  });

  it('clear() empties it', async () => {
    await renderValidation(doc('a'));
    cache.clear();
    expect(validationCacheStats()).toMatchObject({ entries: 0, bytes: 0, hits: 0, misses: 0 });
  });
});
