import { isBlank, type EndpointFinding } from './finding.js';

/** Interface §2.4: an LLM calls an operation by its operationId; without one it has no name to call. */
export const withoutOperationId: EndpointFinding = {
  kind: 'endpoint',
  key: 'endpoints_without_operation_id',
  flag(endpoints) {
    const out: number[] = [];
    for (let i = 0; i < endpoints.length; i++) if (isBlank(endpoints[i]!.operationId)) out.push(i);
    return out;
  },
};
