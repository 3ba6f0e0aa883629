import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// The installed command is the bundled entry (rolldown.config.mjs), built by `npm run build`
// (which `npm test` runs first). It must behave as the unbundled one.
const root = fileURLToPath(new URL('../../', import.meta.url));
const bin = `${root}dist/cli/copilot-service.cjs`;
const spec = (name: string) => `${root}test/fixtures/specs/${name}`;
const run = (...args: string[]) => spawnSync(process.execPath, [bin, ...args], { encoding: 'utf8', cwd: root, env: { ...process.env, LOG_LEVEL: 'silent' } });
/** `code` run by node with the command's module as process.argv[1] and `args` after it. */
const withBin = (code: string, ...args: string[]) => spawnSync(process.execPath, ['-e', code, bin, ...args], { encoding: 'utf8' });

describe('the bundled copilot-service command', () => {
  it('exists after the build', () => {
    expect(existsSync(bin), 'run npm run build first').toBe(true);
  });

  it('validates: 0 without findings, 1 with findings, 2 for an unreadable document', () => {
    // Petstore is ready for OpenAI function calling (GPT Actions and Copilot Studio find errors in it).
    const clean = run('validate', spec('petstore3.json'), '--platform', 'openai');
    expect(clean.status).toBe(0);
    expect(JSON.parse(clean.stdout).all_endpoints).toHaveLength(19);
    expect(run('validate', spec('petstore3.json')).status).toBe(1);

    const flawed = run('validate', spec('openfaas-gateway.swagger2.yaml'), '--format', 'text');
    expect(flawed.status).toBe(1);
    expect(flawed.stdout).toContain('no operationId');

    const broken = run('validate', spec('kubernetes.json'));
    expect(broken.status).toBe(2);
    expect(broken.stderr).toMatch(/line \d+, column \d+/);
  });

  it('validates a JSON document without loading any package (all it needs is in the bundle)', () => {
    // The upload's readiness summary once took its platform list from wire-types.ts, whose
    // TypeBox schemas then loaded and built at every start of the command (a bench row caught it).
    const hook = [
      "const Module = require('node:module');",
      'const loaded = new Set();',
      'const load = Module._load;',
      'Module._load = function (request, ...rest) { if (!/^(node:|\\.|\\/)/.test(request)) loaded.add(request); return load.call(this, request, ...rest); };',
      "process.on('exit', () => process.stderr.write('LOADED ' + JSON.stringify([...loaded].filter((m) => !Module.builtinModules.includes(m)))));",
    ].join('\n');
    const dir = mkdtempSync(path.join(os.tmpdir(), 'cli-loads-'));
    try {
      const preload = path.join(dir, 'loads.cjs');
      writeFileSync(preload, hook);
      const probe = spawnSync(process.execPath, ['-r', preload, bin, 'validate', spec('slack.json')], { encoding: 'utf8', cwd: root });
      expect(probe.stderr).toBe('LOADED []');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("starts from V8's code cache of the bundle, which the build writes and this Node.js accepts", () => {
    const probe = withBin(
      "const m = require(process.argv[1]); process.stdout.write(String(m.compileBundle(require('node:fs').readFileSync(m.CODE_CACHE)).cachedDataRejected))",
    );
    expect(probe.stderr).toBe('');
    expect(probe.stdout).toBe('false');
  });

  it('runs as well from a cache V8 rejects (another Node.js, other flags), compiling the bundle instead', () => {
    const probe = withBin(
      "const m = require(process.argv[1]); const s = m.compileBundle(Buffer.from('not a code cache')); process.argv = [process.argv[0], 'copilot-service', 'validate', process.argv[2]]; m.runBundle(s).done.then(() => process.stderr.write('rejected ' + s.cachedDataRejected));",
      spec('petstore3.json'),
    );
    expect(probe.stderr).toBe('rejected true');
    expect(probe.stdout).toBe(run('validate', spec('petstore3.json')).stdout);
    expect(JSON.parse(probe.stdout).all_endpoints).toHaveLength(19);
  });

  // Code compiled from a code cache cannot run `import()`: the bundle requires the modules its
  // commands load when they run (rolldown.config.mjs). These commands load some.
  it('runs the commands that load the service’s modules when they run, and reports a bad configuration', () => {
    const generated = run('keys', 'generate');
    expect(generated.stderr).toBe('');
    expect(generated.stdout).toMatch(/^cms_[A-Za-z0-9]{16}_[A-Za-z0-9]{32}\n$/);
    const misconfigured = spawnSync(process.execPath, [bin, 'migrate'], { encoding: 'utf8', cwd: root, env: { ...process.env, LOG_LEVEL: 'nonsense' } });
    expect(misconfigured.status).toBe(2);
    expect(misconfigured.stderr).toContain('LOG_LEVEL');
  });

  // The bundle has its own copy of errors.js; an AppError the service's modules throw is still
  // the command's own kind of failure: its message alone, exit code 1 (not "Error: …", 2).
  it('reports an error of the service’s modules as its own: `keys revoke` of an unknown key', () => {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'cli-bundle-'));
    try {
      const env = { ...process.env, LOG_LEVEL: 'silent', DATA_DIR: dataDir, DATABASE_URL: '' };
      // The admin commands need the service's database: migrate makes it.
      expect(spawnSync(process.execPath, [bin, 'migrate'], { encoding: 'utf8', cwd: root, env }).status).toBe(0);
      const revoked = spawnSync(process.execPath, [bin, 'keys', 'revoke', 'no-such-key'], { encoding: 'utf8', cwd: root, env });
      expect(revoked.stderr).toBe('No API key has this id.\n');
      expect(revoked.status).toBe(2);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('lists every command in its help', () => {
    const help = run('--help');
    expect(help.status).toBe(0);
    for (const command of ['serve', 'migrate', 'keys', 'validate']) expect(help.stdout).toContain(command);
  });
});
