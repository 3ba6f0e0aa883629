/**
 * The validator's answer as it goes over the wire (interface §2.3, §2.4): plain types with
 * nothing of Node in them, so the dashboard (web/) reads the same ones.
 */

/** One (path, HTTP method) of the document. Keys are in the order of DESIGN §5. */
export interface Endpoint {
  operationId: string | null;
  type: string;
  name: string;
  description: string;
  requestBody: unknown;
  requestParameters: unknown[] | null;
  responseBody: Record<string, unknown>;
  path: string;
}

/** Index in `all_endpoints` (as a string) → the identical endpoint object; `[]` when empty. */
export type FlagMap = Record<string, Endpoint> | [];

export interface Validations {
  endpoints_without_operation_id: FlagMap;
  endpoints_without_description: FlagMap;
  endpoints_without_name: FlagMap;
  auth_type: string;
  endpoints_with_duplicate_operation_id: FlagMap;
  endpoints_with_invalid_operation_id: FlagMap;
  base_url: string | null;
}

export interface ValidationResult {
  all_endpoints: Endpoint[];
  validations: Validations;
}
