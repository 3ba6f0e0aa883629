/**
 * What the routes put in their schemas besides the wire shapes (src/domain/wire.ts,
 * src/domain/validator/wire-types.ts): path and query parameters, the answers' headers and
 * each route's error answers. The OpenAPI document is generated from these schemas.
 */
import { Type, type Static, type TSchema, type TUnsafe } from 'typebox';
import type { FastifyInstance } from 'fastify';
import * as wire from '../domain/wire.js';
import * as crawlWire from '../domain/crawl-wire.js';
import { ref } from '../domain/wire.js';
import * as validatorWire from '../domain/validator/wire-types.js';
import { ERROR_STATUS, type ErrorCode } from '../errors.js';

/** Every named schema: registered with the validators and the serialisers, and published as the document's components. */
export const COMPONENTS: readonly TSchema[] = [
  wire.ErrorBody,
  wire.Copilot,
  wire.CopilotCreate,
  wire.CopilotPatch,
  wire.PurgeResult,
  wire.ApiKey,
  wire.ApiKeyCreate,
  wire.ApiKeyCreated,
  wire.ApiKeyIdentity,
  validatorWire.Endpoint,
  validatorWire.FlagMap,
  validatorWire.RuleFinding,
  validatorWire.Readiness,
  validatorWire.Validations,
  validatorWire.CopilotValidationResult,
  validatorWire.ToolDefinition,
  validatorWire.CopilotTools,
  validatorWire.OverlayAction,
  validatorWire.Overlay,
  wire.KnowledgeBaseLink,
  wire.KnowledgeBaseLinks,
  wire.LinksRequest,
  wire.LinksDeleted,
  wire.LinksRefreshed,
  wire.SearchResult,
  wire.SearchResults,
  crawlWire.CrawlRequest,
  crawlWire.Crawl,
  crawlWire.Crawls,
  wire.AuditEntry,
  wire.ChangeCounts,
  wire.ApiDescriptionVersion,
  wire.ApiDescriptionChange,
  wire.ApiDescriptionSync,
  wire.WebhookDelivery,
];

export { ref };

// ——— Answers

type Headers = Record<string, TSchema>;

/** One JSON answer: its description, its schema and the headers it carries. */
export function jsonAnswer<T extends TSchema>(description: string, schema: T, headers?: Headers) {
  return { description, ...(headers && { headers }), content: { 'application/json': { schema } } };
}

/** `Link: <…>; rel="next"` when more remain (DESIGN §4). */
export const LINK_HEADER: Headers = {
  link: Type.String({ description: 'Present when more remain: `<URL of the next page>; rel="next"`; the body stays a plain array or object' }),
};

/** The `Link` header of a list's next page (`path` with these parameters and the cursor), or null on the last page. */
export function nextLink(path: string, limit: number, cursor: string | null, extra: Record<string, string> = {}): string | null {
  if (!cursor) return null;
  const query = new URLSearchParams({ ...extra, limit: String(limit), cursor });
  return `<${path}?${query.toString()}>; rel="next"`;
}

/** The errors of a route that reads a copilot's API description (GET …/validator, …/tools, …/fixes). */
export const DOCUMENT_ERRORS = [
  'unauthorized',
  'forbidden',
  'copilot_not_found',
  'swagger_missing',
  'invalid_swagger_file',
  'address_not_allowed',
  'swagger_fetch_failed',
  'quota_exceeded',
  'service_unavailable',
] as const satisfies readonly ErrorCode[];

/** Where the created resource is. */
export const LOCATION_HEADER: Headers = { location: Type.String({ description: 'The path of the created copilot' }) };

type ErrorAnswer = { description: string; content: { 'application/json': { schema: TUnsafe<wire.ErrorBody> } } };

/**
 * The error answers a route may give, by status, each listing its codes; `invalid_request`
 * and `internal_error` are added to every route. (The framework's own refusals are added to
 * every /backend route by documentFrameworkErrors, src/http/errors.ts.)
 */
export function errorResponses(...codes: ErrorCode[]): Record<number, ErrorAnswer> {
  const all: ErrorCode[] = [...new Set<ErrorCode>([...codes, 'invalid_request', 'internal_error'])];
  const out: Record<number, ErrorAnswer> = {};
  for (const code of all) {
    const status = ERROR_STATUS[code];
    const listed = all.filter((c) => ERROR_STATUS[c] === status);
    out[status] = jsonAnswer(`Error: ${listed.join(', ')}`, ref(wire.ErrorBody));
  }
  return out;
}

// ——— Parameters

export const CopilotIdParams = Type.Object({ id: Type.String({ description: 'The copilot id (a UUID)' }) });
export const BotParams = Type.Object({ bot_id: Type.String({ description: 'The bot (copilot) id' }) });
export const KeyIdParams = Type.Object({ id: Type.String({ description: 'The key id' }) });

// `limit` is required in these schemas so that the handler's type has it: Ajv fills in the
// default when it is left out (useDefaults), and the published document marks a parameter
// with a default as optional (src/http/openapi.ts).
const limit = (max: number, fallback: number) => Type.Integer({ minimum: 1, maximum: max, default: fallback });
const cursor = (maxLength: number) => Type.Optional(Type.String({ maxLength, description: 'The `cursor` of the `Link` header of the previous page' }));

export const ListCopilotsQuery = Type.Object(
  {
    limit: limit(1000, 100),
    cursor: cursor(400),
    status: Type.Optional(wire.oneOf(wire.COPILOT_STATUSES)),
    q: Type.Optional(Type.String({ maxLength: 200, description: 'Name contains (case and accents ignored)' })),
    include_deleted: Type.Optional(Type.Boolean({ description: 'Also the soft-deleted copilots; for a key with copilots:read only (never an open read)' })),
  },
  { additionalProperties: false },
);
export type ListCopilotsQuery = Static<typeof ListCopilotsQuery>;

export const PageQuery = Type.Object({ limit: limit(1000, 100), cursor: cursor(400) }, { additionalProperties: false });

export const SearchQuery = Type.Object({ q: Type.String({ maxLength: 1000 }), limit: limit(100, 10) }, { additionalProperties: false });

export const AuditQuery = Type.Object(
  {
    limit: limit(1000, 100),
    cursor: cursor(20),
    bot_id: Type.Optional(Type.String({ maxLength: 100 })),
    action: Type.Optional(wire.oneOf(wire.AUDIT_ACTIONS)),
    since: Type.Optional(Type.String({ maxLength: 40, description: 'ISO 8601 date-time, inclusive' })),
    until: Type.Optional(Type.String({ maxLength: 40, description: 'ISO 8601 date-time, exclusive' })),
  },
  { additionalProperties: false },
);

/**
 * A /backend route that declares no query parameters takes none: an unknown one is 400 naming
 * it, as on the routes that declare theirs (`additionalProperties: false`). It was ignored, so
 * `/keys?limit=1` was answered as if it were not sent. Registered before the routes.
 */
export function refuseUndeclaredQueries(app: FastifyInstance): void {
  app.addHook('onRoute', (route) => {
    if (!route.url.startsWith('/backend') || route.schema?.querystring !== undefined) return;
    route.schema = { ...route.schema, querystring: Type.Object({}, { additionalProperties: false }) };
  });
}
