import { isBlank, type EndpointFinding } from './finding.js';

/**
 * Additive (DESIGN §5): every endpoint whose operationId, exactly as written, is also
 * another endpoint's. An LLM tool list cannot hold two tools of one name. Blank
 * operationIds are reported as missing instead.
 */
export const duplicateOperationId: EndpointFinding = {
  kind: 'endpoint',
  key: 'endpoints_with_duplicate_operation_id',
  flag(endpoints) {
    const first = new Map<string, number>();
    const out: number[] = [];
    let repeated = false;
    for (let i = 0; i < endpoints.length; i++) {
      const id = endpoints[i]!.operationId;
      if (isBlank(id)) continue;
      if (first.has(id!)) repeated = true;
      else first.set(id!, i);
    }
    if (!repeated) return out;
    const seen = new Map<string, number>();
    for (const e of endpoints) if (!isBlank(e.operationId)) seen.set(e.operationId!, (seen.get(e.operationId!) ?? 0) + 1);
    for (let i = 0; i < endpoints.length; i++) {
      const id = endpoints[i]!.operationId;
      if (!isBlank(id) && seen.get(id!)! > 1) out.push(i);
    }
    return out;
  },
};
