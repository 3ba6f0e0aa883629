import type { ApiDocument, Endpoint, FlagMap, Validations } from '../types.js';
import { authType } from './auth-type.js';
import { baseUrl } from './base-url.js';
import { duplicateOperationId } from './duplicate-operation-id.js';
import type { EndpointFinding, Finding } from './finding.js';
import { invalidOperationId } from './invalid-operation-id.js';
import { withoutDescription } from './without-description.js';
import { withoutName } from './without-name.js';
import { withoutOperationId } from './without-operation-id.js';

export type { DocumentFinding, DocumentFindingKey, EndpointFinding, EndpointFindingKey, Finding } from './finding.js';
export { ENDPOINT_FINDING_TEXTS, type EndpointFindingText } from './catalog.js';
export { isBlank } from './finding.js';
export { TOOL_NAME } from './invalid-operation-id.js';

/**
 * Every finding, in the order its key appears in `validations`: the interface's four
 * first (interface §2.4), then the additive ones (DESIGN §5).
 */
export const FINDINGS: readonly Finding[] = [withoutOperationId, withoutDescription, withoutName, authType, duplicateOperationId, invalidOperationId, baseUrl];

export const ENDPOINT_FINDINGS: readonly EndpointFinding[] = FINDINGS.filter((f): f is EndpointFinding => f.kind === 'endpoint');

/** `validations` for a document and its endpoints. Findings are values; nothing here throws. */
export function runFindings(doc: ApiDocument, endpoints: readonly Endpoint[]): Validations {
  const validations: Record<string, unknown> = {};
  for (const finding of FINDINGS) {
    if (finding.kind === 'endpoint') {
      validations[finding.key] = flagMap(endpoints, finding.flag(endpoints, doc));
    } else {
      validations[finding.key] = finding.compute(doc);
    }
  }
  return validations as unknown as Validations;
}

function flagMap(endpoints: readonly Endpoint[], indexes: readonly number[]): FlagMap {
  if (indexes.length === 0) return [];
  const map: Record<string, Endpoint> = {};
  for (const i of indexes) map[i] = endpoints[i]!;
  return map;
}
