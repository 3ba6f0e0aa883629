/**
 * The validator's answer (GET /backend/api/copilot/:id/validator): the server's own wire
 * types (a type-only import: nothing of the server goes into the bundle). The helpers below
 * still read it defensively, as data from the network.
 */
import type { Endpoint, FlagMap, Validations } from '../../../src/domain/validator/wire-types.js';

export type { Endpoint, FlagMap };

export interface ValidatorResult {
  chatbot_id: string;
  all_endpoints: Endpoint[];
  validations: Validations;
}

export type FlagKind = 'no_operation_id' | 'no_description' | 'no_name' | 'duplicate_operation_id' | 'invalid_operation_id';

/** Each finding: the validations key it comes from, and how the dashboard names it. */
export const FLAG_KINDS: ReadonlyArray<{ kind: FlagKind; key: keyof ValidatorResult['validations']; label: string; why: string }> = [
  {
    kind: 'no_operation_id',
    key: 'endpoints_without_operation_id',
    label: 'Without operationId',
    why: 'No operationId: an LLM calls each endpoint as a tool named by its operationId.',
  },
  {
    kind: 'no_description',
    key: 'endpoints_without_description',
    label: 'Without description',
    why: 'No description: the LLM cannot tell when this endpoint is the right one to call.',
  },
  { kind: 'no_name', key: 'endpoints_without_name', label: 'Without name', why: 'No summary (name): the endpoint has no short human-readable name.' },
  {
    kind: 'duplicate_operation_id',
    key: 'endpoints_with_duplicate_operation_id',
    label: 'Duplicate operationId',
    why: 'Duplicate operationId: another endpoint uses the same one, so tool names clash.',
  },
  {
    kind: 'invalid_operation_id',
    key: 'endpoints_with_invalid_operation_id',
    label: 'Invalid operationId',
    why: 'Invalid operationId: not usable as a tool name (only A–Z, a–z, 0–9, _ and -, at most 64 characters).',
  },
];

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
