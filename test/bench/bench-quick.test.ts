import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

/**
 * Smoke test of the benchmark's quick mode (`npm run bench -- --quick` without its build
 * step: `npm test` has just built dist/, and rebuilding it here would race the other test
 * files that run the built CLI): it runs to the end and writes every section. No timing
 * is asserted (timings are the benchmark's output, not a test's).
 */
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
/** The longest a command of the test may run (the type check, then the quick run). */
const RUN_TIMEOUT_MS = 600_000;
const dir = mkdtempSync(path.join(tmpdir(), 'cms-bench-quick-'));
const out = path.join(dir, 'results.json');

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('npm run bench -- --quick', () => {
  it(
    'runs every section and every tool flags the same endpoints',
    async () => {
      // The quick run alone took 226 s on a two-core Xeon (2026-11-28), and takes longer beside the
      // other test files: the bound it had (240 s) killed it in a fresh-clone CI run on a busy machine.
      const run = (file: string, args: string[]) =>
        new Promise<{ code: number | null; output: string }>((resolve) => {
          execFile(file, args, { cwd: ROOT, maxBuffer: 64 * 1024 * 1024, timeout: RUN_TIMEOUT_MS }, (err, stdout, stderr) => {
            const signal = (err as { signal?: string } | null)?.signal;
            resolve({
              code: err ? ((err as { code?: number }).code ?? 1) : 0,
              output: `${stdout}${stderr}${signal ? `\n[killed by ${signal} after ${RUN_TIMEOUT_MS / 1000} s]` : ''}`,
            });
          });
        });
      // Type errors do not stop the emit (type checking is `npm run typecheck`), as in the bench script.
      await run(path.join(ROOT, 'node_modules', '.bin', 'tsc'), ['-p', 'bench/tsconfig.json']);
      const { code, output } = await run(process.execPath, ['dist-bench/bench/run.js', '--quick', '--out', out]);
      expect(code, output.slice(-4000)).toBe(0);
      const results = JSON.parse(readFileSync(out, 'utf8'));
      // The start of a bare node process, which every whole-process time includes, is on record.
      expect(results.meta.node_start_ms).toBeGreaterThan(0);
      expect(results.meta.extra_ca_certs).toBe(Boolean(process.env.NODE_EXTRA_CA_CERTS));

      // 1. Every file ran through our CLI and the floor; the peers where installed and not skipped.
      expect(results.validator_cli.length).toBeGreaterThanOrEqual(4);
      for (const file of results.validator_cli) {
        expect(file.tools.ours.runs, file.id).toBeGreaterThan(0);
        expect(file.tools.floor.runs, file.id).toBeGreaterThan(0);
        expect(file.tools.ours.flagged, file.id).toBeGreaterThan(0);
        // Every tool that ran flagged the same (rule, method, path) triples as ours.
        expect(file.same_flags, `${file.id}: ${JSON.stringify(file.tools, null, 1)}`).toBe(true);
        for (const tool of ['redocly', 'spectral']) {
          if (file.tools[tool].runs > 0) expect(file.tools[tool].same_as_ours, `${file.id} ${tool}`).toBe(true);
        }
      }
      // The peers (devDependencies) ran on at least one file wherever they are installed.
      for (const tool of ['redocly', 'spectral']) {
        const tools = results.validator_cli.map((f: { tools: Record<string, { available: boolean; runs: number }> }) => f.tools[tool]!);
        if (tools[0].available)
          expect(
            tools.some((t: { runs: number }) => t.runs > 0),
            tool,
          ).toBe(true);
      }

      // 2–4. The other sections produced figures.
      expect(results.validator_http.length).toBeGreaterThan(0);
      for (const h of results.validator_http) expect(h.first.n).toBeGreaterThan(0);
      // The hostile documents: each refused with invalid_swagger_file, the container-dense one accepted.
      const hostile = results.hostile_documents.documents as Array<{ id: string; statuses: number[]; errors: Array<string | null> }>;
      expect(hostile.length).toBeGreaterThan(10);
      for (const d of hostile) {
        if (d.id.startsWith('container-dense')) expect(d, d.id).toMatchObject({ statuses: [200], errors: [null] });
        else expect(d, d.id).toMatchObject({ statuses: [400], errors: ['invalid_swagger_file'] });
      }
      expect(results.hostile_documents.lists_during_dense).toMatchObject({ n: expect.any(Number), failed: 0 });
      expect(results.hostile_documents.lists_during_dense.n).toBeGreaterThan(0);
      expect(results.list_copilots.map((l: { dialect: string }) => l.dialect)).toContain('sqlite');
      for (const l of results.list_copilots) {
        expect(l.runs.length).toBeGreaterThan(0);
        for (const run of l.runs) expect(run).toMatchObject({ sent: expect.any(Number), failed: 0 });
        expect(l.median_p99_ms).toBeGreaterThan(0);
      }
      expect(results.knowledge_base.ingestion[0].runs[0].indexed).toBeGreaterThan(0);
      expect(results.knowledge_base.deletion[0].alone_ms.length).toBeGreaterThan(0);
      expect(results.targets.length).toBeGreaterThan(0);
      for (const t of results.targets) expect([true, false, null]).toContain(t.pass);
    },
    RUN_TIMEOUT_MS * 2 + 60_000,
  );
});
