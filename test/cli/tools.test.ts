import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { load } from 'js-yaml';
import { afterAll, describe, expect, it } from 'vitest';
import { runFix } from '../../src/cli/fix.js';
import { isToolPlatform, runTools } from '../../src/cli/tools.js';
import type { CliIo } from '../../src/cli/validate.js';
import { parseDocument, validateDocument } from '../../src/domain/validator/index.js';
import { applyOverlay, fixesOverlay } from '../../src/domain/validator/overlay.js';
import { toolDefinitions } from '../../src/domain/validator/tools.js';

const specs = (name: string) => fileURLToPath(new URL(`../fixtures/specs/${name}`, import.meta.url));
const docOf = (path: string) => parseDocument({ bytes: readFileSync(path), fileName: path });

async function capture(work: (io: CliIo) => Promise<number>) {
  let stdout = '';
  let stderr = '';
  const code = await work({ stdout: (s) => (stdout += typeof s === 'string' ? s : Buffer.from(s).toString()), stderr: (s) => (stderr += s) });
  return { code, stdout, stderr };
}

const dir = mkdtempSync(join(tmpdir(), 'tools-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('copilot-service tools FILE --platform', async () => {
  it.each(['openai', 'anthropic', 'gemini', 'mcp'] as const)('%s: the tool definitions as indented JSON, exit 0', async (platform) => {
    const file = specs('openfaas-gateway.swagger2.yaml');
    const { code, stdout, stderr } = await capture((io) => runTools(file, { platform }, io));
    expect(code).toBe(0);
    expect(stderr).toBe('');
    expect(stdout).toBe(`${JSON.stringify({ platform, tools: toolDefinitions(docOf(file), platform) }, null, 2)}\n`);
  });

  it('an unreadable file or a document that is not OpenAPI: exit 2 and a reason', async () => {
    const notOpenApi = join(dir, 'x.json');
    writeFileSync(notOpenApi, '{"hello":"world"}');
    for (const file of [join(dir, 'missing.json'), notOpenApi]) {
      const { code, stdout, stderr } = await capture((io) => runTools(file, { platform: 'openai' }, io));
      expect(code).toBe(2);
      expect(stdout).toBe('');
      expect(stderr).toMatch(new RegExp(`^${file.replaceAll(/[.*+?^${}()|[\]\\]/g, '\\$&')}: .+\n$`));
    }
  });

  it('knows its platforms', async () => {
    expect(['openai', 'anthropic', 'gemini', 'mcp'].every(isToolPlatform)).toBe(true);
    expect(isToolPlatform('gpt_actions')).toBe(false);
  });
});

describe('copilot-service fix FILE', async () => {
  it('prints the overlay; --apply prints the fixed document', async () => {
    const file = specs('telegram_reduced.json');
    const doc = docOf(file);
    const overlay = await capture((io) => runFix(file, {}, io));
    expect(overlay.code).toBe(0);
    expect(JSON.parse(overlay.stdout)).toEqual(fixesOverlay(doc));
    expect(JSON.parse(overlay.stdout).actions.length).toBeGreaterThan(0);
    const applied = await capture((io) => runFix(file, { apply: true }, io));
    expect(applied.code).toBe(0);
    const fixed = JSON.parse(applied.stdout);
    expect(fixed).toEqual(JSON.parse(JSON.stringify(applyOverlay(doc, fixesOverlay(doc)))));
    expect(validateDocument(fixed).validations.readiness.score).toBeGreaterThan(validateDocument(doc).validations.readiness.score);
  });

  it('a YAML description gets YAML (the overlay, or the fixed document to commit in its place); --format chooses', async () => {
    const file = specs('openfaas-gateway.swagger2.yaml');
    const doc = docOf(file);
    const overlay = await capture((io) => runFix(file, {}, io));
    expect(overlay.code).toBe(0);
    expect(overlay.stdout.startsWith('overlay: 1.0.0\n')).toBe(true);
    expect(load(overlay.stdout)).toEqual(JSON.parse(JSON.stringify(fixesOverlay(doc))));
    const applied = await capture((io) => runFix(file, { apply: true }, io));
    expect(applied.stdout.startsWith('swagger: ')).toBe(true);
    expect(load(applied.stdout)).toEqual(JSON.parse(JSON.stringify(applyOverlay(doc, fixesOverlay(doc)))));
    expect(JSON.parse((await capture((io) => runFix(file, { format: 'json' }, io))).stdout)).toEqual(load(overlay.stdout));
    const json = specs('telegram_reduced.json');
    expect(load((await capture((io) => runFix(json, { format: 'yaml' }, io))).stdout)).toEqual(JSON.parse(JSON.stringify(fixesOverlay(docOf(json)))));
  });

  it('an unreadable file: exit 2', async () => {
    expect((await capture((io) => runFix(join(dir, 'missing.yaml'), {}, io))).code).toBe(2);
  });
});
