import type { EndpointSource } from '../endpoints.js';
import { readiness, runRules } from '../rules/index.js';
import type { ApiDocument, Endpoint, FlagMap, Validations } from '../types.js';
import { authType } from './auth-type.js';
import { baseUrl } from './base-url.js';
import type { EndpointFinding, Finding } from './finding.js';
import { withoutDescription } from './without-description.js';
import { withoutName } from './without-name.js';
import { withoutOperationId } from './without-operation-id.js';

export type { DocumentFinding, DocumentFindingKey, EndpointFinding, EndpointFindingKey, Finding } from './finding.js';
export { ENDPOINT_FINDING_TEXTS, type EndpointFindingText } from './catalog.js';
export { isBlank } from './finding.js';

/**
 * Every finding with a key of its own, in the order its key appears in `validations`: the
 * interface's four first (interface §2.4), then `base_url`. `readiness` and `findings` (the
 * rules, ../rules/) follow them.
 */
export const FINDINGS: readonly Finding[] = [withoutOperationId, withoutDescription, withoutName, authType, baseUrl];

export const ENDPOINT_FINDINGS: readonly EndpointFinding[] = FINDINGS.filter((f): f is EndpointFinding => f.kind === 'endpoint');

/**
 * `validations` for a document and its endpoints (`sources`: where each endpoint is written,
 * from `extractEndpoints`). Findings are values; nothing here throws.
 */
export function runFindings(doc: ApiDocument, endpoints: readonly Endpoint[], sources: readonly EndpointSource[]): Validations {
  const validations: Record<string, unknown> = {};
  for (const finding of FINDINGS) {
    if (finding.kind === 'endpoint') {
      validations[finding.key] = flagMap(endpoints, finding.flag(endpoints, doc));
    } else {
      validations[finding.key] = finding.compute(doc);
    }
  }
  const findings = runRules(doc, endpoints, sources);
  validations.readiness = readiness(findings, endpoints.length);
  validations.findings = findings;
  return validations as unknown as Validations;
}

function flagMap(endpoints: readonly Endpoint[], indexes: readonly number[]): FlagMap {
  if (indexes.length === 0) return [];
  const map: Record<string, Endpoint> = {};
  for (const i of indexes) map[i] = endpoints[i]!;
  return map;
}
