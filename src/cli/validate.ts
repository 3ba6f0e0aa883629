import { isAppError } from '../errors.js';
import {
  detectFormat,
  ENDPOINT_FINDING_TEXTS,
  parseDocument,
  PLATFORMS,
  renderAnswer,
  validateDocument,
  validationSummary,
  type DocumentSource,
  type Platform,
  type RuleFinding,
  type Severity,
  type ValidationResult,
} from '../domain/validator/index.js';
import { atLeast, githubFailure, githubLines, printable, renderJunit, renderSarif, textLines, type FileReport, type Format, type Located } from './formats.js';
import { CliFailure, expandInputs, labelOf, readInput, withoutCredentials, type Input, type ReadOptions } from './inputs.js';

/**
 * `copilot-service validate FILE|GLOB|URL|- … [--format …] [--fail-on …] [--platform …]`
 * (DESIGN §5: the validator offline; issue 18 C). Exit code 0 when nothing reaches
 * `--fail-on`, 1 when a finding does (at `error`, the default: a non-empty flag map or an
 * error-severity rule finding, `validationSummary().has_findings`, as before), 2 when an
 * input cannot be read (the others are still validated and reported).
 * Imports only the validator; the URL fetcher, the glob matcher and the position readers
 * are loaded when needed. docs/cli.md describes the formats.
 */

export interface CliIo {
  stdout: (s: string | Uint8Array) => void;
  stderr: (s: string) => void;
}

export interface ValidateOptions extends ReadOptions {
  format: Format;
  /** The least severity that fails the run (exit code 1); default error. */
  failOn?: Severity;
  /** Only findings that list one of these platforms (and readiness for these only); default all. */
  platforms?: readonly Platform[];
}

export const EXIT_OK = 0;
export const EXIT_FINDINGS = 1;
export const EXIT_UNREADABLE = 2;

export async function runValidate(targets: string | readonly string[], opts: ValidateOptions, io: CliIo): Promise<number> {
  const args = typeof targets === 'string' ? [targets] : targets;
  let inputs: Input[];
  try {
    inputs = await expandInputs(args);
  } catch (err) {
    io.stderr(`${describeFailure('', err)}\n`);
    return EXIT_UNREADABLE;
  }
  const failOn = opts.failOn ?? 'error';
  const several = inputs.length > 1;
  const reports: FileReport[] = [];
  let unreadable = false;
  let failing = false;
  for (const input of inputs) {
    const label = labelOf(input);
    let source: DocumentSource;
    let result: ValidationResult;
    try {
      source = await readInput(input, opts);
      // A file the user chose, in a process of its own: no nesting scan before JSON.parse
      // (a too-deep document is still refused, after parsing, at the same place). What a
      // server sends is scanned first, as the service scans what its clients send.
      result = validateDocument(parseDocument(source, { scanNestingFirst: input.kind === 'url' }));
    } catch (err) {
      const message = describeFailure(label, err);
      io.stderr(`${message}\n`);
      unreadable = true;
      if (opts.format === 'github') io.stdout(githubFailure(label, message));
      else if (opts.format === 'sarif' || opts.format === 'junit') reports.push({ label, located: [], error: message });
      continue;
    }
    const shown = opts.platforms === undefined ? result : forPlatforms(result, opts.platforms);
    const failed = fails(shown, failOn, opts.platforms === undefined);
    if (failed) failing = true;
    if (opts.format === 'json') {
      // Written piece by piece (no copy of the whole answer). Several inputs: JSON Lines, each
      // answer with the input's name first.
      const pieces = renderAnswer(shown);
      if (several) pieces.splice(0, 1, Buffer.from(`{"file":${JSON.stringify(label)},`), pieces[0]!.subarray(1));
      pieces.push(Buffer.from('\n'));
      for (const piece of pieces) io.stdout(piece);
      continue;
    }
    const located = await locate(source, shown.validations.findings);
    if (opts.format === 'text') io.stdout(`${textLines(label, located)}${renderText(label, shown, { failed, failOn })}${several ? '\n' : ''}`);
    else if (opts.format === 'github') io.stdout(githubLines(label, located));
    else reports.push({ label, located });
  }
  if (opts.format === 'sarif') io.stdout(renderSarif(reports));
  else if (opts.format === 'junit') io.stdout(renderJunit(reports, failOn));
  return unreadable ? EXIT_UNREADABLE : failing ? EXIT_FINDINGS : EXIT_OK;
}

/**
 * Whether a result fails at `failOn`: a rule finding of that severity or more, or (with every
 * platform shown) a non-empty flag map of the interface, which counts as an error as it
 * always has. With `--platform`, the flag maps' findings count through their rules
 * (`operation-id-missing`, `summary-missing`, `description-missing`), for the platforms they list.
 */
function fails(result: ValidationResult, failOn: Severity, withFlagMaps: boolean): boolean {
  if (withFlagMaps) {
    for (const f of ENDPOINT_FINDING_TEXTS) {
      const map = result.validations[f.key];
      if (!Array.isArray(map) && Object.keys(map).length > 0) return true;
    }
  }
  return result.validations.findings.some((f) => atLeast(f.severity, failOn));
}

/** The result with only the findings that list one of `platforms`, and readiness for those platforms only (the score unchanged). */
export function forPlatforms(result: ValidationResult, platforms: readonly Platform[]): ValidationResult {
  const chosen = new Set<string>(platforms);
  const { readiness } = result.validations;
  return {
    all_endpoints: result.all_endpoints,
    validations: {
      ...result.validations,
      readiness: {
        ...readiness,
        platforms: Object.fromEntries(Object.entries(readiness.platforms).filter(([p]) => chosen.has(p))) as typeof readiness.platforms,
      },
      findings: result.validations.findings.filter((f) => f.platforms.some((p) => chosen.has(p))),
    },
  };
}

async function locate(source: DocumentSource, findings: readonly RuleFinding[]): Promise<Located[]> {
  if (findings.length === 0) return [];
  const { positionsOf } = await import('./positions.js');
  const at = await positionsOf(source, detectFormat(source));
  return findings.map((finding) => ({ finding, position: at(finding.pointer) }));
}

export function describeFailure(target: string, err: unknown): string {
  if (err instanceof CliFailure) return err.message;
  if (isAppError(err)) return `${printable(target)}: ${err.message}`;
  const code = (err as NodeJS.ErrnoException | null)?.code;
  if (code === 'ENOENT') return `${printable(target)}: no such file.`;
  if (code === 'EACCES' || code === 'EPERM') return `${printable(target)}: permission denied.`;
  if (code === 'EISDIR') return `${printable(target)} is not a file.`;
  // FetchError and anything else: their message is one sentence for a person (a URL in it without its credentials).
  const message = withoutCredentials(err instanceof Error ? err.message : String(err));
  return `${printable(target)}: ${message}`;
}

/**
 * The text format: counts, readiness per platform, auth type, base URL, the count of each
 * flag map and rule, one row per flagged endpoint (its flag maps' labels, then its rules'
 * ids), the document's own findings, and the verdict at `--fail-on` (`failed`: the exit code is 1).
 */
export function renderText(target: string, result: ValidationResult, verdict: { failed: boolean; failOn: Severity }): string {
  const summary = validationSummary(result);
  const { readiness, findings } = result.validations;
  const lines: string[] = [];
  lines.push(`API description: ${printable(target)}`);
  lines.push(`Endpoints:       ${summary.endpoints} (${summary.flagged_endpoints} with findings)`);
  lines.push(`Readiness:       ${readiness.score}/100`);
  lines.push(
    `Platforms:       ${Object.entries(readiness.platforms)
      .map(([platform, v]) => `${platform} ${v.ready ? 'ready' : `${v.blocking} blocking`}`)
      .join(' · ')}`,
  );
  lines.push(`Auth type:       ${printable(summary.auth_type)}`);
  lines.push(`Base URL:        ${summary.base_url === null ? '(none: the document names no server; a copilot cannot call it)' : printable(summary.base_url)}`);
  lines.push('');
  const counts: [string, number][] = ENDPOINT_FINDING_TEXTS.map((f) => [f.label, summary.findings[f.key]]);
  for (const [rule, n] of Object.entries(summary.rules)) counts.push([rule, n]);
  const width = Math.max(...counts.map(([label]) => label.length));
  for (const [label, n] of counts) lines.push(`  ${label.padEnd(width)}  ${n}`);

  const byEndpoint: string[][] = result.all_endpoints.map(() => []);
  result.all_endpoints.forEach((_, i) => {
    for (const f of ENDPOINT_FINDING_TEXTS) {
      const map = result.validations[f.key];
      if (!Array.isArray(map) && Object.hasOwn(map, String(i))) byEndpoint[i]!.push(f.label);
    }
  });
  const documentRows: string[][] = [];
  for (const f of findings) {
    if (f.endpoint === null) documentRows.push([f.severity, f.rule, printable(f.pointer), printable(f.message)]);
    else if (f.endpoint < byEndpoint.length && !byEndpoint[f.endpoint]!.includes(f.rule)) byEndpoint[f.endpoint]!.push(f.rule);
  }
  const rows: string[][] = [];
  result.all_endpoints.forEach((endpoint, i) => {
    const labels = byEndpoint[i]!;
    if (labels.length > 0) rows.push([String(i), printable(endpoint.type), printable(endpoint.path), labels.join(', ')]);
  });
  if (rows.length > 0) {
    lines.push('');
    lines.push(...table(['#', 'METHOD', 'PATH', 'FINDINGS'], rows));
  }
  if (documentRows.length > 0) {
    lines.push('');
    lines.push('Document:');
    lines.push(...table(['SEVERITY', 'RULE', 'POINTER', 'MESSAGE'], documentRows).map((l) => `  ${l}`));
  }
  lines.push('');
  const found = findings.length;
  if (verdict.failed) lines.push(`Result: findings at or above ${verdict.failOn} to fix.`);
  else if (found > 0) lines.push(`Result: no finding at or above ${verdict.failOn}; ${found} below it.`);
  else lines.push('Result: no findings.');
  return `${lines.join('\n')}\n`;
}

function table(header: string[], rows: string[][]): string[] {
  const widths = header.map((h, c) => Math.min(60, Math.max(h.length, ...rows.map((r) => r[c]!.length))));
  const line = (cells: string[]) =>
    cells
      .map((cell, c) => (c === cells.length - 1 ? cell : c === 0 ? cell.padStart(widths[c]!) : cell.padEnd(widths[c]!)))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)];
}

/** The names in `names` that are not platform ids. */
export function unknownPlatforms(names: readonly string[]): string[] {
  return names.filter((n) => !(PLATFORMS as readonly string[]).includes(n));
}

export { PLATFORMS };
