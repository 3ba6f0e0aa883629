/**
 * The validator's answer (GET /backend/api/copilot/:id/validator): the server's own wire
 * types (a type-only import: nothing of the server goes into the bundle) and its finding
 * texts (plain data, bundled). The helpers below still read the answer defensively, as data
 * from the network.
 */
import type { CopilotValidationResult, Endpoint, FlagMap } from '../../../src/domain/validator/wire-types.js';
import { ENDPOINT_FINDING_TEXTS } from '../../../src/domain/validator/findings/catalog.js';

export type { Endpoint, FlagMap };

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
  /** Lower-case path, name and operationId, for the text filter. */
  haystack: string;
}

export interface Report {
  rows: ReportRow[];
  counts: Record<FlagKind, number>;
  flagged: number;
  authType: string;
  baseUrl: string | null;
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
  const rows = endpoints.map((endpoint, index) => ({
    index,
    endpoint,
    flags: flags[index]!,
    haystack: `${endpoint.path ?? ''}\n${endpoint.name ?? ''}\n${endpoint.operationId ?? ''}\n${endpoint.type ?? ''}`.toLowerCase(),
  }));
  const baseUrl = result.validations?.base_url;
  return {
    rows,
    counts,
    flagged: rows.filter((r) => r.flags.length > 0).length,
    authType: typeof result.validations?.auth_type === 'string' ? result.validations.auth_type : 'unknown',
    baseUrl: typeof baseUrl === 'string' && baseUrl !== '' ? baseUrl : null,
  };
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
      (!filter.onlyFlagged || row.flags.length > 0) &&
      (filter.kind === null || row.flags.includes(filter.kind)) &&
      words.every((w) => row.haystack.includes(w)),
  );
}
