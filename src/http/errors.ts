import type { FastifyError, FastifyInstance } from 'fastify';
import { AppError, ERROR_STATUS, type ErrorCode } from '../errors.js';

interface ErrorBody {
  error: string;
  message: string;
  details?: unknown;
}

const FIXED_500 = 'The server met an unexpected condition. The request id in the logs tells the operator more.';

/** Fastify's own errors (body parsing, limits, routing) mapped onto our closed list of codes. */
function fromFastifyError(err: FastifyError): AppError | null {
  switch (err.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new AppError('invalid_json', 'The request body is not valid JSON.');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new AppError('invalid_json', 'The request body is empty; send a JSON object.');
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new AppError('payload_too_large', 'The request body is larger than this service accepts.');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new AppError('unsupported_media_type', 'This content type is not accepted here; see the route in /backend/openapi.json for the ones it takes.');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new AppError('invalid_request', 'The Content-Length header does not match the body.');
    case 'FST_ERR_CTP_INVALID_TYPE':
    case 'FST_ERR_CTP_INVALID_HANDLER':
      return new AppError('invalid_request', 'The request body could not be read.');
    case 'FST_ERR_VALIDATION': {
      const details = (err.validation ?? []).map((v) => ({
        location: err.validationContext,
        path: v.instancePath || '/',
        message: v.message ?? 'is invalid',
        ...(v.params && Object.keys(v.params).length > 0 && { params: v.params }),
      }));
      const first = details[0];
      const where = err.validationContext === 'body' ? 'request body' : err.validationContext === 'querystring' ? 'query string' : (err.validationContext ?? 'request');
      return new AppError('invalid_request', `The ${where} is invalid: ${first ? `${first.path} ${first.message}` : 'see details'}.`, details);
    }
  }
  if (err instanceof SyntaxError && err.statusCode === 400) return new AppError('invalid_json', 'The request body is not valid JSON.');
  if (err.statusCode === 413 || err.code === 'FST_REQ_FILE_TOO_LARGE' || err.code === 'FST_FILES_LIMIT' || err.code === 'FST_PARTS_LIMIT') {
    return new AppError('payload_too_large', 'The request body is larger than this service accepts.');
  }
  if (err.code?.startsWith('FST_') && typeof err.statusCode === 'number' && err.statusCode >= 400 && err.statusCode < 500) {
    const code = (Object.keys(ERROR_STATUS) as ErrorCode[]).find((c) => ERROR_STATUS[c] === err.statusCode) ?? 'invalid_request';
    return new AppError(code, 'The request could not be processed as sent.');
  }
  return null;
}

export function toErrorBody(err: AppError): ErrorBody {
  return err.details === undefined ? { error: err.code, message: err.message } : { error: err.code, message: err.message, details: err.details };
}

export function registerErrorHandling(app: FastifyInstance): void {
  // Fastify parses text/plain by default: a text body would reach the JSON routes as a
  // string and be answered 400 by the schema instead of 415. Bodies are JSON here; a
  // route that takes other types registers its own parsers in its own scope.
  app.removeContentTypeParser('text/plain');

  app.setErrorHandler((err: FastifyError, request, reply) => {
    const appError = err instanceof AppError ? err : fromFastifyError(err);
    if (appError) {
      if (appError.status >= 500) request.log.error({ err }, appError.message);
      return reply.code(appError.status).type('application/json; charset=utf-8').send(JSON.stringify(toErrorBody(appError)));
    }
    request.log.error({ err }, 'unhandled error');
    return reply
      .code(500)
      .type('application/json; charset=utf-8')
      .send(JSON.stringify({ error: 'internal_error', message: FIXED_500 }));
  });

  app.setNotFoundHandler((request, reply) => {
    return reply
      .code(404)
      .type('application/json; charset=utf-8')
      .send(JSON.stringify({ error: 'not_found', message: `No route ${request.method} ${request.url.split('?')[0]!.slice(0, 200)}.` }));
  });
}
