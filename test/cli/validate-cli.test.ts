import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Ajv from 'ajv';
import { parseDocument as parseXml } from 'htmlparser2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { VERSION } from '../../src/cli/version.js';
import { parseDocument, RULE_IDS, RULE_TEXTS, validateDocument } from '../../src/domain/validator/index.js';
import { buildCli, REPO_ROOT } from '../support/build.js';
import { startServer, type LocalServer } from '../net/local-server.js';

// The command as a user runs it: the built CLI in a process of its own (issue 18 C).

const FIXTURES = fileURLToPath(new URL('../fixtures/', import.meta.url));
const SPECS = `${FIXTURES}specs/`;
const OPERATION_IDS = `${FIXTURES}validator/cases/operation-ids.json`;

let cli: string;
let dir: string;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function run(args: string[], opts: { cwd?: string; stdin?: Buffer } = {}): Promise<Run> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [cli, ...args],
      { cwd: opts.cwd ?? dir, encoding: 'utf8', maxBuffer: 256 * 1024 * 1024, env: { ...process.env, LOG_LEVEL: 'silent' } },
      (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? -1) : 0, stdout, stderr }),
    );
    child.stdin?.end(opts.stdin);
  });
}

const expectedJson = (path: string) => `${JSON.stringify(validateDocument(parseDocument({ bytes: readFileSync(path), fileName: path })))}\n`;

// A document whose only finding is a warning (a path parameter the template does not use).
const WARNING_ONLY = {
  openapi: '3.0.3',
  info: { title: 't', version: '1' },
  servers: [{ url: 'https://api.example.com' }],
  paths: {
    '/things': {
      get: {
        operationId: 'listThings',
        summary: 'List things',
        description: 'Lists every thing the caller may see.',
        parameters: [{ name: 'id', in: 'path', required: true, description: 'Not in the template.', schema: { type: 'string' } }],
        responses: { '200': { description: 'ok' } },
      },
    },
  },
};

beforeAll(async () => {
  cli = await buildCli();
  dir = mkdtempSync(join(tmpdir(), 'validate-cli-'));
  writeFileSync(join(dir, 'warning-only.json'), JSON.stringify(WARNING_ONLY, null, 2));
}, 120_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('copilot-service: help, version, usage errors', () => {
  it('--version prints the package version (src/cli/version.ts follows package.json)', async () => {
    const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string };
    expect(VERSION).toBe(pkg.version);
    const { code, stdout } = await run(['--version']);
    expect(code).toBe(0);
    expect(stdout).toBe(`${pkg.version}\n`);
  });

  it('a bare command prints the help on stdout and exits 0 (it does not serve)', async () => {
    const { code, stdout, stderr } = await run([]);
    expect(code).toBe(0);
    expect(stderr).toBe('');
    expect(stdout).toMatch(/^Usage: copilot-service /);
    for (const command of ['serve', 'validate']) expect(stdout).toContain(command);
    expect(stdout).toMatch(/Exit codes: 0 .*1 validate: findings at or above --fail-on; 2 anything that failed: a usage error/);
  });

  it('validate --help documents the formats and exit codes', async () => {
    const { code, stdout } = await run(['validate', '--help']);
    expect(code).toBe(0);
    for (const word of ['--format', 'sarif', 'junit', 'github', '--fail-on', '--platform', '--max-bytes', '--deny-private', 'Exit codes'])
      expect(stdout).toContain(word);
  });

  it('an unknown command is exit 2 with a suggestion', async () => {
    const { code, stdout, stderr } = await run(['valdate', 'x.json']);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toContain("unknown command 'valdate'");
    expect(stderr).toContain('Did you mean validate?');
  });

  it('an unknown command is an error with its suggestion before --help, and after help (CLI sweep: the main help, exit 0 and no word)', async () => {
    for (const args of [
      ['serv', '--help'],
      ['help', 'serv'],
    ]) {
      const { code, stderr } = await run(args);
      expect(code, args.join(' ')).toBe(2);
      expect(stderr, args.join(' ')).toContain("unknown command 'serv'");
      expect(stderr, args.join(' ')).toContain('Did you mean serve?');
    }
    expect(await run(['help', 'validate'])).toMatchObject({ code: 0, stdout: expect.stringContaining('Usage: copilot-service validate') });
  });

  it('a misspelt option of tools is named with a suggestion, not taken for the missing --platform', async () => {
    const { code, stderr } = await run(['tools', '--platfrom', 'openai', OPERATION_IDS]);
    expect(code).toBe(2);
    expect(stderr).toContain("unknown option '--platfrom'");
    expect(stderr).toContain('Did you mean --platform?');
    expect(await run(['tools', OPERATION_IDS])).toMatchObject({ code: 2, stderr: expect.stringContaining("required option '--platform <platform>'") });
  });

  it('usage errors are exit 2: a bad option value, a missing argument, an unknown platform', async () => {
    for (const args of [
      ['validate', OPERATION_IDS, '--format', 'xml'],
      ['validate', OPERATION_IDS, '--fail-on', 'fatal'],
      ['validate'],
      ['validate', OPERATION_IDS, '--platform', 'openai,skynet'],
      ['validate', OPERATION_IDS, '--max-bytes', '-3'],
    ]) {
      const { code, stderr } = await run(args);
      expect(code, args.join(' ')).toBe(2);
      expect(stderr, args.join(' ')).toMatch(/error/);
    }
  });
});

describe('copilot-service validate: exit codes', () => {
  it('0 clean, 1 findings, 2 unreadable', async () => {
    expect((await run(['validate', `${SPECS}nl_business_gov.json`])).code).toBe(0);
    expect((await run(['validate', `${SPECS}telegram_reduced.json`])).code).toBe(1);
    const missing = await run(['validate', `${FIXTURES}does-not-exist.json`]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('no such file');
    expect((await run(['validate', `${SPECS}kubernetes.json`])).code).toBe(2);
  });

  it('--fail-on: a warning fails at warning and info, not at error (the default)', async () => {
    expect((await run(['validate', 'warning-only.json'])).code).toBe(0);
    expect((await run(['validate', 'warning-only.json', '--fail-on', 'error'])).code).toBe(0);
    expect((await run(['validate', 'warning-only.json', '--fail-on', 'warning'])).code).toBe(1);
    expect((await run(['validate', 'warning-only.json', '--fail-on', 'info'])).code).toBe(1);
  });

  it('an unreadable input among readable ones: the others are reported, exit 2', async () => {
    const { code, stdout, stderr } = await run(['validate', `${SPECS}nl_business_gov.json`, `${SPECS}kubernetes.json`]);
    expect(code).toBe(2);
    expect(stdout.trim().split('\n')).toHaveLength(1);
    expect(stderr).toContain('kubernetes.json: The document is not valid JSON');
  });
});

describe('copilot-service validate: inputs', () => {
  it('- reads standard input (format sniffed from the text)', async () => {
    const { code, stdout } = await run(['validate', '-'], { stdin: readFileSync(`${SPECS}petstore3.yaml`) });
    expect(code).toBe(1);
    expect(stdout).toBe(expectedJson(`${SPECS}petstore3.yaml`));
  });

  it('a glob of two files: JSON Lines, one answer per file with the file first', async () => {
    const { code, stdout } = await run(['validate', 'petstore3.*'], { cwd: SPECS });
    expect(code).toBe(1);
    const lines = stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(2);
    const parsed = lines.map((l) => JSON.parse(l) as { file: string });
    expect(parsed.map((p) => p.file)).toEqual(['petstore3.json', 'petstore3.yaml']);
    expect(lines[1]).toBe(`{"file":"petstore3.yaml",${expectedJson(`${SPECS}petstore3.yaml`).trimEnd().slice(1)}`);
  });

  it('a glob that matches nothing is exit 2', async () => {
    const { code, stderr } = await run(['validate', 'nothing-*.yaml']);
    expect(code).toBe(2);
    expect(stderr).toContain('no file matches');
  });

  it("a pattern's control characters are escaped in the message that names it (CLI sweep: a terminal title was set)", async () => {
    const { code, stderr } = await run(['validate', 'nofile\u001b]0;PWNED\u0007\rX[.json']);
    expect(code).toBe(2);
    expect(stderr).toContain('nofile\\u001b]0;PWNED\\u0007\\u000dX[.json: no file matches');
    expect(stderr).not.toMatch(/[\u0000-\u0008\u000b-\u001f]/);
  });

  it('tools and fix name a pattern that matches several files with its control characters escaped (CLI sweep)', async () => {
    for (const name of ['esc\u001b]0;X\u0007a.yaml', 'esc\u001b]0;X\u0007b.yaml']) writeFileSync(join(dir, name), readFileSync(`${SPECS}petstore3.yaml`));
    for (const command of [['tools', '--platform', 'openai'], ['fix']]) {
      const { code, stderr } = await run([...command, 'esc\u001b]0;X\u0007*.yaml']);
      expect(code).toBe(2);
      expect(stderr).toContain('esc\\u001b]0;X\\u0007*.yaml matches 2 files');
      expect(stderr).not.toMatch(/[\u0000-\u0008\u000b-\u001f]/);
    }
  });

  it('one file however it is spelled is read once (CLI sweep: four answers for one file)', async () => {
    writeFileSync(join(dir, 'once.yaml'), readFileSync(`${SPECS}petstore3.yaml`));
    const { stdout } = await run(['validate', 'once.yaml', './once.yaml', join(dir, 'once.yaml'), 'once.*']);
    expect(stdout.trimEnd().split('\n')).toHaveLength(1);
  });

  it('a local file over 25 MiB is read without --max-bytes, refused with it', async () => {
    const file = join(dir, 'large.json');
    const doc = { ...WARNING_ONLY, info: { ...WARNING_ONLY.info, 'x-padding': 'x'.repeat(26 * 1024 * 1024) } };
    writeFileSync(file, JSON.stringify(doc));
    try {
      const accepted = await run(['validate', file, '--format', 'text']);
      expect(accepted.stderr).toBe('');
      expect(accepted.code).toBe(0);
      expect(accepted.stdout).toContain('Endpoints:       1');
      const refused = await run(['validate', file, '--max-bytes', String(25 * 1024 * 1024)]);
      expect(refused.code).toBe(2);
      expect(refused.stdout).toBe('');
      expect(refused.stderr).toContain(`larger than ${25 * 1024 * 1024} bytes`);
    } finally {
      rmSync(file, { force: true });
    }
  });

  describe('a URL on the user’s own machine', () => {
    let server: LocalServer;
    beforeAll(async () => {
      server = await startServer('127.0.0.1', (req, res) => {
        res.writeHead(req.url === '/openapi.yaml' ? 200 : 404, { 'content-type': 'application/yaml' });
        res.end(req.url === '/openapi.yaml' ? readFileSync(`${SPECS}petstore3.yaml`) : 'no');
      });
    });
    afterAll(() => server.close());

    it('127.0.0.1 is fetched by default, refused with --deny-private', async () => {
      const allowed = await run(['validate', `${server.origin}/openapi.yaml`]);
      expect(allowed.stderr).toBe('');
      expect(allowed.code).toBe(1);
      expect(allowed.stdout).toBe(expectedJson(`${SPECS}petstore3.yaml`));
      const connections = server.connections;
      const denied = await run(['validate', `${server.origin}/openapi.yaml`, '--deny-private']);
      expect(denied.code).toBe(2);
      expect(denied.stdout).toBe('');
      expect(denied.stderr).not.toBe('');
      expect(server.connections).toBe(connections);
    });

    it('--max-bytes applies to a URL', async () => {
      const { code } = await run(['validate', `${server.origin}/openapi.yaml`, '--max-bytes', '100']);
      expect(code).toBe(2);
    });

    it('tools and fix read their input as validate does: --deny-private and --max-bytes (CLI sweep: unknown options there)', async () => {
      for (const command of [['tools', '--platform', 'openai'], ['fix']]) {
        expect((await run([...command, `${server.origin}/openapi.yaml`])).code, command[0]).toBe(0);
        const connections = server.connections;
        const denied = await run([...command, `${server.origin}/openapi.yaml`, '--deny-private']);
        expect(denied.code, command[0]).toBe(2);
        expect(server.connections).toBe(connections);
        expect(await run([...command, `${SPECS}petstore3.yaml`, '--max-bytes', '100'])).toMatchObject({
          code: 2,
          stderr: expect.stringContaining('larger than 100 bytes'),
        });
      }
    });
  });
});

// operation-ids.json: line 7 holds "operationId": "create thing.v2" (operation-id-invalid).
const INVALID_LINE =
  readFileSync(OPERATION_IDS, 'utf8')
    .split('\n')
    .findIndex((l) => l.includes('"create thing.v2"')) + 1;

describe('copilot-service validate: formats', () => {
  it('text: file:line:col per finding, pointing at the culprit’s line, then the summary', async () => {
    const { code, stdout } = await run(['validate', OPERATION_IDS, '--format', 'text']);
    expect(code).toBe(1);
    const located = stdout.split('\n').filter((l) => l.startsWith(`${OPERATION_IDS}:`));
    expect(located).toHaveLength(11);
    for (const line of located) expect(line).toMatch(/^.+:\d+:\d+: (error|warning|info) [a-z-]+: .+$/);
    const invalid = located.find((l) => l.includes('operation-id-invalid') && l.includes('create thing.v2'))!;
    const [, line, column] = /:(\d+):(\d+): /.exec(invalid.slice(OPERATION_IDS.length))!;
    expect(Number(line)).toBe(INVALID_LINE);
    const source = readFileSync(OPERATION_IDS, 'utf8').split('\n')[INVALID_LINE - 1]!;
    expect(source.slice(Number(column) - 1).startsWith('"operationId"')).toBe(true);
    expect(stdout).toContain('Endpoints:       10 (8 with findings)');
    expect(stdout).toContain(`${OPERATION_IDS}:1:1: error server-missing`); // no servers key: the document's root
  });

  it('text on YAML: the line of the key the pointer names', async () => {
    const { stdout } = await run(['validate', `${SPECS}petstore3.yaml`, '--format', 'text']);
    const header = stdout.split('\n').find((l) => l.includes('header-parameter-unsupported'))!;
    const [, line] = /\.yaml:(\d+):(\d+): /.exec(header)!;
    expect(readFileSync(`${SPECS}petstore3.yaml`, 'utf8').split('\n')[Number(line) - 1]).toMatch(/- name: api_key/);
  });

  it('json: exactly the endpoint’s answer', async () => {
    const { code, stdout } = await run(['validate', OPERATION_IDS, '--format', 'json']);
    expect(code).toBe(1);
    expect(stdout).toBe(expectedJson(OPERATION_IDS));
  });

  it('sarif: SARIF 2.1.0 with the registry as rules and a located result per finding', async () => {
    const { code, stdout } = await run(['validate', OPERATION_IDS, `${SPECS}petstore3.yaml`, '--format', 'sarif']);
    expect(code).toBe(1);
    const sarif = JSON.parse(stdout);
    const validate = new Ajv.default({ strict: false }).compile(SARIF_REQUIRED);
    expect(validate(sarif), JSON.stringify(validate.errors)).toBe(true);
    expect(sarif.runs).toHaveLength(1);
    const [run0] = sarif.runs;
    expect(run0.tool.driver.rules.map((r: { id: string }) => r.id)).toEqual(RULE_IDS);
    // Code scanning titles an alert with its rule's short description: a sentence, not the id again.
    for (const r of run0.tool.driver.rules) {
      expect(r.shortDescription.text, r.id).toBe(RULE_TEXTS[r.id]);
      expect(r.shortDescription.text, r.id).toMatch(/^[A-Z{].{20,}\.$/);
    }
    const expected = [OPERATION_IDS, `${SPECS}petstore3.yaml`].map((f) => JSON.parse(expectedJson(f)).validations.findings.length);
    expect(run0.results).toHaveLength(expected[0] + expected[1]);
    for (const r of run0.results) expect(run0.tool.driver.rules[r.ruleIndex].id).toBe(r.ruleId);
    const invalid = run0.results.find(
      (r: { ruleId: string; message: { text: string } }) => r.ruleId === 'operation-id-invalid' && r.message.text.includes('create thing.v2'),
    );
    expect(invalid.level).toBe('error');
    expect(invalid.locations[0].physicalLocation.region.startLine).toBe(INVALID_LINE);
    expect(invalid.locations[0].physicalLocation.artifactLocation.uri).toMatch(/^file:\/\/\/.*operation-ids\.json$/);
    expect(new Set(run0.results.map((r: { level: string }) => r.level))).toEqual(new Set(['error', 'warning']));
  });

  it('sarif: a relative path stays relative; an unreadable input is a notification', async () => {
    const { code, stdout } = await run(['validate', 'petstore3.yaml', 'kubernetes.json', '--format', 'sarif'], { cwd: SPECS });
    expect(code).toBe(2);
    const [run0] = JSON.parse(stdout).runs;
    expect(run0.results[0].locations[0].physicalLocation.artifactLocation.uri).toBe('petstore3.yaml');
    expect(run0.invocations[0].executionSuccessful).toBe(false);
    expect(run0.invocations[0].toolExecutionNotifications[0].message.text).toContain('kubernetes.json');
  });

  it('junit: one suite per file, one case per rule, failures for the rules with findings at or above --fail-on', async () => {
    const { code, stdout } = await run(['validate', OPERATION_IDS, 'warning-only.json', '--format', 'junit']);
    expect(code).toBe(1);
    const doc = parseXml(stdout, { xmlMode: true });
    type El = { type: string; name: string; attribs: Record<string, string>; children: El[] };
    const elements = (nodes: El[], name: string): El[] =>
      nodes.flatMap((n) => (n.type === 'tag' ? [...(n.name === name ? [n] : []), ...elements(n.children, name)] : []));
    const root = elements(doc.children as unknown as El[], 'testsuites');
    expect(root).toHaveLength(1);
    const suites = elements(root[0]!.children, 'testsuite');
    expect(suites.map((s) => s.attribs.name)).toEqual([OPERATION_IDS, 'warning-only.json']);
    for (const suite of suites) {
      expect(elements(suite.children, 'testcase')).toHaveLength(RULE_IDS.length);
      expect(Number(suite.attribs.tests)).toBe(RULE_IDS.length);
      expect(Number(suite.attribs.failures)).toBe(elements(suite.children, 'failure').length);
    }
    // operation-ids.json: errors in operation-id-duplicate, -invalid, -too-long and server-missing.
    expect(elements(suites[0]!.children, 'failure').map((f) => f.attribs.type)).toEqual([
      'operation-id-invalid',
      'operation-id-too-long',
      'operation-id-duplicate',
      'server-missing',
    ]);
    expect(suites[1]!.attribs.failures).toBe('0');
    expect(Number(root[0]!.attribs.failures)).toBe(4);

    const strict = await run(['validate', 'warning-only.json', '--format', 'junit', '--fail-on', 'warning']);
    expect(strict.code).toBe(1);
    expect(strict.stdout).toMatch(/<failure message="1 finding at or above warning" type="path-parameter-unused">/);
  });

  it('github: one workflow command per finding', async () => {
    const { code, stdout } = await run(['validate', OPERATION_IDS, '--format', 'github']);
    expect(code).toBe(1);
    const lines = stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(11);
    for (const line of lines) expect(line).toMatch(/^::(error|warning|notice) file=[^,:]+,line=\d+,col=\d+,title=[a-z-]+::[^\r\n]+$/);
    expect(lines).toContain(
      `::error file=${OPERATION_IDS.replace(/:/g, '%3A')},line=${INVALID_LINE},col=${lines.find((l) => l.includes('create thing.v2'))!.match(/col=(\d+)/)![1]},title=operation-id-invalid::operationId “create thing.v2” has characters a tool name cannot hold on openai, anthropic, gemini, mcp: the tool is refused or renamed.`,
    );
  });
});

describe('copilot-service validate --platform', () => {
  it('keeps the findings that list one of the platforms, and their readiness', async () => {
    const all = JSON.parse((await run(['validate', OPERATION_IDS])).stdout);
    const { code, stdout } = await run(['validate', OPERATION_IDS, '--platform', 'copilot_studio,gpt_actions']);
    expect(code).toBe(1);
    const filtered = JSON.parse(stdout);
    expect(Object.keys(filtered.validations.readiness.platforms)).toEqual(['gpt_actions', 'copilot_studio']);
    const expected = all.validations.findings.filter(
      (f: { platforms: string[] }) => f.platforms.includes('copilot_studio') || f.platforms.includes('gpt_actions'),
    );
    expect(filtered.validations.findings).toEqual(expected);
    expect(filtered.validations.findings.length).toBeLessThan(all.validations.findings.length);
    expect(filtered.all_endpoints).toEqual(all.all_endpoints);
  });

  it('the exit code follows the chosen platforms', async () => {
    // petstore3.yaml's errors are Copilot Studio's and GPT Actions'; it is clean for Gemini at error.
    expect((await run(['validate', `${SPECS}petstore3.yaml`, '--platform', 'gemini'])).code).toBe(0);
    expect((await run(['validate', `${SPECS}petstore3.yaml`, '--platform', 'gemini', '--fail-on', 'warning'])).code).toBe(1);
    expect((await run(['validate', `${SPECS}petstore3.yaml`, '--platform', 'copilot_studio'])).code).toBe(1);
    const github = await run(['validate', `${SPECS}petstore3.yaml`, '--platform', 'gemini', '--format', 'github']);
    expect(github.stdout).not.toContain('summary-equals-description');
  });
});

/** The properties SARIF 2.1.0 requires on what the command writes (a hand-written subset of the schema). */
const SARIF_REQUIRED = {
  type: 'object',
  required: ['version', 'runs'],
  properties: {
    version: { const: '2.1.0' },
    $schema: { type: 'string' },
    runs: {
      type: 'array',
      items: {
        type: 'object',
        required: ['tool'],
        properties: {
          tool: {
            type: 'object',
            required: ['driver'],
            properties: {
              driver: {
                type: 'object',
                required: ['name'],
                properties: {
                  name: { type: 'string' },
                  rules: { type: 'array', items: { type: 'object', required: ['id'], properties: { id: { type: 'string' } } } },
                },
              },
            },
          },
          results: {
            type: 'array',
            items: {
              type: 'object',
              required: ['message', 'ruleId', 'level', 'locations'],
              properties: {
                ruleId: { type: 'string' },
                ruleIndex: { type: 'integer', minimum: 0 },
                level: { enum: ['none', 'note', 'warning', 'error'] },
                message: { type: 'object', required: ['text'], properties: { text: { type: 'string' } } },
                locations: {
                  type: 'array',
                  minItems: 1,
                  items: {
                    type: 'object',
                    required: ['physicalLocation'],
                    properties: {
                      physicalLocation: {
                        type: 'object',
                        required: ['artifactLocation', 'region'],
                        properties: {
                          artifactLocation: { type: 'object', required: ['uri'], properties: { uri: { type: 'string', minLength: 1 } } },
                          region: {
                            type: 'object',
                            required: ['startLine', 'startColumn'],
                            properties: { startLine: { type: 'integer', minimum: 1 }, startColumn: { type: 'integer', minimum: 1 } },
                          },
                        },
                      },
                    },
                  },
                },
              },
            },
          },
        },
      },
    },
  },
};
