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
  version_not_found: 404,
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

// An AppError is known by this brand rather than by its class: the command line's bundle has
// its own copy of this module (rolldown.config.mjs), and an error thrown by a module outside
// the bundle (the service's, which commands such as `keys revoke` load) must still be one.
const BRAND = Symbol.for('copilot-management-service.AppError');

export class AppError extends Error {
  readonly code: ErrorCode;
  readonly details?: unknown;

  constructor(code: ErrorCode, message: string, details?: unknown) {
    super(message);
    this.name = 'AppError';
    this.code = code;
    this.details = details;
    Object.defineProperty(this, BRAND, { value: true });
  }

  get status(): number {
    return ERROR_STATUS[this.code];
  }
}

/** Whether `err` is an AppError, made by this copy of the module or another (see BRAND). */
export function isAppError(err: unknown): err is AppError {
  return typeof err === 'object' && err !== null && (err as { [BRAND]?: unknown })[BRAND] === true;
}
