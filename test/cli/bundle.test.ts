import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// The installed command is the bundled entry (rolldown.config.mjs), built by `npm run build`
// (which `npm test` runs first). It must behave as the unbundled one.
const root = fileURLToPath(new URL('../../', import.meta.url));
const bin = `${root}dist/cli/copilot-service.js`;
const spec = (name: string) => `${root}test/fixtures/specs/${name}`;
const run = (...args: string[]) => spawnSync(process.execPath, [bin, ...args], { encoding: 'utf8', cwd: root, env: { ...process.env, LOG_LEVEL: 'silent' } });

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

  it('lists every command in its help', () => {
    const help = run('--help');
    expect(help.status).toBe(0);
    for (const command of ['serve', 'migrate', 'keys', 'validate']) expect(help.stdout).toContain(command);
  });
});
