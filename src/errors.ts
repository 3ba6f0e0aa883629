/**
 * The closed list of error codes the service answers with, and their HTTP status.
 * Domain code throws `AppError(code, message, details?)`; the HTTP error handler
 * turns it into the contract's body `{"error", "message", "details?"}` (DESIGN §8).
 */
export const ERROR_STATUS = {
  invalid_request: 400,
  invalid_json: 400,
  invalid_cursor: 400,
  invalid_swagger_file: 400,
  address_not_allowed: 400,
  unsupported_media_type: 415,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  copilot_not_found: 404,
  key_not_found: 404,
  knowledge_base_not_found: 404,
  crawl_not_found: 404,
  method_not_allowed: 405,
  request_timeout: 408,
  conflict: 409,
  payload_too_large: 413,
  uri_too_long: 414,
  headers_too_large: 431,
  swagger_missing: 422,
  quota_exceeded: 429,
  internal_error: 500,
  swagger_fetch_failed: 502,
  service_unavailable: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export class AppError extends Error {
  readonly code: ErrorCode;
  readonly details?: unknown;

  constructor(code: ErrorCode, message: string, details?: unknown) {
    super(message);
    this.name = 'AppError';
    this.code = code;
    this.details = details;
  }

  get status(): number {
    return ERROR_STATUS[this.code];
  }
}

export function isAppError(err: unknown): err is AppError {
  return err instanceof AppError;
}
