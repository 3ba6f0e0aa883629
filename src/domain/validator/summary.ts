import { ENDPOINT_FINDINGS, type EndpointFindingKey } from './findings/index.js';
import type { ValidationResult } from './types.js';

export interface ValidationSummary {
  endpoints: number;
  /** Endpoints with at least one finding. */
  flagged_endpoints: number;
  /** Number of endpoints in each flag map, under the map's key. */
  findings: Record<EndpointFindingKey, number>;
  auth_type: string;
  base_url: string | null;
  /**
   * True when a copilot team has something to fix: a flag map is not empty, or the
   * document names no server (`base_url` null), without which a copilot cannot call it.
   */
  has_findings: boolean;
}

export function validationSummary(result: ValidationResult): ValidationSummary {
  const findings = {} as Record<EndpointFindingKey, number>;
  const flagged = new Set<string>();
  let any = false;
  for (const finding of ENDPOINT_FINDINGS) {
    const map = result.validations[finding.key];
    const keys = Array.isArray(map) ? [] : Object.keys(map);
    findings[finding.key] = keys.length;
    for (const k of keys) flagged.add(k);
    if (keys.length > 0) any = true;
  }
  return {
    endpoints: result.all_endpoints.length,
    flagged_endpoints: flagged.size,
    findings,
    auth_type: result.validations.auth_type,
    base_url: result.validations.base_url,
    has_findings: any || result.validations.base_url === null,
  };
}

/** `validationSummary(result).has_findings`, without counting. */
export function hasFindings(result: ValidationResult): boolean {
  if (result.validations.base_url === null) return true;
  for (const finding of ENDPOINT_FINDINGS) {
    const map = result.validations[finding.key];
    if (!Array.isArray(map) && Object.keys(map).length > 0) return true;
  }
  return false;
}
