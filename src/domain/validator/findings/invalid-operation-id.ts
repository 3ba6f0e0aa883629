import { isBlank, type EndpointFinding } from './finding.js';

/** What LLM tool/function names accept (OpenAI, Anthropic, Gemini): 1–64 letters, digits, `_` or `-`. */
export const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * Additive (DESIGN §5): an operationId that is present but cannot be used as a tool name
 * as written. Blank operationIds are reported as missing instead.
 */
export const invalidOperationId: EndpointFinding = {
  kind: 'endpoint',
  key: 'endpoints_with_invalid_operation_id',
  flag(endpoints) {
    const out: number[] = [];
    for (let i = 0; i < endpoints.length; i++) {
      const id = endpoints[i]!.operationId;
      if (!isBlank(id) && !TOOL_NAME.test(id!)) out.push(i);
    }
    return out;
  },
};
