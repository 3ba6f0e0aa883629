import { describe, expect, it } from 'vitest';
import { type BenchResults, evaluateTargets } from '../../bench/run.js';
import type { FileResult, ToolId, ToolResult } from '../../bench/sections/validator-cli.js';

/** The bench's verdicts on section 1's figures (issue 18's targets), from made-up medians. */
const MiB = 1024 * 1024;

function tool(median_ms: number, runs = 5): ToolResult {
  return { available: true, runs, median_ms, ms: [median_ms], median_max_rss_mb: 50, max_rss_mb: [50], exit_codes: [0] };
}

function file(id: string, bytes: number, ms: Partial<Record<ToolId, number>>): FileResult {
  const none = { ...tool(Number.NaN, 0), available: false };
  const tools = Object.fromEntries((['ours', 'floor', 'redocly', 'spectral'] as const).map((t) => [t, ms[t] === undefined ? none : tool(ms[t]!)])) as Record<
    ToolId,
    ToolResult
  >;
  return { id, file: id, format: id.endsWith('.yaml') ? 'yaml' : 'json', bytes, operations: 1, floor_parser: 'JSON.parse', tools, same_flags: true };
}

describe('evaluateTargets: Redocly / ours ≥ 5× on descriptions over 0.5 MB', () => {
  const results = (files: FileResult[]): BenchResults => ({
    meta: {},
    yaml_floor: { chosen: 'js-yaml', median_ms: {}, file: 'x.yaml' },
    validator_cli: files,
    targets: [],
  });

  it('holds every description over 0.5 MB to it, not only the 4 MiB one and the two real ones', () => {
    const targets = evaluateTargets(
      results([
        file('slack.json', 0.67 * MiB, { ours: 297, floor: 227, redocly: 993 }),
        file('gen-1000.yaml', 1.42 * MiB, { ours: 100, floor: 90, redocly: 600 }),
        file('small.json', 0.2 * MiB, { ours: 100, floor: 90, redocly: 200 }),
        file('gen-4MiB.json', 4 * MiB, { ours: 400, floor: 300, redocly: 2100, spectral: 9000 }),
        file('kubernetes.io.json', 4.15 * MiB, { ours: 500, floor: 300, redocly: 2200 }),
      ]),
      false,
    );
    const byId = new Map(targets.map((t) => [t.id, t]));
    expect(byId.get('cli-redocly-slack.json')).toMatchObject({ measured: '3.34×', pass: false });
    expect(byId.get('cli-redocly-gen-1000.yaml')).toMatchObject({ measured: '6×', pass: true });
    // Under 0.5 MB the bound does not apply; the others keep their own rows, once each.
    expect(byId.has('cli-redocly-small.json')).toBe(false);
    expect(byId.get('cli-vs-redocly')).toMatchObject({ measured: '5.25×', pass: true });
    expect(byId.get('cli-real-redocly-kubernetes.io.json')).toMatchObject({ measured: '4.4×', pass: false });
    expect(targets.filter((t) => t.target.includes('Redocly')).length).toBe(4);
  });
});
