import { ENDPOINT_FINDINGS, type EndpointFindingKey } from './findings/index.js';
import type { ValidationResult } from './types.js';

export interface ValidationSummary {
  endpoints: number;
  /** Endpoints with at least one finding (a flag map or a rule). */
  flagged_endpoints: number;
  /** Number of endpoints in each flag map, under the map's key. */
  findings: Record<EndpointFindingKey, number>;
  /** Number of rule findings by rule id (only the rules that found something), in the order they come. */
  rules: Record<string, number>;
  /** Rule findings by severity. */
  errors: number;
  warnings: number;
  score: number;
  auth_type: string;
  base_url: string | null;
  /**
   * True when a copilot team has something to fix: a flag map is not empty (the interface's
   * checks), or a rule found an error-severity finding (it blocks some platform; a document
   * that names no server is one, `server-missing`). Warnings and info alone are not.
   */
  has_findings: boolean;
}

export function validationSummary(result: ValidationResult): ValidationSummary {
  const findings = {} as Record<EndpointFindingKey, number>;
  const flagged = new Set<number>();
  let any = false;
  for (const finding of ENDPOINT_FINDINGS) {
    const map = result.validations[finding.key];
    const keys = Array.isArray(map) ? [] : Object.keys(map);
    findings[finding.key] = keys.length;
    for (const k of keys) flagged.add(Number(k));
    if (keys.length > 0) any = true;
  }
  const rules: Record<string, number> = {};
  let errors = 0;
  let warnings = 0;
  for (const f of result.validations.findings) {
    rules[f.rule] = (rules[f.rule] ?? 0) + 1;
    if (f.severity === 'error') errors++;
    else if (f.severity === 'warning') warnings++;
    if (f.endpoint !== null) flagged.add(f.endpoint);
  }
  return {
    endpoints: result.all_endpoints.length,
    flagged_endpoints: flagged.size,
    findings,
    rules,
    errors,
    warnings,
    score: result.validations.readiness.score,
    auth_type: result.validations.auth_type,
    base_url: result.validations.base_url,
    has_findings: any || errors > 0,
  };
}

/** `validationSummary(result).has_findings`, without counting. */
export function hasFindings(result: ValidationResult): boolean {
  for (const finding of ENDPOINT_FINDINGS) {
    const map = result.validations[finding.key];
    if (!Array.isArray(map) && Object.keys(map).length > 0) return true;
  }
  return result.validations.findings.some((f) => f.severity === 'error');
}
