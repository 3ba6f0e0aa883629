import { readFileSync, statSync } from 'node:fs';
import { basename } from 'node:path';
import { isAppError } from '../errors.js';
import {
  ENDPOINT_FINDING_TEXTS,
  hasFindings,
  parseDocument,
  renderResult,
  validateDocument,
  validationSummary,
  type DocumentSource,
  type ValidationResult,
} from '../domain/validator/index.js';
import type { FetchPolicy } from '../net/guarded-fetch.js';

/**
 * `copilot-service validate FILE|URL [--format json|text]` (DESIGN §5: the validator
 * offline): the endpoint's `{all_endpoints, validations}` (json) or a readable summary
 * (text). Exit code 0 when there is nothing to fix, 1 when a flag map is not empty or
 * the document names no server (`base_url` null), 2 when the document cannot be read.
 * Imports only the validator; the URL fetcher is loaded when a URL is given.
 */

export interface CliIo {
  stdout: (s: string) => void;
  stderr: (s: string) => void;
}

export interface ValidateOptions {
  format: 'json' | 'text';
  /** For an http(s) target; defaults to the service's own policy with the default configuration. */
  fetchPolicy?: FetchPolicy;
  /** Largest file accepted (default: the fetch policy's maxBytes, else 25 MiB). */
  maxBytes?: number;
}

export const EXIT_OK = 0;
export const EXIT_FINDINGS = 1;
export const EXIT_UNREADABLE = 2;

const DEFAULT_MAX_BYTES = 25 * 1024 * 1024;

export async function runValidate(target: string, opts: ValidateOptions, io: CliIo): Promise<number> {
  let result: ValidationResult;
  try {
    const remote = /^https?:\/\//i.test(target);
    const source = remote ? await fetchSource(target, opts.fetchPolicy) : readSource(target, opts.maxBytes ?? opts.fetchPolicy?.maxBytes ?? DEFAULT_MAX_BYTES);
    // A file the user chose, in a process of its own: no nesting scan before JSON.parse
    // (a too-deep document is still refused, after parsing, at the same place). What a
    // server sends is scanned first, as the service scans what its clients send.
    result = validateDocument(parseDocument(source, { scanNestingFirst: remote }));
  } catch (err) {
    io.stderr(`${describeFailure(target, err)}\n`);
    return EXIT_UNREADABLE;
  }
  io.stdout(opts.format === 'text' ? renderText(target, result) : `${renderResult(result)}\n`);
  return hasFindings(result) ? EXIT_FINDINGS : EXIT_OK;
}

/**
 * Reads the file in one synchronous call: a one-shot command has nothing else to do
 * meanwhile, and the promise API reads a large file in many small thread-pool rounds.
 */
function readSource(file: string, maxBytes: number): DocumentSource {
  const info = statSync(file);
  if (!info.isFile()) throw new CliFailure(`${file} is not a file.`);
  if (info.size > maxBytes) throw new CliFailure(`${file} is larger than ${maxBytes} bytes.`);
  return { bytes: readFileSync(file), fileName: basename(file) };
}

async function fetchSource(url: string, policy: FetchPolicy | undefined): Promise<DocumentSource> {
  // Loaded only for a URL, so validating a file starts without the HTTP client.
  const { fetchGuarded, fetchPolicyOf } = await import('../net/guarded-fetch.js');
  const { loadConfig } = await import('../config.js');
  const fetched = await fetchGuarded(url, policy ?? fetchPolicyOf(loadConfig({})), { accept: 'application/json, application/yaml;q=0.9, */*;q=0.5' });
  if (fetched.status < 200 || fetched.status > 299) throw new CliFailure(`${url} answered HTTP ${fetched.status}.`);
  return { bytes: fetched.body, mediaType: fetched.contentType, fileName: new URL(fetched.url).pathname };
}

class CliFailure extends Error {}

function describeFailure(target: string, err: unknown): string {
  if (err instanceof CliFailure) return err.message;
  if (isAppError(err)) return `${printable(target)}: ${err.message}`;
  const code = (err as NodeJS.ErrnoException | null)?.code;
  if (code === 'ENOENT') return `${printable(target)}: no such file.`;
  if (code === 'EACCES' || code === 'EPERM') return `${printable(target)}: permission denied.`;
  if (code === 'EISDIR') return `${printable(target)} is not a file.`;
  // FetchError and anything else: their message is one sentence for a person.
  const message = err instanceof Error ? err.message : String(err);
  return `${printable(target)}: ${message}`;
}

/** The text format: counts, auth type, base URL, then one row per flagged endpoint. */
export function renderText(target: string, result: ValidationResult): string {
  const summary = validationSummary(result);
  const lines: string[] = [];
  lines.push(`API description: ${printable(target)}`);
  lines.push(`Endpoints:       ${summary.endpoints} (${summary.flagged_endpoints} with findings)`);
  lines.push(`Auth type:       ${printable(summary.auth_type)}`);
  lines.push(`Base URL:        ${summary.base_url === null ? '(none: the document names no server; a copilot cannot call it)' : printable(summary.base_url)}`);
  lines.push('');
  const width = Math.max(...ENDPOINT_FINDING_TEXTS.map((f) => f.label.length));
  for (const finding of ENDPOINT_FINDING_TEXTS) {
    lines.push(`  ${finding.label.padEnd(width)}  ${summary.findings[finding.key]}`);
  }

  const rows: string[][] = [];
  result.all_endpoints.forEach((endpoint, i) => {
    const labels = ENDPOINT_FINDING_TEXTS.filter((f) => {
      const map = result.validations[f.key];
      return !Array.isArray(map) && Object.hasOwn(map, String(i));
    }).map((f) => f.label);
    if (labels.length > 0) rows.push([String(i), printable(endpoint.type), printable(endpoint.path), labels.join(', ')]);
  });
  if (rows.length > 0) {
    lines.push('');
    lines.push(...table(['#', 'METHOD', 'PATH', 'FINDINGS'], rows));
  }
  lines.push('');
  lines.push(summary.has_findings ? 'Result: findings to fix.' : 'Result: no findings.');
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

/** Text from the document shown on a terminal: control characters escaped, so a document cannot drive it. */
function printable(s: string): string {
  // eslint-disable-next-line no-control-regex
  return s.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
