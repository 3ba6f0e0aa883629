/**
 * Section 1 — the validator as a user runs it: one whole process per run, beside the floor
 * (read + parse + JSON.stringify in a bare node process), Redocly CLI and Spectral CLI,
 * interleaved (ours, floor, redocly, spectral, ours, …) after a warm-up round.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { runNode, type ProcessRun } from '../lib/proc.js';
import { BENCH_DIST, NODE_MODULES, WORK_DIR } from '../lib/paths.js';
import { median, round } from '../lib/stats.js';

export type ToolId = 'ours' | 'floor' | 'redocly' | 'spectral';
export const TOOLS: ToolId[] = ['ours', 'floor', 'redocly', 'spectral'];

export interface SpecFile {
  id: string;
  file: string;
  format: 'json' | 'yaml';
  operations: number;
  /** Measured runs for Redocly and Spectral on this file (they take minutes on the largest files); default: all. */
  peerRuns?: number;
  /** Leave the peers out on this file (quick mode). */
  skipPeers?: boolean;
}

export interface ToolResult {
  available: boolean;
  note?: string;
  runs: number;
  median_ms: number;
  ms: number[];
  median_max_rss_mb: number;
  max_rss_mb: number[];
  exit_codes: Array<number | null>;
  /** Flagged (rule, method, path) triples; absent for the floor. */
  flagged?: number;
  /** Same set as ours. */
  same_as_ours?: boolean;
  flag_diff?: { only_here: string[]; only_ours: string[] };
}

export interface FileResult {
  id: string;
  file: string;
  format: 'json' | 'yaml';
  bytes: number;
  operations: number;
  floor_parser: string;
  tools: Record<ToolId, ToolResult>;
  /** Every available tool flagged the same (rule, method, path) set. */
  same_flags: boolean | null;
}

const REDOCLY_BIN = path.join(NODE_MODULES, '@redocly', 'cli', 'bin', 'cli.js');
const SPECTRAL_BIN = path.join(NODE_MODULES, '@stoplight', 'spectral-cli', 'dist', 'index.js');

const REDOCLY_CONFIG = `# Only the three rules the validator's endpoint findings correspond to.
extends: []
rules:
  operation-operationId: error
  operation-summary: error
  operation-description: error
`;

const SPECTRAL_RULESET = `# Spectral's own operation-operationId and operation-description, plus a truthy summary rule.
extends: [[spectral:oas, off]]
rules:
  operation-operationId: error
  operation-description: error
  operation-summary:
    description: Operation must have a summary.
    severity: error
    given: "$.paths[*][get,put,post,delete,options,head,patch,trace]"
    then:
      field: summary
      function: truthy
`;

// The three endpoint findings that the peers' rules correspond to.
const OUR_RULES: Record<string, string> = {
  endpoints_without_operation_id: 'operationId',
  endpoints_without_description: 'description',
  endpoints_without_name: 'summary',
};
const PEER_RULES: Record<string, string> = {
  'operation-operationId': 'operationId',
  'operation-description': 'description',
  'operation-summary': 'summary',
};

export function toolsAvailable(): Record<ToolId, boolean> {
  return { ours: true, floor: true, redocly: existsSync(REDOCLY_BIN), spectral: existsSync(SPECTRAL_BIN) };
}

function argsFor(tool: ToolId, spec: SpecFile, cli: string, floorParser: string): string[] {
  switch (tool) {
    case 'ours':
      return [cli, 'validate', spec.file];
    case 'floor':
      return [path.join(BENCH_DIST, 'floor.js'), spec.format === 'json' ? 'json' : floorParser, spec.file];
    case 'redocly':
      return [REDOCLY_BIN, 'lint', spec.file, '--config', path.join(WORK_DIR, 'redocly.yaml'), '--format', 'json', '--max-problems', '100000000'];
    case 'spectral':
      return [SPECTRAL_BIN, 'lint', spec.file, '--ruleset', path.join(WORK_DIR, 'spectral.yaml'), '--format', 'json', '--quiet'];
  }
}

// No telemetry, update check or banner: this machine has no internet, and a tool waiting
// for a network timeout would be measured as slow.
const TOOL_ENV: Record<string, string> = {
  REDOCLY_TELEMETRY: 'off',
  REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true',
  REDOCLY_SUPPRESS_NOTIFICATIONS: 'true',
  NO_COLOR: '1',
};

const key = (rule: string, method: string, p: string) => `${rule} ${method.toLowerCase()} ${p}`;

function decodePointer(pointer: string): string[] {
  return pointer
    .replace(/^#?\//, '')
    .split('/')
    .map((s) => decodeURIComponent(s).replace(/~1/g, '/').replace(/~0/g, '~'));
}

/** The (rule, method, path) triples a tool's output flags, or null when it cannot be read. */
export function flaggedBy(tool: ToolId, stdout: string): Set<string> | null {
  try {
    const out = new Set<string>();
    if (tool === 'ours') {
      const result = JSON.parse(stdout) as { validations: Record<string, unknown> };
      for (const [name, rule] of Object.entries(OUR_RULES)) {
        const map = result.validations[name];
        if (Array.isArray(map)) continue; // [] when nothing is flagged
        for (const endpoint of Object.values(map as Record<string, { type: string; path: string }>)) out.add(key(rule, endpoint.type, endpoint.path));
      }
    } else if (tool === 'redocly') {
      const result = JSON.parse(stdout) as { problems: Array<{ ruleId: string; location: Array<{ pointer: string }> }> };
      for (const problem of result.problems) {
        const rule = PEER_RULES[problem.ruleId];
        if (!rule) continue;
        const [root, p, method] = decodePointer(problem.location[0]!.pointer);
        if (root === 'paths' && p && method) out.add(key(rule, method, p));
      }
    } else if (tool === 'spectral') {
      const text = stdout.trim();
      const result = (text === '' || text.startsWith('No results') ? [] : JSON.parse(text)) as Array<{ code: string; path: string[] }>;
      for (const problem of result) {
        const rule = PEER_RULES[problem.code];
        if (!rule) continue;
        const [root, p, method] = problem.path;
        if (root === 'paths' && p && method) out.add(key(rule, method, p));
      }
    } else {
      return null;
    }
    return out;
  } catch {
    return null;
  }
}

export function writeToolConfigs(): void {
  writeFileSync(path.join(WORK_DIR, 'redocly.yaml'), REDOCLY_CONFIG);
  writeFileSync(path.join(WORK_DIR, 'spectral.yaml'), SPECTRAL_RULESET);
}

export async function benchValidatorCli(
  specs: readonly SpecFile[],
  opts: { cli: string; runs: number; warmup: boolean; floorParser: string; log: (line: string) => void },
): Promise<FileResult[]> {
  writeToolConfigs();
  const available = toolsAvailable();
  const results: FileResult[] = [];
  for (const spec of specs) {
    const outDir = path.join(WORK_DIR, 'out');
    const runsOf = (tool: ToolId) => {
      if (!available[tool]) return 0;
      if (tool === 'redocly' || tool === 'spectral') return spec.skipPeers ? 0 : Math.min(opts.runs, spec.peerRuns ?? opts.runs);
      return opts.runs;
    };
    const warmOf = (tool: ToolId) => opts.warmup && runsOf(tool) === opts.runs;
    const samples: Record<ToolId, ProcessRun[]> = { ours: [], floor: [], redocly: [], spectral: [] };
    const run = async (tool: ToolId) => {
      const r = await runNode(argsFor(tool, spec, opts.cli, opts.floorParser), {
        cwd: WORK_DIR,
        outBase: path.join(outDir, `${spec.id}.${tool}`),
        env: TOOL_ENV,
      });
      return r;
    };
    opts.log(`  ${spec.id} (${spec.operations} operations)`);
    for (const tool of TOOLS) if (warmOf(tool)) await run(tool);
    for (let round = 0; round < opts.runs; round++) {
      for (const tool of TOOLS) {
        if (round >= runsOf(tool)) continue;
        const r = await run(tool);
        samples[tool].push(r);
      }
      opts.log(
        `    round ${round + 1}/${opts.runs}: ${TOOLS.filter((t) => samples[t][round])
          .map((t) => `${t} ${Math.round(samples[t][round]!.wallMs)} ms`)
          .join(', ')}`,
      );
    }

    const ours = flaggedBy('ours', readIfExists(path.join(outDir, `${spec.id}.ours.stdout`)));
    const tools = {} as Record<ToolId, ToolResult>;
    let same: boolean | null = ours !== null;
    for (const tool of TOOLS) {
      const list = samples[tool];
      const ms = list.map((r) => round(r.wallMs, 1));
      const rss = list.map((r) => round(r.maxRssKb / 1024, 1));
      const result: ToolResult = {
        available: available[tool],
        ...(!available[tool] && { note: 'not available (not installed)' }),
        ...(available[tool] && list.length === 0 && { note: 'skipped on this file' }),
        runs: list.length,
        median_ms: round(median(list.map((r) => r.wallMs)), 1),
        ms,
        median_max_rss_mb: round(median(list.map((r) => r.maxRssKb / 1024)), 1),
        max_rss_mb: rss,
        exit_codes: list.map((r) => r.exitCode),
      };
      if (tool !== 'floor' && list.length > 0) {
        const flags = flaggedBy(tool, readIfExists(path.join(outDir, `${spec.id}.${tool}.stdout`)));
        if (flags === null) {
          result.note = `output not readable (exit ${list[list.length - 1]!.exitCode}): ${readIfExists(path.join(outDir, `${spec.id}.${tool}.stderr`)).slice(0, 300)}`;
          same = false;
        } else {
          result.flagged = flags.size;
          if (ours !== null && tool !== 'ours') {
            const onlyHere = [...flags].filter((k) => !ours.has(k));
            const onlyOurs = [...ours].filter((k) => !flags.has(k));
            result.same_as_ours = onlyHere.length === 0 && onlyOurs.length === 0;
            if (!result.same_as_ours) {
              result.flag_diff = { only_here: onlyHere.slice(0, 10), only_ours: onlyOurs.slice(0, 10) };
              same = false;
            }
          }
        }
      }
      tools[tool] = result;
    }
    results.push({
      id: spec.id,
      file: path.relative(process.cwd(), spec.file) || spec.file,
      format: spec.format,
      bytes: readFileSync(spec.file).length,
      operations: spec.operations,
      floor_parser: spec.format === 'json' ? 'JSON.parse' : opts.floorParser,
      tools,
      same_flags: same,
    });
  }
  return results;
}

function readIfExists(file: string): string {
  return existsSync(file) ? readFileSync(file, 'utf8') : '';
}
