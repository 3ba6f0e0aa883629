/**
 * The validator's answer (GET /backend/api/copilot/:id/validator): the server's own wire
 * types (a type-only import: nothing of the server goes into the bundle) and its finding
 * texts (plain data, bundled). The helpers below still read the answer defensively, as data
 * from the network.
 */
import type { CopilotValidationResult, Endpoint, FlagMap, RuleFinding } from '../../../src/domain/validator/wire-types.js';
import { ENDPOINT_FINDING_TEXTS } from '../../../src/domain/validator/findings/catalog.js';

export type { Endpoint, FlagMap, RuleFinding };

export type ValidatorResult = CopilotValidationResult;

export type FlagKind = (typeof ENDPOINT_FINDING_TEXTS)[number]['kind'];

/** Each finding: the validations key it comes from, and how the dashboard names it (the server's catalog). */
export const FLAG_KINDS: ReadonlyArray<{ kind: FlagKind; key: keyof ValidatorResult['validations']; label: string; why: string }> = ENDPOINT_FINDING_TEXTS.map(
  ({ kind, key, title, why }) => ({ kind, key, label: title, why }),
);

export interface ReportRow {
  index: number;
  endpoint: Endpoint;
  flags: FlagKind[];
  /** The rule findings on this endpoint, in the answer's order. */
  findings: RuleFinding[];
  /** Lower-case path, name and operationId, for the text filter. */
  haystack: string;
}

export interface PlatformVerdict {
  platform: string;
  ready: boolean;
  blocking: number;
  warnings: number;
}

export interface Report {
  rows: ReportRow[];
  counts: Record<FlagKind, number>;
  flagged: number;
  authType: string;
  baseUrl: string | null;
  /** null when the answer has no readiness (an older server). */
  score: number | null;
  platforms: PlatformVerdict[];
  /** Every rule finding (well-formed ones only), in the answer's order. */
  findings: RuleFinding[];
}

const SEVERITIES = new Set(['error', 'warning', 'info']);

/** The rule findings of an answer that have the documented shape. */
export function ruleFindings(value: unknown, total: number): RuleFinding[] {
  if (!Array.isArray(value)) return [];
  return value.filter(
    (f): f is RuleFinding =>
      f !== null &&
      typeof f === 'object' &&
      typeof f.rule === 'string' &&
      SEVERITIES.has(f.severity) &&
      (f.endpoint === null || (Number.isInteger(f.endpoint) && f.endpoint >= 0 && f.endpoint < total)) &&
      typeof f.pointer === 'string' &&
      typeof f.message === 'string' &&
      Array.isArray(f.platforms),
  );
}

function verdicts(readiness: unknown): { score: number | null; platforms: PlatformVerdict[] } {
  if (readiness === null || typeof readiness !== 'object') return { score: null, platforms: [] };
  const r = readiness as { score?: unknown; platforms?: unknown };
  const platforms: PlatformVerdict[] = [];
  if (r.platforms !== null && typeof r.platforms === 'object') {
    for (const [platform, v] of Object.entries(r.platforms as Record<string, unknown>)) {
      if (v === null || typeof v !== 'object') continue;
      const { ready, blocking, warnings } = v as Record<string, unknown>;
      platforms.push({
        platform,
        ready: ready === true,
        blocking: typeof blocking === 'number' ? blocking : 0,
        warnings: typeof warnings === 'number' ? warnings : 0,
      });
    }
  }
  return { score: typeof r.score === 'number' ? r.score : null, platforms };
}

/** The indexes a flag map names; tolerant of `[]`, of a missing key, and of indexes out of range. */
export function flaggedIndexes(map: unknown, total: number): number[] {
  if (map === null || typeof map !== 'object' || Array.isArray(map)) return [];
  const out: number[] = [];
  for (const key of Object.keys(map)) {
    if (!/^\d+$/.test(key)) continue;
    const index = Number(key);
    if (index < total) out.push(index);
  }
  return out;
}

export function buildReport(result: ValidatorResult): Report {
  const endpoints = Array.isArray(result.all_endpoints) ? result.all_endpoints : [];
  const flags: FlagKind[][] = endpoints.map(() => []);
  const counts = {} as Record<FlagKind, number>;
  for (const { kind, key } of FLAG_KINDS) {
    const indexes = flaggedIndexes(result.validations?.[key], endpoints.length);
    counts[kind] = indexes.length;
    for (const index of indexes) flags[index]!.push(kind);
  }
  const findings = ruleFindings(result.validations?.findings, endpoints.length);
  const byEndpoint: RuleFinding[][] = endpoints.map(() => []);
  for (const f of findings) if (f.endpoint !== null) byEndpoint[f.endpoint]!.push(f);
  const rows = endpoints.map((endpoint, index) => ({
    index,
    endpoint,
    flags: flags[index]!,
    findings: byEndpoint[index]!,
    haystack: `${endpoint.path ?? ''}\n${endpoint.name ?? ''}\n${endpoint.operationId ?? ''}\n${endpoint.type ?? ''}`.toLowerCase(),
  }));
  const baseUrl = result.validations?.base_url;
  return {
    rows,
    counts,
    flagged: rows.filter(isFlagged).length,
    authType: typeof result.validations?.auth_type === 'string' ? result.validations.auth_type : 'unknown',
    baseUrl: typeof baseUrl === 'string' && baseUrl !== '' ? baseUrl : null,
    ...verdicts(result.validations?.readiness),
    findings,
  };
}

export function isFlagged(row: ReportRow): boolean {
  return row.flags.length > 0 || row.findings.length > 0;
}

export interface RowFilter {
  onlyFlagged: boolean;
  kind: FlagKind | null;
  text: string;
}

export function filterRows(rows: readonly ReportRow[], filter: RowFilter): readonly ReportRow[] {
  const words = filter.text.toLowerCase().split(/\s+/).filter(Boolean);
  if (!filter.onlyFlagged && filter.kind === null && words.length === 0) return rows;
  return rows.filter(
    (row) =>
      (!filter.onlyFlagged || isFlagged(row)) && (filter.kind === null || row.flags.includes(filter.kind)) && words.every((w) => row.haystack.includes(w)),
  );
}

// ——— Findings: grouped, filtered (issue 18 §D) ———

const SEVERITY_RANK: Record<string, number> = { error: 0, warning: 1, info: 2 };

export interface FindingFilter {
  /** A platform id, or null for every platform. */
  platform: string | null;
  /** A severity, or null for every severity. */
  severity: RuleFinding['severity'] | null;
}

/** The findings that break or degrade `platform` and have `severity` (either may be null: any). */
export function filterFindings(findings: readonly RuleFinding[], filter: FindingFilter): readonly RuleFinding[] {
  if (filter.platform === null && filter.severity === null) return findings;
  return findings.filter(
    (f) => (filter.severity === null || f.severity === filter.severity) && (filter.platform === null || f.platforms.includes(filter.platform as never)),
  );
}

export interface FindingGroup {
  /** `rule` and `severity` together: one rule may report at more than one severity. */
  key: string;
  rule: string;
  severity: RuleFinding['severity'];
  /** The findings of the group, in the answer's order. */
  items: RuleFinding[];
  /** The platforms any finding of the group names, in first-seen order. */
  platforms: string[];
  /** How many of the items carry a computed fix. */
  fixable: number;
}

/** Groups findings by rule and severity: errors first, then warnings, then info; within a severity the largest group first, then by rule id. */
export function groupFindings(findings: readonly RuleFinding[]): FindingGroup[] {
  const groups = new Map<string, FindingGroup & { seen: Set<string> }>();
  for (const f of findings) {
    const key = `${f.severity}:${f.rule}`;
    let group = groups.get(key);
    if (!group) {
      group = { key, rule: f.rule, severity: f.severity, items: [], platforms: [], fixable: 0, seen: new Set() };
      groups.set(key, group);
    }
    group.items.push(f);
    if (f.fix !== null && f.fix !== undefined) group.fixable++;
    for (const p of f.platforms) {
      if (!group.seen.has(p)) {
        group.seen.add(p);
        group.platforms.push(p);
      }
    }
  }
  return [...groups.values()]
    .map(({ seen: _seen, ...group }) => group)
    .sort(
      (a, b) =>
        (SEVERITY_RANK[a.severity] ?? 3) - (SEVERITY_RANK[b.severity] ?? 3) ||
        b.items.length - a.items.length ||
        (a.rule < b.rule ? -1 : a.rule > b.rule ? 1 : 0),
    );
}

/** How many findings of each severity. */
export function severityCounts(findings: readonly RuleFinding[]): Record<RuleFinding['severity'], number> {
  const counts = { error: 0, warning: 0, info: 0 };
  for (const f of findings) if (f.severity in counts) counts[f.severity]++;
  return counts;
}

/** The page of the endpoints table (`perPage` rows a page, unfiltered) that holds `index`. */
export function pageOfEndpoint(index: number, perPage: number): number {
  return Math.max(0, Math.floor(index / perPage));
}

/** A path split where a line may break: before each `/`, never inside a segment (`/pets/{petId}` → `/pets`, `/{petId}`). */
export function pathSegments(path: string): string[] {
  const parts = path.split(/(?=\/)/);
  return parts.length === 0 ? [path] : parts;
}
