import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { runValidate, type CliIo } from '../../src/cli/validate.js';
import { parseDocument, validateDocument } from '../../src/domain/validator/index.js';
import { startServer, type LocalServer } from '../net/local-server.js';

const FIXTURES = fileURLToPath(new URL('../fixtures/', import.meta.url));
const specs = (name: string) => `${FIXTURES}specs/${name}`;
const cases = (name: string) => `${FIXTURES}validator/cases/${name}`;

async function run(target: string, format: 'json' | 'text' = 'json', extra: Partial<Parameters<typeof runValidate>[1]> = {}) {
  let stdout = '';
  let stderr = '';
  const io: CliIo = { stdout: (s) => (stdout += typeof s === 'string' ? s : Buffer.from(s).toString()), stderr: (s) => (stderr += s) };
  const code = await runValidate(target, { format, ...extra }, io);
  return { code, stdout, stderr };
}

const expectedJson = (path: string) => `${JSON.stringify(validateDocument(parseDocument({ bytes: readFileSync(path), fileName: path })))}\n`;

describe('copilot-service validate FILE', () => {
  it('json (default): the endpoint’s {all_endpoints, validations} text and exit 0 when there is nothing to fix', async () => {
    const { code, stdout, stderr } = await run(specs('nl_business_gov.json'));
    expect(code).toBe(0);
    expect(stderr).toBe('');
    expect(stdout).toBe(expectedJson(specs('nl_business_gov.json')));
    expect(stdout.startsWith('{"all_endpoints":[')).toBe(true);
  });

  it('exit 1 with findings (json)', async () => {
    const { code, stdout } = await run(specs('telegram_reduced.json'));
    expect(code).toBe(1);
    expect(stdout).toBe(expectedJson(specs('telegram_reduced.json')));
  });

  it('exit 1 when the only finding is a missing server (base_url null)', async () => {
    expect((await run(cases('servers-none.json'))).code).toBe(1);
  });

  it('text: counts, auth type, base URL, and a table of the flagged endpoints', async () => {
    const { code, stdout } = await run(cases('operation-ids.json'), 'text');
    expect(code).toBe(1);
    expect(stdout).toContain('Endpoints:       10 (8 with findings)');
    expect(stdout).toContain('Auth type:       none');
    expect(stdout).toContain('Base URL:        (none');
    expect(stdout).toMatch(/^Readiness: +\d+\/100$/m);
    expect(stdout).toMatch(/^Platforms: +openai \d+ blocking · gpt_actions \d+ blocking/m);
    expect(stdout).toMatch(/operation-id-duplicate\s+5/);
    expect(stdout).toMatch(/operation-id-invalid\s+4/);
    expect(stdout).toMatch(/operation-id-too-long\s+1/);
    expect(stdout).toMatch(/^ *# +METHOD +PATH +FINDINGS$/m);
    expect(stdout).toMatch(/^ *6 +PUT +\/c +operation-id-invalid, operation-id-duplicate$/m);
    expect(stdout).toMatch(/^ +error +server-missing +\/servers +The document names no server/m);
    expect(stdout).not.toMatch(/^ *2 +GET/m);
    expect(stdout.trimEnd().endsWith('Result: findings at or above error to fix.')).toBe(true);
  });

  it('text on a document without findings at error: exit 0 and no table', async () => {
    const { code, stdout } = await run(specs('nl_business_gov.json'), 'text');
    expect(code).toBe(0);
    expect(stdout).toContain('Endpoints:       4 (0 with findings)');
    expect(stdout).toContain('Readiness:       100/100');
    expect(stdout).toContain('Auth type:       none');
    expect(stdout).not.toContain('METHOD');
    // Its one info finding is listed above: the verdict says it is below --fail-on (CLI sweep: it said "no findings").
    expect(stdout).toMatch(/:\d+:\d+: info response-error-undocumented: /);
    expect(stdout.trimEnd().endsWith('Result: no finding at or above error; 1 below it.')).toBe(true);
  });

  it('text: the verdict follows --fail-on and the exit code (CLI sweep: "no findings" beside the findings that failed the run)', async () => {
    const info = await run(specs('nl_business_gov.json'), 'text', { failOn: 'info' });
    expect(info.code).toBe(1);
    expect(info.stdout.trimEnd().endsWith('Result: findings at or above info to fix.')).toBe(true);
    const warning = await run(specs('petstore3.yaml'), 'text', { failOn: 'warning', platforms: ['openai'] });
    expect(warning.code).toBe(1);
    expect(warning.stdout).toMatch(/: warning request-media-type-unsupported: /);
    expect(warning.stdout.trimEnd().endsWith('Result: findings at or above warning to fix.')).toBe(true);
  });

  it('text on a YAML document whose only findings are rules: their rows, exit 1 for the error-severity ones', async () => {
    const { code, stdout } = await run(specs('petstore3.yaml'), 'text');
    expect(code).toBe(1);
    expect(stdout).toContain('Auth type:       oauth2');
    expect(stdout).toContain('Base URL:        https://petstore3.swagger.io/api/v3');
    expect(stdout).toMatch(/^ *6 +DELETE +\/pet\/\{petId\} +header-parameter-unsupported$/m);
    expect(stdout).toContain('Result: findings at or above error to fix.');
  });

  it('text on slack.json lists its 174 endpoints without summary', async () => {
    const { code, stdout } = await run(specs('slack.json'), 'text');
    expect(code).toBe(1);
    expect(stdout.match(/^ *\d+ .*no summary(, |$)/gm)).toHaveLength(174);
  });

  it('exit 2 with the parser’s position on stderr when the document cannot be read', async () => {
    const { code, stdout, stderr } = await run(specs('kubernetes.json'));
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toContain('kubernetes.json: The document is not valid JSON');
    expect(stderr).toContain('line 154, column 15');
  });

  it('exit 2 for hostile documents', async () => {
    for (const name of ['billion-laughs.yaml', 'duplicate-keys.json', 'tag-js-function.yaml', 'operation-array.json']) {
      const { code, stderr } = await run(`${FIXTURES}validator/hostile/${name}`);
      expect(code, name).toBe(2);
      expect(stderr, name).not.toBe('');
    }
  });

  it('exit 2 for a JSON file nested too deep, with where (refused after parsing: the CLI skips the scan before it)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'validate-cli-'));
    try {
      const file = join(dir, 'deep.json');
      writeFileSync(file, `{"openapi":"3.0.3","x":\n${'['.repeat(100_000)}${']'.repeat(100_000)}}`);
      const { code, stdout, stderr } = await run(file);
      expect(code).toBe(2);
      expect(stdout).toBe('');
      expect(stderr).toContain('deep.json: The document is nested more than 256 levels deep (line 2, column 256).');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('exit 2 for a missing file, a directory, or a file over the size cap', async () => {
    const missing = await run(`${FIXTURES}does-not-exist.json`);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('no such file');
    const directory = await run(FIXTURES);
    expect(directory.code).toBe(2);
    expect(directory.stderr).toContain('is not a file');
    const large = await run(specs('slack.json'), 'json', { maxBytes: 1000 });
    expect(large.code).toBe(2);
    expect(large.stderr).toContain('larger than 1000 bytes');
  });

  it('text output escapes control characters from the document', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'validate-cli-'));
    try {
      const file = join(dir, 'escape.json');
      writeFileSync(file, JSON.stringify({ openapi: '3.0.3', paths: { '/a\u001b[2J': { get: {} } } }));
      const { code, stdout } = await run(file, 'text');
      expect(code).toBe(1);
      expect(stdout).not.toContain('\u001b');
      expect(stdout).toContain('/a\\u001b[2J');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

const DEEP = `{"openapi":"3.0.3","x":\n${'['.repeat(1000)}${']'.repeat(1000)}}`;

describe('copilot-service validate URL', () => {
  let server: LocalServer;
  const policy = { timeoutMs: 5000, maxBytes: 1024 * 1024, maxRedirects: 5, allowNetworks: ['127.0.0.0/8'] };

  beforeAll(async () => {
    server = await startServer('127.0.0.1', (req, res) => {
      if (req.url === '/openapi.yaml') {
        res.writeHead(200, { 'content-type': 'application/yaml' });
        res.end(readFileSync(specs('petstore3.yaml')));
      } else if (req.url === '/deep.json') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(DEEP);
      } else if (req.url === '/served-as-text') {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end(readFileSync(specs('telegram_reduced.json')));
      } else {
        res.writeHead(404);
        res.end('not here');
      }
    });
  });
  afterAll(() => server.close());

  it('fetches under the policy and validates by the response’s media type', async () => {
    const { code, stdout } = await run(`${server.origin}/openapi.yaml`, 'json', { fetchPolicy: policy });
    expect(code).toBe(1); // petstore3 has error-severity rule findings (a custom header, two auth types)
    expect(stdout).toBe(expectedJson(specs('petstore3.yaml')));
  });

  it('falls back on the first character when the media type says nothing', async () => {
    const { code, stdout } = await run(`${server.origin}/served-as-text`, 'json', { fetchPolicy: policy });
    expect(code).toBe(1);
    expect(stdout).toBe(expectedJson(specs('telegram_reduced.json')));
  });

  it('a fetched document (not the user’s own file) is scanned for nesting before JSON.parse, as the service does', async () => {
    const parse = vi.spyOn(JSON, 'parse');
    try {
      const { code, stderr } = await run(`${server.origin}/deep.json`, 'json', { fetchPolicy: policy });
      expect(code).toBe(2);
      expect(stderr).toContain('nested more than 256 levels deep (line 2, column 256)');
      expect(parse.mock.calls.some(([text]) => text === DEEP)).toBe(false);
      // The same text from a file goes to JSON.parse first.
      const dir = mkdtempSync(join(tmpdir(), 'validate-cli-'));
      try {
        writeFileSync(join(dir, 'deep.json'), DEEP);
        expect((await run(join(dir, 'deep.json'))).code).toBe(2);
        expect(parse.mock.calls.some(([text]) => text === DEEP)).toBe(true);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    } finally {
      parse.mockRestore();
    }
  });

  it('exit 2 when the URL answers an error', async () => {
    const { code, stderr } = await run(`${server.origin}/missing.json`, 'json', { fetchPolicy: policy });
    expect(code).toBe(2);
    expect(stderr).not.toBe('');
  });

  it('a loopback URL is fetched under the default policy (the user’s own machine), refused with denyPrivate', async () => {
    const allowed = await run(`${server.origin}/openapi.yaml`);
    expect(allowed.code).toBe(1);
    expect(allowed.stdout).toBe(expectedJson(specs('petstore3.yaml')));
    const before = server.connections;
    const { code, stderr } = await run(`${server.origin}/openapi.yaml`, 'json', { denyPrivate: true });
    expect(code).toBe(2);
    expect(stderr).toContain('127.0.0.1');
    expect(server.connections).toBe(before);
  });
});
