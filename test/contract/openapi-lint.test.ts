/**
 * Issue 15 §4: the served OpenAPI document passes Redocly CLI `lint` (recommended ruleset) and
 * Spectral (`spectral:oas`) with no error. Warnings are allowed; among them, Spectral's
 * oas3-operation-security-defined: the operations name their scope as a role on the bearer
 * scheme, which OpenAPI 3.1 allows for any scheme and Spectral expects of OAuth only.
 */
import { execFile } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../support/build.js';
import { servedDocument, writeToTemp } from './served-document.js';

const bin = (name: string) => path.join(REPO_ROOT, 'node_modules', '.bin', name);

function run(command: string, args: string[], cwd: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      command,
      args,
      { cwd, maxBuffer: 64 * 1024 * 1024, env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' } },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}

describe('the served OpenAPI document passes the linters', () => {
  let dir: string;
  let file: string;
  beforeAll(async () => {
    ({ dir, file } = writeToTemp(await servedDocument()));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('Redocly CLI lint, recommended ruleset: no error', async () => {
    const result = await run(bin('redocly'), ['lint', file, '--extends', 'recommended', '--format', 'json'], dir);
    const report = JSON.parse(result.stdout) as {
      totals: { errors: number };
      problems: Array<{ ruleId: string; severity: string; message: string; location: unknown }>;
    };
    const errors = report.problems.filter((p) => p.severity === 'error');
    expect(errors, JSON.stringify(errors, null, 2)).toEqual([]);
    expect(report.totals.errors).toBe(0);
    expect(result.code, result.stderr).toBe(0);
  });

  it('Spectral, spectral:oas: no error', async () => {
    const ruleset = path.join(dir, '.spectral.yaml');
    writeFileSync(ruleset, 'extends: ["spectral:oas"]\n');
    const result = await run(bin('spectral'), ['lint', file, '--ruleset', ruleset, '--format', 'json', '--fail-severity', 'error'], dir);
    const findings = JSON.parse(result.stdout) as Array<{ code: string; severity: number; message: string; path: string[] }>;
    // Severity 0 is an error (1 warning, 2 information, 3 hint).
    const errors = findings.filter((f) => f.severity === 0);
    expect(errors, JSON.stringify(errors, null, 2)).toEqual([]);
    expect(result.code, result.stderr).toBe(0);
  });
});
