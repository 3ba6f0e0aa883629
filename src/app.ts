import { limitConnectionsPerAddress, registerConnectionRules } from './http/connections.js';
import { BodyBudget, registerBodyAdmission } from './http/body-admission.js';
import { randomUUID } from 'node:crypto';
import Ajv, { type ValidateFunction } from 'ajv';
import { withoutKeySecrets } from './domain/auth/key-format.js';
import addFormats from 'ajv-formats';
import Fastify, { type FastifyInstance, type FastifyRequest, type FastifyServerOptions } from 'fastify';
import { accessHook, publishAccessRules } from './http/auth.js';
import {
  answerInRoutes,
  clientErrorHandler,
  documentFrameworkErrors,
  frameworkErrorHandler,
  registerErrorHandling,
  type ErrorHandlingDeps,
} from './http/errors.js';
import { refuseUnstorableText } from './http/text-guard.js';
import { registerMetrics } from './http/metrics.js';
import { apiDescriptionHistoryRoutes } from './http/routes/api-description-history.js';
import { apiDescriptionRoutes } from './http/routes/api-descriptions.js';
import { copilotSummaryRoutes } from './http/routes/copilot-summaries.js';
import { copilotRoutes } from './http/routes/copilots.js';
import { apiDocsRoutes } from './http/routes/api-docs.js';
import { DASHBOARD_ROOT, dashboardRoutes } from './http/routes/dashboard.js';
import { keyRoutes } from './http/routes/keys.js';
import { knowledgeBaseRoutes } from './http/routes/knowledge-base.js';
import { crawlRoutes } from './http/routes/crawls.js';
import { webhookRoutes } from './http/routes/webhooks.js';
import { systemRoutes } from './http/routes/system.js';
import { validatorExtrasRoutes } from './http/routes/validator-extras.js';
import { registerOpenApi } from './http/openapi.js';
import { COMPONENTS, refuseUndeclaredQueries } from './http/schemas.js';
import type { Services } from './services.js';

export interface AppOptions {
  /** Logger options for Fastify; tests pass false. */
  logger?: FastifyServerOptions['logger'];
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * A request as the logs tell it: its URL's query values left out (`?q=…&limit=…`), as a
 * search's words, a cursor or a secret a client put there are not the operator's to keep
 * (DESIGN §3); never its credentials.
 */
const LOGGED_REQUEST = {
  redact: { paths: ['req.headers.authorization', 'req.headers.cookie'], censor: '[redacted]' },
  serializers: {
    req: (req: FastifyRequest) => ({
      method: req.method,
      url: withoutQueryValues(req.url),
      host: req.host,
      remoteAddress: req.ip,
      remotePort: req.socket?.remotePort,
    }),
  },
};

/** `/path?a=1&b=2` → `/path?a=…&b=…`: the names a request used, not what it sent; a key in the path cut to its id. */
function withoutQueryValues(given: string): string {
  const url = withoutKeySecrets(given);
  const at = url.indexOf('?');
  if (at === -1) return url;
  const names = url
    .slice(at + 1)
    .split('&')
    .map((part) => `${part.split('=', 1)[0]}=…`);
  return `${url.slice(0, at)}?${names.join('&')}`;
}

function schemaValidators() {
  const options = { allErrors: false, strict: false, useDefaults: true } as const;
  // Bodies are JSON: no type coercion, unknown fields rejected by the schemas themselves.
  const body = addFormats.default(new Ajv.default({ ...options, coerceTypes: false, removeAdditional: false }));
  // Query strings and path parameters arrive as text: coerce "100" → 100, "true" → true.
  const text = addFormats.default(new Ajv.default({ ...options, coerceTypes: 'array', removeAdditional: false }));
  return { body, text };
}

const DECIMAL = { integer: /^-?(0|[1-9][0-9]*)$/, number: /^-?(0|[1-9][0-9]*)(\.[0-9]+)?$/ } as const;

/**
 * A number in a query string or a path is written in decimal. Ajv's coercion reads text as
 * `Number()` does, so that `1e3`, `0x10`, `01`, `1.0` and ` 5` were all numbers: one value
 * had many spellings, and a typo passed. Checked on the text before Ajv coerces it.
 */
function decimalNumbersOnly(schema: unknown, validate: ValidateFunction): ValidateFunction {
  const properties = schema !== null && typeof schema === 'object' && 'properties' in schema ? schema.properties : null;
  const numeric = Object.entries(properties !== null && typeof properties === 'object' ? properties : {}).flatMap(([name, property]: [string, unknown]) => {
    const type = property !== null && typeof property === 'object' && 'type' in property ? property.type : undefined;
    return type === 'integer' || type === 'number' ? [[name, DECIMAL[type]] as const] : [];
  });
  if (numeric.length === 0) return validate;
  const check = ((data: unknown) => {
    for (const [name, pattern] of numeric) {
      const value = data !== null && typeof data === 'object' ? (data as Record<string, unknown>)[name] : undefined;
      const spelt = (Array.isArray(value) ? value : [value]).find((item) => typeof item === 'string' && !pattern.test(item));
      if (spelt !== undefined) {
        check.errors = [
          {
            keyword: 'pattern',
            instancePath: `/${name}`,
            schemaPath: '#/properties',
            params: { pattern: pattern.source },
            message: 'must be a number in decimal digits',
          },
        ];
        return false;
      }
    }
    const valid = validate(data);
    check.errors = validate.errors;
    return valid;
  }) as ValidateFunction;
  return check;
}

/** Builds the application: every route registered here, explicitly; no listen. */
export async function buildApp(services: Services, options: AppOptions = {}): Promise<FastifyInstance> {
  const { config, storage } = services;
  // Set once the access hook exists; the framework's own refusals (built with Fastify) need it.
  let errorDeps: ErrorHandlingDeps | null = null;
  const app = Fastify({
    logger:
      typeof options.logger === 'object'
        ? { ...LOGGED_REQUEST, ...options.logger }
        : (options.logger ?? {
            ...LOGGED_REQUEST,
            level: config.logLevel,
            // A person at a terminal reads lines; anything else (a file, a collector) gets JSON.
            ...((config.logFormat === 'pretty' || (config.logFormat === 'auto' && process.stdout.isTTY)) && {
              transport: { target: 'pino-pretty', options: { translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' } },
            }),
          }),
    bodyLimit: config.bodyLimitBytes,
    // A client must send a whole request within this time (slow-body clients do not hold a
    // connection forever); checked at a quarter of it, so the bound holds within 25%. Node
    // reads these when the server is built (set later, they are not enforced): both places.
    requestTimeout: config.requestTimeoutMs,
    // A connection that neither sends nor takes a byte for half as long again is closed: a client
    // that never reads its answer held it (a 25 MB document) for ever. Longer than the request
    // timeout (checked within 25%), so a stalled request still gets its 408 first.
    connectionTimeout: Math.ceil(config.requestTimeoutMs * 1.5),
    http: {
      // A request without Host is answered by the connection rules (connections.ts), in the contract's body.
      requireHostHeader: false,
      requestTimeout: config.requestTimeoutMs,
      headersTimeout: Math.min(60_000, config.requestTimeoutMs),
      connectionsCheckingInterval: Math.min(30_000, Math.ceil(config.requestTimeoutMs / 4)),
    },
    clientErrorHandler,
    frameworkErrors: frameworkErrorHandler(() => errorDeps!),
    // Long path parameters reach the routes (and their 401/403/404) instead of the
    // router's own 414 outside the error contract.
    routerOptions: { maxParamLength: 2048 },
    genReqId: (req) => {
      const incoming = req.headers['x-request-id'];
      return typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
    },
    requestIdHeader: false,
    // request.ip (logs, audit) follows X-Forwarded-For only from the proxies TRUST_PROXY names.
    trustProxy: typeof config.trustProxy === 'boolean' ? config.trustProxy : [...config.trustProxy],
    // A request met while the service shuts down is answered by the connection rules (connections.ts), in the contract's body.
    return503OnClosing: false,
    ajv: { customOptions: { removeAdditional: false } },
  });

  const validators = schemaValidators();
  for (const schema of COMPONENTS) {
    validators.body.addSchema(schema);
    validators.text.addSchema(schema);
  }
  app.setValidatorCompiler(({ schema, httpPart }) =>
    httpPart === 'body' ? validators.body.compile(schema) : decimalNumbersOnly(schema, validators.text.compile(schema)),
  );

  registerConnectionRules(app);
  if (config.maxConnectionsPerAddress > 0 && config.trustProxy === false) limitConnectionsPerAddress(app.server, config.maxConnectionsPerAddress);

  documentFrameworkErrors(app);
  refuseUndeclaredQueries(app);
  publishAccessRules(app, config.allowAnonymousRead);
  await registerOpenApi(app);

  const access = accessHook(storage, config.allowAnonymousRead);
  errorDeps = { requireKey: access.requireKey };
  registerErrorHandling(app, errorDeps);
  answerInRoutes(app.server);
  const bodies = new BodyBudget(config.requestBodiesMaxBytes);
  const metrics = registerMetrics(app, services.metrics, bodies);
  registerBodyAdmission(app, bodies, config.bodyLimitBytes);
  app.addHook('preValidation', async (request) => refuseUnstorableText(request));
  const routeDeps = { storage, access, config };

  systemRoutes(app, { storage, metrics, metricsToken: config.metricsToken });
  copilotRoutes(app, routeDeps);
  copilotSummaryRoutes(app, routeDeps);
  const validation = { cache: services.validationCache, renderer: services.taskThreads, history: services.history };
  apiDescriptionRoutes(app, { ...routeDeps, fetchPolicy: services.fetchPolicy, validation });
  validatorExtrasRoutes(app, { ...routeDeps, fetchPolicy: services.fetchPolicy, validation });
  apiDescriptionHistoryRoutes(app, { ...routeDeps, sync: services.sync, cache: services.validationCache });
  webhookRoutes(app, routeDeps);
  keyRoutes(app, routeDeps);
  knowledgeBaseRoutes(app, { ...routeDeps, onLinksQueued: services.linksQueued, scorer: services.searchThread });
  crawlRoutes(app, { ...routeDeps, onCrawlQueued: services.crawlQueued });
  apiDocsRoutes(app);
  await dashboardRoutes(app, { root: DASHBOARD_ROOT });

  return app;
}
