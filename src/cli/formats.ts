import { escapeOf, INVISIBLE_IN_LINE } from '../text/invisible.js';
import { isAbsolute, sep } from 'node:path';
import { pathToFileURL } from 'node:url';
import { RULE_IDS, RULE_TEXTS, type RuleFinding, type Severity } from '../domain/validator/index.js';
import { groupDigits } from '../text/numbers.js';
import type { Position } from './positions.js';
import { VERSION } from './version.js';

/**
 * The report formats of `copilot-service validate` that place findings in the document
 * (`json` is the HTTP answer, written by validate.ts): `text` lines `file:line:col`, SARIF
 * 2.1.0, JUnit XML and GitHub workflow commands. docs/cli.md describes each.
 */

export type Format = 'text' | 'json' | 'sarif' | 'junit' | 'github';
export const FORMATS: readonly Format[] = ['text', 'json', 'sarif', 'junit', 'github'];

/** One finding with where it is in its document. */
export interface Located {
  finding: RuleFinding;
  position: Position;
}

/** What the collecting formats (sarif, junit) keep of one input. */
export interface FileReport {
  /** The input as the user named it (`-` for standard input). */
  label: string;
  located: Located[];
  /** Set when the input could not be read or parsed (exit code 2). */
  error?: string;
}

const RANK: Record<Severity, number> = { info: 0, warning: 1, error: 2 };
/** The severities, the severest first. */
const SEVERITIES: readonly Severity[] = ['error', 'warning', 'info'];
export const atLeast = (severity: Severity, threshold: Severity) => RANK[severity] >= RANK[threshold];

/** How many of `located` have each severity, added to `into`. */
function countSeverities(located: readonly Located[], into: Record<Severity, number> = { error: 0, warning: 0, info: 0 }): Record<Severity, number> {
  for (const { finding } of located) into[finding.severity]++;
  return into;
}

/**
 * Text from a document shown on a terminal or in an annotation: control and invisible
 * formatting characters escaped (src/text/invisible.ts), so a document can neither drive the
 * terminal nor turn the text around it (a bidi override in an operationId), as the dashboard shows it.
 */
export function printable(s: string): string {
  return s.replace(INVISIBLE_IN_LINE, escapeOf);
}

/** `file:line:col: severity rule: message [platforms]`, one line per finding, as compilers print them. */
export function textLines(label: string, located: readonly Located[]): string {
  let out = '';
  const file = printable(label);
  for (const { finding: f, position: p } of located) {
    out += `${file}:${p.line}:${p.column}: ${f.severity} ${f.rule}: ${printable(f.message)}${f.platforms.length > 0 ? ` [${f.platforms.join(', ')}]` : ''}\n`;
  }
  return out;
}

// GitHub workflow commands: https://docs.github.com/actions/reference/workflow-commands-for-github-actions
// GitHub's escapes first (`%`, and CR, LF as %0D, %0A, which the annotation shows as line
// breaks), then the other control characters as `text` shows them: `\u001b` holds no `%`,
// so neither escaping touches the other's output.
const ghData = (s: string) => printable(s.replace(/%/g, '%25').replace(/\r/g, '%0D').replace(/\n/g, '%0A'));
const ghProperty = (s: string) => ghData(s).replace(/:/g, '%3A').replace(/,/g, '%2C');
const GH_COMMAND: Record<Severity, string> = { error: 'error', warning: 'warning', info: 'notice' };

/**
 * Annotations of one kind (error, warning, notice) that GitHub shows per step; it drops the
 * rest silently (github.com/actions/toolkit, docs/problem-matchers.md, "Limitations").
 */
export const GITHUB_ANNOTATIONS_SHOWN = 10;

/**
 * `::error file=…,line=…,col=…,title=<rule>::<message>` per finding (info as `::notice`). An
 * input with more of one kind than GitHub shows first gets a notice that counts them all.
 */
export function githubLines(label: string, located: readonly Located[]): string {
  let out = '';
  const file = ghProperty(label);
  const counts = countSeverities(located);
  if (Math.max(counts.error, counts.warning, counts.info) > GITHUB_ANNOTATIONS_SHOWN) {
    const kinds = SEVERITIES.filter((s) => counts[s] > 0).map((s) => `${groupDigits(counts[s])} ${counts[s] === 1 ? GH_COMMAND[s] : `${GH_COMMAND[s]}s`}`);
    out += `::notice file=${file},title=copilot-service::${ghData(
      `${kinds.join(', ')}: GitHub shows ${GITHUB_ANNOTATIONS_SHOWN} annotations of each kind per step; the log lists them all, and --format sarif gives them to code scanning.`,
    )}\n`;
  }
  for (const { finding: f, position: p } of located) {
    out += `::${GH_COMMAND[f.severity]} file=${file},line=${p.line},col=${p.column},title=${ghProperty(f.rule)}::${ghData(f.message)}\n`;
  }
  return out;
}

export function githubFailure(label: string, message: string): string {
  return `::error file=${ghProperty(label)},title=unreadable::${ghData(message)}\n`;
}

/**
 * Where standard input's findings are. SARIF has no artifact for it, and leaving the location
 * out is no answer: GitHub code scanning rejects the whole file when a result has no
 * `artifactLocation.uri` ("locationFromSarifResult: expected artifact location"). So a URI
 * with a scheme of its own, which no file's relative path can be (a path's colon in its first
 * segment is escaped, below) and which code scanning, finding no such file in the repository,
 * does not place on one; its description says what it is.
 */
const STDIN_LOCATION = { uri: 'stdin:', description: { text: 'standard input' } };

/**
 * The SARIF `artifactLocation` (SARIF 2.1.0 §3.4.3: a valid URI reference): a URL as given (an
 * input's label holds no credentials: inputs.ts); a file URL for an absolute path; a relative path as written (forward slashes,
 * percent-encoded), with `?`, `#` and the colons of its first segment escaped too, so that it
 * stays a relative reference to that file (RFC 3986 §4.2: `c:foo.json` would be scheme `c`).
 */
function artifactLocation(label: string): { uri: string; description?: { text: string } } {
  if (label === '-') return STDIN_LOCATION;
  if (/^https?:\/\//i.test(label)) return { uri: label };
  if (isAbsolute(label)) return { uri: pathToFileURL(label).href };
  // A backslash separates directories on Windows only; elsewhere it is a character of the name.
  const path = encodeURI(sep === '\\' ? label.replace(/\\/g, '/') : label)
    .replace(/\?/g, '%3F')
    .replace(/#/g, '%23');
  const slash = path.indexOf('/');
  const first = slash === -1 ? path : path.slice(0, slash);
  return { uri: first.replace(/:/g, '%3A') + path.slice(first.length) };
}

const SARIF_LEVEL: Record<Severity, string> = { error: 'error', warning: 'warning', info: 'note' };

/**
 * The most results a SARIF run may hold: GitHub code scanning rejects a file with a run of more
 * (docs.github.com, "SARIF results exceed hard limit"); Microsoft Graph's description alone has
 * 29,702 findings.
 */
export const SARIF_MAX_RESULTS = 25_000;

const PLURAL: Record<Severity, string> = { error: 'errors', warning: 'warnings', info: 'infos' };

/**
 * Which findings a run of at most `max` results keeps: every one of the severest severities that
 * fit, then the first found of the next (in the inputs' order), none of the rest. Null when all
 * fit; otherwise, per severity, how many are kept, and the notice that says what was left out.
 */
function sarifQuota(reports: readonly FileReport[], max: number): { keep: Record<Severity, number>; notice: string } | null {
  const found: Record<Severity, number> = { error: 0, warning: 0, info: 0 };
  for (const report of reports) countSeverities(report.located, found);
  const total = found.error + found.warning + found.info;
  if (total <= max) return null;
  const keep: Record<Severity, number> = { error: 0, warning: 0, info: 0 };
  let room = max;
  const left: string[] = [];
  for (const severity of SEVERITIES) {
    keep[severity] = Math.min(found[severity], room);
    room -= keep[severity];
    const out = found[severity] - keep[severity];
    if (out > 0) left.push(`${groupDigits(out)} of ${groupDigits(found[severity])} ${PLURAL[severity]}`);
  }
  const notice =
    `${groupDigits(total - max)} of ${groupDigits(total)} findings are left out: code scanning takes at most ${groupDigits(max)} results per run, ` +
    `so the severest are kept (${left.join(', ')} left out). --format json lists them all.`;
  return { keep, notice };
}

/**
 * SARIF 2.1.0: one run; the driver's rules are the rule registry (`RULE_IDS`, each described
 * by its sentence: code scanning titles an alert with it), each result
 * names its rule by id and index, its level, message (`printable`) and region; the JSON pointer, platforms
 * and fix are in the result's properties. An input that could not be read is a tool
 * execution notification (an error) and makes the invocation unsuccessful. A run holds at most
 * `SARIF_MAX_RESULTS` results, the severest; a warning notification says what was left out.
 */
export function renderSarif(reports: readonly FileReport[]): string {
  const ruleIndex = new Map(RULE_IDS.map((id, i) => [id, i]));
  const results: unknown[] = [];
  const notifications: unknown[] = [];
  const quota = sarifQuota(reports, SARIF_MAX_RESULTS);
  for (const report of reports) {
    const location = artifactLocation(report.label);
    if (report.error !== undefined) {
      notifications.push({
        level: 'error',
        message: { text: printable(report.error) },
        locations: [{ physicalLocation: { artifactLocation: location } }],
      });
      continue;
    }
    for (const { finding: f, position: p } of report.located) {
      if (quota !== null && quota.keep[f.severity]-- <= 0) continue;
      const index = ruleIndex.get(f.rule);
      results.push({
        ruleId: f.rule,
        ...(index === undefined ? {} : { ruleIndex: index }),
        level: SARIF_LEVEL[f.severity],
        message: { text: printable(f.message) },
        locations: [
          {
            physicalLocation: { artifactLocation: location, region: { startLine: p.line, startColumn: p.column } },
            logicalLocations: [{ fullyQualifiedName: f.pointer, kind: 'member' }],
          },
        ],
        properties: { pointer: f.pointer, endpoint: f.endpoint, platforms: f.platforms, fix: f.fix },
      });
    }
  }
  const successful = notifications.length === 0;
  if (quota !== null) notifications.push({ level: 'warning', message: { text: quota.notice } });
  const sarif = {
    $schema: 'https://json.schemastore.org/sarif-2.1.0.json',
    version: '2.1.0',
    runs: [
      {
        tool: {
          driver: {
            name: 'copilot-service',
            version: VERSION,
            rules: RULE_IDS.map((id) => ({ id, name: id, shortDescription: { text: RULE_TEXTS[id]! } })),
          },
        },
        invocations: [{ executionSuccessful: successful, toolExecutionNotifications: notifications }],
        // Columns as the positions count them (positions.ts): UTF-16 code units, SARIF's default said aloud.
        columnKind: 'utf16CodeUnits',
        results,
      },
    ],
  };
  return `${JSON.stringify(sarif, null, 2)}\n`;
}

/**
 * Text for XML character data or an attribute value: control characters as `text` shows them
 * (a raw CR or LF in a failure's text would start a finding line of its own), then the markup
 * escaped; the two noncharacters XML 1.0 cannot hold at all in the same `\uXXXX` form.
 */
function xml(s: string): string {
  return printable(s)
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/[\ufffe\uffff]/g, escapeOf);
}

/**
 * JUnit XML: one `<testsuite>` per input, one `<testcase>` per rule of the registry (a
 * stable list, so a CI dashboard can follow each rule from run to run). A rule with a finding
 * at or above `--fail-on` fails, its findings (`line:col severity pointer: message`) in the
 * failure's text; one with findings below the threshold passes, them in `<system-out>`. An
 * input that could not be read is a suite with one `read` test case in error.
 */
export function renderJunit(reports: readonly FileReport[], failOn: Severity): string {
  let tests = 0;
  let failures = 0;
  let errors = 0;
  const suites: string[] = [];
  for (const report of reports) {
    const name = xml(report.label);
    if (report.error !== undefined) {
      tests++;
      errors++;
      suites.push(
        `  <testsuite name="${name}" tests="1" failures="0" errors="1" skipped="0">\n` +
          `    <testcase classname="${name}" name="read">\n      <error message="${xml(report.error)}" type="unreadable"/>\n    </testcase>\n  </testsuite>`,
      );
      continue;
    }
    const byRule = new Map<string, Located[]>();
    for (const l of report.located) {
      const list = byRule.get(l.finding.rule);
      if (list) list.push(l);
      else byRule.set(l.finding.rule, [l]);
    }
    const ids = [...RULE_IDS, ...[...byRule.keys()].filter((id) => !RULE_IDS.includes(id))];
    let suiteFailures = 0;
    const cases: string[] = [];
    for (const id of ids) {
      const found = byRule.get(id) ?? [];
      // One line per finding: each escaped on its own, joined by the only raw line breaks.
      const body = found.map(({ finding: f, position: p }) => xml(`${p.line}:${p.column} ${f.severity} ${f.pointer}: ${f.message}`)).join('\n');
      const failing = found.filter((l) => atLeast(l.finding.severity, failOn));
      let inner = '';
      if (failing.length > 0) {
        suiteFailures++;
        inner = `\n      <failure message="${failing.length} finding${failing.length === 1 ? '' : 's'} at or above ${failOn}" type="${xml(id)}">${body}</failure>\n    `;
      } else if (found.length > 0) inner = `\n      <system-out>${body}</system-out>\n    `;
      cases.push(`    <testcase classname="${name}" name="${xml(id)}">${inner}</testcase>`);
    }
    tests += ids.length;
    failures += suiteFailures;
    suites.push(`  <testsuite name="${name}" tests="${ids.length}" failures="${suiteFailures}" errors="0" skipped="0">\n${cases.join('\n')}\n  </testsuite>`);
  }
  return `<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="copilot-service validate" tests="${tests}" failures="${failures}" errors="${errors}">\n${suites.join('\n')}\n</testsuites>\n`;
}
