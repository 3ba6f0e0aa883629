import { commonHeaders } from './connections.js';
import secureJson from 'secure-json-parse';
import { type IncomingMessage, type Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError, ERROR_STATUS, type ErrorCode } from '../errors.js';
import { loggedUrl } from '../domain/knowledgebase/links.js';
import { isDatabaseUnavailable, isDiskFull } from '../storage/unavailable.js';
import { errorResponses } from './schemas.js';
import { strictUtf8 } from './text-guard.js';
import { withoutKeySecrets } from '../domain/auth/key-format.js';

export { isDatabaseUnavailable };

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The document size limit of a route that takes an API description: what its 413 names. */
    documentLimit?: number;
  }
}

interface ErrorBody {
  error: string;
  message: string;
  details?: unknown;
}

const FIXED_500 = 'The server met an unexpected condition. The request id in the logs tells the operator more.';

/** Fastify's own errors (body parsing, limits, routing) mapped onto our closed list of codes. */
function fromFastifyError(err: FastifyError): AppError | null {
  switch (err.code) {
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
      const where =
        err.validationContext === 'body' ? 'request body' : err.validationContext === 'querystring' ? 'query string' : (err.validationContext ?? 'request');
      return new AppError('invalid_request', `The ${where} is invalid: ${first ? `${first.path} ${first.message}` : 'see details'}.`, details);
    }
  }
  if (err instanceof SyntaxError && err.statusCode === 400) return new AppError('invalid_json', 'The request body is not valid JSON.');
  if (err.statusCode === 413 || err.code === 'FST_REQ_FILE_TOO_LARGE' || err.code === 'FST_FILES_LIMIT' || err.code === 'FST_PARTS_LIMIT') {
    return new AppError('payload_too_large', 'The request body is larger than this service accepts.');
  }
  // The framework's other client errors, and those its plugins raise as http-errors (`expose`:
  // @fastify/static's, say): the closed code of their status, else invalid_request.
  const clientError = err.code?.startsWith('FST_') || (err as { expose?: unknown }).expose === true;
  if (clientError && typeof err.statusCode === 'number' && err.statusCode >= 400 && err.statusCode < 500) {
    const code = (Object.keys(ERROR_STATUS) as ErrorCode[]).find((c) => ERROR_STATUS[c] === err.statusCode) ?? 'invalid_request';
    return new AppError(code, 'The request could not be processed as sent.');
  }
  return null;
}

/**
 * A 413 of the framework's says the limit it met, in words and in `details.max_bytes`: the
 * route's body limit, or for a route that takes a document, the document limit
 * (`config.documentLimit`), the one its body parser applies.
 */
function withBodyLimit(error: AppError | null, request: FastifyRequest): AppError | null {
  if (error?.code !== 'payload_too_large' || error.details !== undefined) return error;
  return payloadTooLarge(request) ?? error;
}

/** The 413 of this request's route, with the limit it says (see withBodyLimit); null for a request no route took. */
export function payloadTooLarge(request: FastifyRequest): AppError | null {
  const limit = request.routeOptions?.config?.documentLimit ?? request.routeOptions?.bodyLimit;
  if (typeof limit !== 'number') return null;
  return new AppError('payload_too_large', `The request body is larger than this service accepts here (at most ${limit} bytes).`, { max_bytes: limit });
}

export function toErrorBody(err: AppError): ErrorBody {
  return err.details === undefined ? { error: err.code, message: err.message } : { error: err.code, message: err.message, details: err.details };
}

/** What the error handling needs from the rest of the app. */
export interface ErrorHandlingDeps {
  /** 401 unless the request carries a valid key (the access hook's `requireKey`). */
  requireKey(request: FastifyRequest): Promise<void>;
}

/** 5xx codes that describe what a client's request met outside the service, not a bug. */
const CLIENT_OUTCOMES = new Set<ErrorCode>(['swagger_fetch_failed', 'service_unavailable']);

/** Details as logged: a URL without its query string, as every copilot's link URLs are logged (the answer keeps it whole). */
function loggedDetails(details: unknown): unknown {
  if (details === null || typeof details !== 'object' || !('url' in details) || typeof details.url !== 'string') return details;
  return { ...details, url: loggedUrl(details.url) };
}

/**
 * The client closed its connection (or reset it) while its body was being read. Judged by
 * the request's own stream, so a database connection reset (also ECONNRESET) is not taken
 * for one.
 */
function clientAborted(err: unknown, request: FastifyRequest): boolean {
  return (request.raw.destroyed && !request.raw.complete) || (err as { message?: string }).message === 'aborted';
}

const isBackendPath = (path: string) => path === '/backend' || path.startsWith('/backend/');

/** Seconds a client should wait before trying again when the database cannot be reached. */
export const RETRY_AFTER_SECONDS = 5;

function send(reply: FastifyReply, error: AppError) {
  if (error.code === 'service_unavailable') reply.header('retry-after', String(RETRY_AFTER_SECONDS));
  // Every 401 names the scheme it wants (RFC 9110 §15.5.2, RFC 6750 §3): API keys and
  // METRICS_TOKEN alike are bearer tokens. No error= attribute: the body says what was wrong.
  if (error.status === 401) reply.header('www-authenticate', 'Bearer');
  return (
    reply
      .code(error.status)
      .type('application/json; charset=utf-8')
      // A key pasted where an id goes is not answered back whole (its id is).
      .send(withoutKeySecrets(JSON.stringify(toErrorBody(error))))
  );
}

/** Registered routes by method, to answer 405 with `Allow` for a known path. */
function routeTable(app: FastifyInstance) {
  const routes: Array<{ pattern: RegExp; methods: Set<string> }> = [];
  app.addHook('onRoute', (route) => {
    if (route.url.includes('*')) return; // the dashboard's wildcard serves every other GET
    const source = route.url
      .split('/')
      .map((part) => (part.startsWith(':') ? '[^/]+' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
      .join('/');
    const pattern = new RegExp(`^${source}$`);
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    const existing = routes.find((r) => r.pattern.source === pattern.source);
    if (existing) for (const m of methods) existing.methods.add(m);
    else routes.push({ pattern, methods: new Set(methods) });
  });
  return (path: string): string[] => {
    const allowed = new Set<string>();
    for (const route of routes) if (route.pattern.test(path)) for (const m of route.methods) allowed.add(m);
    return [...allowed].sort();
  };
}

/** Whether a route of these methods may be sent a body (any but GET, HEAD and OPTIONS). */
const takesBody = (method: string | string[]) => (Array.isArray(method) ? method : [method]).some((m) => !['GET', 'HEAD', 'OPTIONS'].includes(m.toUpperCase()));

/**
 * Lists in every /backend route's published responses the refusals that come from below the
 * route (the HTTP parser, the router, the database, the bound on bodies being received): 408,
 * 431 and 503 everywhere, 414 where the path has parameters, 429 where a body may be sent.
 * Registered before the OpenAPI plugin, so it sees them.
 */
export function documentFrameworkErrors(app: FastifyInstance): void {
  app.addHook('onRoute', (route) => {
    const response = route.schema?.response as Record<string, unknown> | undefined;
    if (!route.url.startsWith('/backend') || !response) return;
    const codes: ErrorCode[] = [
      'request_timeout',
      'headers_too_large',
      'service_unavailable',
      ...(route.url.includes(':') ? (['uri_too_long'] as const) : []),
      // A body over its sender's share of the bodies being received (body-admission.ts).
      ...(takesBody(route.method) ? (['quota_exceeded'] as const) : []),
    ];
    route.schema!.response = { ...errorResponses(...codes), ...response };
  });
}

export function registerErrorHandling(app: FastifyInstance, deps: ErrorHandlingDeps): void {
  // Fastify parses text/plain by default: a text body would reach the JSON routes as a
  // string and be answered 400 by the schema instead of 415. Bodies are JSON here; a
  // route that takes other types registers its own parsers in its own scope.
  app.removeContentTypeParser('text/plain');
  // Fastify's own JSON parser says "not valid JSON" of well-formed JSON whose keys would reach an
  // object's prototype; this one, with the same parser and rules, says which it was.
  app.removeContentTypeParser('application/json');
  // Read as bytes and decoded strictly: Node's decoding put U+FFFD for bytes that are not UTF-8
  // (Latin-1 text, an encoded surrogate), so that a copilot was stored with text it was not sent.
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, bytes, done) => {
    const charset = /;\s*charset\s*=\s*"?([^";\s]*)/i.exec(request.headers['content-type'] ?? '')?.[1];
    if (charset !== undefined && !/^utf-?8$/i.test(charset)) {
      return done(new AppError('unsupported_media_type', `JSON bodies are read as UTF-8 (RFC 8259), not as charset=${charset.slice(0, 40)}.`), undefined);
    }
    if (bytes.length === 0) return done(new AppError('invalid_json', 'The request body is empty; send a JSON object.'), undefined);
    const body = strictUtf8(bytes as Buffer);
    if (body === null) return done(new AppError('invalid_json', 'The request body is not valid UTF-8, which JSON is sent as.'), undefined);
    try {
      done(null, secureJson.parse(body, { protoAction: 'error', constructorAction: 'error' }));
    } catch (err) {
      const prototype = /forbidden prototype property/.test((err as Error).message);
      done(
        prototype
          ? new AppError(
              'invalid_request',
              'The request body has a "__proto__" key, or a "constructor" key holding "prototype"; this service does not take them.',
            )
          : new AppError('invalid_json', 'The request body is not valid JSON.'),
        undefined,
      );
    }
  });
  const allowedMethods = routeTable(app);

  /** No route for this method and path: 401 first on /backend, then 405 with Allow for a known path, else 404. */
  async function noRoute(request: FastifyRequest, reply: FastifyReply) {
    const path = request.url.split('?')[0]!;
    try {
      if (isBackendPath(path)) await deps.requireKey(request);
    } catch (err) {
      return send(reply, err instanceof AppError ? err : unavailableOr500(err, request));
    }
    const allowed = allowedMethods(path);
    if (allowed.length > 0) {
      reply.header('allow', allowed.join(', '));
      return send(reply, new AppError('method_not_allowed', `${request.method} is not allowed here; use ${allowed.join(', ')}.`, { allow: allowed }));
    }
    return send(reply, new AppError('not_found', `No route ${request.method} ${path.slice(0, 200)}.`));
  }

  function unavailableOr500(err: unknown, request: FastifyRequest): AppError {
    if (isDiskFull(err)) {
      request.log.error({ err }, "the database has no space left to write: free space on the database's disk");
      return new AppError('service_unavailable', 'The database has no space left to write; try again once its operator has freed space.');
    }
    if (isDatabaseUnavailable(err)) {
      request.log.warn({ err }, 'the database cannot be reached or is busy');
      return new AppError('service_unavailable', 'The database cannot be reached or is busy right now; try again shortly.');
    }
    request.log.error({ err }, 'unhandled error');
    return new AppError('internal_error', FIXED_500);
  }

  app.setErrorHandler((err: FastifyError, request, reply) => {
    // An unknown route is 404 (or 405) whatever its body: a body it could not parse included.
    if (request.is404) return noRoute(request, reply);
    if (clientAborted(err, request)) {
      // Nobody is left to answer; not a failure of the service.
      request.log.info({ reason: (err as Error).message }, 'the client aborted its request');
      return send(reply, new AppError('invalid_request', 'The request body ended before it was complete.'));
    }
    const appError = err instanceof AppError ? err : withBodyLimit(fromFastifyError(err), request);
    if (appError) {
      // Outcomes the client or its URL caused (a bad swagger_url, a busy queue) are warnings
      // without a stack; only the service's own failures are errors.
      if (CLIENT_OUTCOMES.has(appError.code)) request.log.warn({ code: appError.code, details: loggedDetails(appError.details) }, appError.message);
      else if (appError.status >= 500) request.log.error({ err }, appError.message);
      return send(reply, appError);
    }
    return send(reply, unavailableOr500(err, request));
  });

  app.setNotFoundHandler(noRoute);
}

/**
 * Fastify's `frameworkErrors`: a URL whose escapes cannot be decoded, or a path parameter
 * over the router's length limit, answered in the contract's shape — on /backend after the
 * key check, so a request without a valid key is told 401 first.
 */
export function frameworkErrorHandler(deps: () => ErrorHandlingDeps) {
  return (err: FastifyError, request: FastifyRequest, reply: FastifyReply): void => {
    const error =
      err.code === 'FST_ERR_MAX_PARAM_LENGTH'
        ? new AppError('uri_too_long', 'A path segment of this URL is longer than this service accepts.')
        : new AppError('invalid_request', 'The URL is not valid: a percent-escape in its path cannot be decoded.');
    // As the parser's refusals (DESIGN §8): the connection is closed after the answer.
    commonHeaders(request, reply);
    reply.header('connection', 'close');
    const path = request.url.split('?')[0]!;
    const checked = isBackendPath(path) ? deps().requireKey(request) : Promise.resolve();
    checked.then(
      () => send(reply, error),
      (keyError: unknown) => send(reply, keyError instanceof AppError ? keyError : new AppError('internal_error', FIXED_500)),
    );
  };
}

const REASONS: Record<number, string> = { 400: 'Bad Request', 408: 'Request Timeout', 431: 'Request Header Fields Too Large' };

/**
 * What the HTTP parser refuses before any route runs (Fastify's `clientErrorHandler`): a
 * request that took longer than REQUEST_TIMEOUT_MS, headers too large, or bytes that are
 * not HTTP. Answered in the contract's shape with `Connection: close`, then the socket ends.
 */
export function clientErrorHandler(err: NodeJS.ErrnoException, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const error =
    err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? new AppError('request_timeout', 'The request was not received completely in time; send it again, faster.')
      : err.code === 'HPE_HEADER_OVERFLOW'
        ? new AppError('headers_too_large', 'The request headers are larger than this service accepts.')
        : new AppError('invalid_request', 'The request is not well-formed HTTP.');
  if (socket.writable) {
    const body = JSON.stringify(toErrorBody(error));
    socket.end(
      `HTTP/1.1 ${error.status} ${REASONS[error.status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  } else {
    socket.destroy();
  }
}

/**
 * Two requests Node answers itself, before any route runs, unless the server is told
 * otherwise; both are handed to the routes instead, which answer them in the contract's shape:
 * an `Expect` other than `100-continue` (Node: 417 with no body; RFC 9110 lets a server ignore
 * an expectation it does not know), and `CONNECT` (Node: the connection closed unanswered),
 * which no route takes, so the router answers it as any method a path does not take (405 with
 * `Allow`, or 404), then the connection closes.
 */
export function answerInRoutes(server: Server): void {
  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => server.emit('request', req, res));
  // `Expect: 100-continue`: the body is asked for once the request may send it (its key checked,
  // its size admitted: body-admission.ts), not before, so that a refused client never sends it.
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => server.emit('request', req, res));
  server.on('connect', (req: IncomingMessage, socket: Socket) => {
    const res = new ServerResponse(req);
    res.shouldKeepAlive = false;
    res.assignSocket(socket);
    res.on('finish', () => {
      res.detachSocket(socket);
      socket.end();
    });
    server.emit('request', req, res);
  });
}
