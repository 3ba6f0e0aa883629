/**
 * The service's wire shapes (interface §2; DESIGN §3–§8), each written once, as a TypeBox
 * schema. The routes validate and serialise with them, the OpenAPI document names them as
 * components (by `$id`), the domain's return types are their `Static<>`, and the dashboard
 * and the tests import the same types. The validator's shapes are in validator/wire-types.ts.
 * Nothing of Node here: web/ type-checks this file too.
 */
import { Type, type Static, type TSchema, type TUnsafe } from 'typebox';
import { ERROR_STATUS, type ErrorCode } from '../errors.js';
import { MAX_LINK_LENGTH, MAX_LINKS_PER_REQUEST } from './knowledgebase/links.js';
import { AUDIT_ACTIONS } from './audit-actions.js';

/**
 * A `$ref` to a named schema (one with an `$id`) that keeps the schema's static type: the
 * document shows one component instead of a copy at every use.
 */
export function ref<T extends TSchema>(schema: T, options: { description?: string } = {}): TUnsafe<Static<T>> {
  if (!('$id' in schema) || typeof schema.$id !== 'string') throw new Error('ref() needs a schema with an $id');
  return Type.Unsafe<Static<T>>(Type.Ref(schema.$id, options));
}

/** A string that is one of `values` (a JSON Schema `enum`), typed as their union. */
export function oneOf<const T extends string>(values: readonly T[], options: { description?: string } = {}): TUnsafe<T> {
  return Type.Unsafe<T>({ type: 'string', enum: [...values], ...options });
}

/** A JSON object of any keys (e.g. a document's own objects, as written). */
export function jsonObject(options: { description?: string } = {}): TUnsafe<Record<string, unknown>> {
  return Type.Unsafe<Record<string, unknown>>({ type: 'object', additionalProperties: true, ...options });
}

export const Timestamp = Type.String({
  pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{6}Z$',
  description: 'UTC, microseconds, trailing Z',
  examples: ['2023-08-20T08:15:21.000000Z'],
});

const nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

// ——— Errors (DESIGN §8)

export const ERROR_CODES = Object.keys(ERROR_STATUS) as ErrorCode[];

export const ErrorBody = Type.Object(
  {
    error: oneOf(ERROR_CODES, { description: 'snake_case error code; each maps to one HTTP status (src/errors.ts)' }),
    message: Type.String({ description: 'One sentence for a person' }),
    details: Type.Optional(Type.Unknown({ description: 'What is wrong, where a client can act on it (e.g. the field)' })),
  },
  { $id: 'Error', title: 'Error', description: 'Every error answer: {"error", "message"} and optional details' },
);
export type ErrorBody = Static<typeof ErrorBody>;

// ——— Copilots (interface §2.1; DESIGN §3)

export const COPILOT_STATUSES = ['draft', 'live'] as const;
export type CopilotStatus = (typeof COPILOT_STATUSES)[number];

const Flag = Type.Unsafe<0 | 1>(Type.Integer({ minimum: 0, maximum: 1 }));

export const Copilot = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    name: Type.String(),
    token: Type.String({ description: '20 characters [A-Za-z0-9]; empty for a key without copilots:read' }),
    website: Type.String(),
    status: oneOf(COPILOT_STATUSES),
    prompt_message: Type.String(),
    enhanced_privacy: Flag,
    smart_sync: Flag,
    swagger_url: Type.String({ description: "The stored API description's file name, or an http(s) URL; empty when there is none" }),
    is_premade_demo_template: Flag,
    created_at: Timestamp,
    updated_at: Timestamp,
    deleted_at: nullable(Timestamp),
  },
  { $id: 'Copilot', title: 'Copilot', description: 'A copilot, keys in the order of interface §2.1' },
);
export type Copilot = Static<typeof Copilot>;

/** Flags are accepted as true/false or 0/1 and always answered as 0/1. */
const FlagInput = Type.Union([Type.Boolean(), Type.Literal(0), Type.Literal(1)]);
const copilotFields = {
  name: Type.String({
    minLength: 1,
    maxLength: 200,
    description: 'Not blank; no control or invisible formatting characters (bidi controls, zero-width space, …)',
  }),
  website: Type.String({ maxLength: 2048, description: 'An absolute http(s) URL, or empty' }),
  status: oneOf(COPILOT_STATUSES),
  prompt_message: Type.String({ maxLength: 100_000 }),
  enhanced_privacy: FlagInput,
  smart_sync: FlagInput,
  swagger_url: Type.String({ maxLength: 2048, description: "An http(s) URL, a stored document's file name, or empty" }),
  is_premade_demo_template: FlagInput,
};

export const CopilotCreate = Type.Object(
  {
    name: copilotFields.name,
    website: Type.Optional(copilotFields.website),
    status: Type.Optional(copilotFields.status),
    prompt_message: Type.Optional(copilotFields.prompt_message),
    enhanced_privacy: Type.Optional(copilotFields.enhanced_privacy),
    smart_sync: Type.Optional(copilotFields.smart_sync),
    swagger_url: Type.Optional(copilotFields.swagger_url),
    is_premade_demo_template: Type.Optional(copilotFields.is_premade_demo_template),
  },
  { $id: 'CopilotCreate', title: 'CopilotCreate', additionalProperties: false },
);
export type CopilotCreate = Static<typeof CopilotCreate>;

export const CopilotPatch = Type.Partial(Type.Object(copilotFields), {
  $id: 'CopilotPatch',
  title: 'CopilotPatch',
  additionalProperties: false,
  minProperties: 1,
  description: 'Any subset of the fields; status moves between draft and live',
});
export type CopilotPatch = Static<typeof CopilotPatch>;

export const PurgeResult = Type.Object(
  { id: Type.String({ format: 'uuid' }), documents: Type.Integer(), links: Type.Integer(), passages: Type.Integer() },
  { $id: 'PurgeResult', title: 'PurgeResult', description: 'What a purge removed' },
);
export type PurgeResult = Static<typeof PurgeResult>;

// ——— API keys (DESIGN §7)

export const SCOPES = ['copilots:read', 'copilots:write', 'knowledgebase:read', 'knowledgebase:write', 'knowledgebase:delete', 'admin'] as const;
export type Scope = (typeof SCOPES)[number];

const KeyBots = nullable(Type.Array(Type.String(), { description: 'The copilot ids the key is limited to; null: every bot' }));

export const ApiKey = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    scopes: Type.Array(oneOf(SCOPES)),
    bots: KeyBots,
    created_at: Timestamp,
    revoked_at: nullable(Timestamp),
  },
  { $id: 'ApiKey', title: 'ApiKey', description: 'An API key, never its secret' },
);
export type ApiKey = Static<typeof ApiKey>;

export const ApiKeyCreate = Type.Object(
  {
    scopes: Type.Array(Type.String({ maxLength: 50 }), { minItems: 1, maxItems: 10, description: `Among: ${SCOPES.join(', ')}` }),
    bots: Type.Optional(
      nullable(Type.Array(Type.String({ maxLength: 100 }), { maxItems: 1000, description: '1 to 1000 ids of existing copilots; absent or null: every bot' })),
    ),
    name: Type.Optional(Type.String({ maxLength: 200, description: 'A label; no control or invisible formatting characters' })),
  },
  { $id: 'ApiKeyCreate', title: 'ApiKeyCreate', additionalProperties: false },
);
export type ApiKeyCreate = Static<typeof ApiKeyCreate>;

export const ApiKeyCreated = Type.Object(
  {
    id: Type.String(),
    key: Type.String({ description: 'The secret key; shown only in this answer' }),
    scopes: Type.Array(oneOf(SCOPES)),
    bots: KeyBots,
    name: Type.String(),
    created_at: Timestamp,
  },
  { $id: 'ApiKeyCreated', title: 'ApiKeyCreated' },
);
export type ApiKeyCreated = Static<typeof ApiKeyCreated>;

export const ApiKeyIdentity = Type.Object(
  {
    id: Type.String(),
    name: Type.String({ description: 'The label given at creation; "" when none' }),
    scopes: Type.Array(oneOf(SCOPES), { description: 'The scopes the key was given' }),
    bots: KeyBots,
    created_at: Timestamp,
    admin: Type.Boolean({ description: 'Holds admin: may manage keys (within its bots) and read the audit log' }),
    effective_scopes: Type.Array(oneOf(SCOPES), { description: 'Every scope the key acts with (admin holds all)' }),
  },
  { $id: 'ApiKeyIdentity', title: 'ApiKeyIdentity', description: 'The calling key: who it is and what it may do' },
);
export type ApiKeyIdentity = Static<typeof ApiKeyIdentity>;

// ——— Knowledge base (interface §2.2, §4.1; DESIGN §6)

export const LINK_STATUSES = ['pending', 'indexed', 'failed'] as const;
export type LinkStatus = (typeof LINK_STATUSES)[number];

export const KnowledgeBaseLink = Type.Object(
  {
    url: Type.String({ description: 'The canonical form of the link' }),
    status: oneOf(LINK_STATUSES),
    error: nullable(Type.String()),
    passages: Type.Integer({ description: 'Passages indexed from the page' }),
    created_at: Timestamp,
    updated_at: Timestamp,
    truncated: Type.Boolean({
      description: "True when the page's HTML is longer than 4 Mi characters: only the text of its first 4 Mi characters is indexed",
    }),
  },
  { $id: 'KnowledgeBaseLink', title: 'KnowledgeBaseLink' },
);
export type KnowledgeBaseLink = Static<typeof KnowledgeBaseLink>;

export const KnowledgeBaseLinks = Type.Object(
  { bot_id: Type.String({ format: 'uuid' }), links: Type.Array(ref(KnowledgeBaseLink)) },
  { $id: 'KnowledgeBaseLinks', title: 'KnowledgeBaseLinks' },
);
export type KnowledgeBaseLinks = Static<typeof KnowledgeBaseLinks>;

export const LinksRequest = Type.Object(
  {
    links: Type.Array(Type.String({ maxLength: MAX_LINK_LENGTH }), {
      minItems: 1,
      maxItems: MAX_LINKS_PER_REQUEST,
      description: `1 to ${MAX_LINKS_PER_REQUEST} absolute http(s) URLs, each at most ${MAX_LINK_LENGTH} characters`,
    }),
  },
  { $id: 'LinksRequest', title: 'LinksRequest', additionalProperties: false },
);
export type LinksRequest = Static<typeof LinksRequest>;

export const LinksDeleted = Type.Object(
  {
    message: Type.String({ examples: ['Knowledge base and associated links have been successfully deleted.'] }),
    deleted_links: Type.Array(Type.String(), { description: 'The links removed, as the request spelled them' }),
    not_found_links: Type.Array(Type.String(), { description: 'The links the knowledge base did not hold' }),
  },
  { $id: 'LinksDeleted', title: 'LinksDeleted' },
);
export type LinksDeleted = Static<typeof LinksDeleted>;

export const LinksRefreshed = Type.Object(
  {
    bot_id: Type.String({ format: 'uuid' }),
    queued: Type.Integer({ minimum: 0, description: 'Links queued for a check now (a conditional GET; a changed page is indexed again)' }),
    pending: Type.Integer({ minimum: 0, description: 'Links already waiting to be indexed (their fetch is conditional too)' }),
  },
  { $id: 'LinksRefreshed', title: 'LinksRefreshed' },
);
export type LinksRefreshed = Static<typeof LinksRefreshed>;

export const SearchResult = Type.Object(
  {
    url: Type.String(),
    passage: Type.Integer({ description: 'Position of the passage in its page, from 0' }),
    content: Type.String(),
    score: Type.Number({ description: 'Higher is better' }),
  },
  { $id: 'SearchResult', title: 'SearchResult' },
);
export type SearchResult = Static<typeof SearchResult>;

export const SearchResults = Type.Object(
  { bot_id: Type.String({ format: 'uuid' }), query: Type.String(), results: Type.Array(ref(SearchResult)) },
  { $id: 'SearchResults', title: 'SearchResults', description: 'Passages best first' },
);
export type SearchResults = Static<typeof SearchResults>;

// ——— Audit log (DESIGN §7)

export { AUDIT_ACTIONS, type AuditAction } from './audit-actions.js';

export const AuditEntry = Type.Object(
  {
    id: Type.Integer(),
    at: Timestamp,
    actor_key_id: nullable(Type.String({ description: "The acting key's id; null for the operator (CLI)" })),
    // A string, not an enum: a client must keep working when a later version audits more actions.
    action: Type.String({ description: `One of ${AUDIT_ACTIONS.join(', ')}; later versions may add more`, examples: ['knowledgebase.delete_links'] }),
    bot_id: nullable(Type.String()),
    details: jsonObject({ description: "What the action did; its keys depend on the action. client_ip: the calling client's address (an action over HTTP)" }),
  },
  { $id: 'AuditEntry', title: 'AuditEntry' },
);
export type AuditEntry = Static<typeof AuditEntry>;

// ——— API description history and sync (issue 16 §1)

export const API_DESCRIPTION_SOURCES = ['upload', 'sync'] as const;

export const ChangeCounts = Type.Object(
  {
    breaking: Type.Integer({ description: 'Changes that break a copilot calling the API (a removed operation, a new required parameter, …)' }),
    other: Type.Integer(),
  },
  { $id: 'ChangeCounts', title: 'ChangeCounts', description: 'Changes from the previous version' },
);

export const ApiDescriptionVersion = Type.Object(
  {
    version: Type.Integer({ description: 'From 1, one more for each accepted document whose content differs from the one before' }),
    sha256: Type.String({ description: 'SHA-256 of the document as stored, hex' }),
    size: Type.Integer({ description: 'Bytes' }),
    media_type: Type.String({ examples: ['application/json'] }),
    source: oneOf(API_DESCRIPTION_SOURCES, { description: 'upload: PUT …/swagger or POST …/copilot/swagger; sync: fetched from swagger_url' }),
    url: nullable(Type.String({ description: 'The URL a synced version was fetched from' })),
    created_at: Timestamp,
    changes: ref(ChangeCounts),
  },
  { $id: 'ApiDescriptionVersion', title: 'ApiDescriptionVersion' },
);
export type ApiDescriptionVersion = Static<typeof ApiDescriptionVersion>;

export const ApiDescriptionChange = Type.Object(
  {
    version: Type.Integer({ description: 'The version that brought the change' }),
    kind: Type.String({ description: 'What changed (docs: the list of kinds); later versions may add more', examples: ['endpoint-removed'] }),
    breaking: Type.Boolean(),
    method: nullable(Type.String({ description: 'HTTP method, upper case; null for a change of the whole document' })),
    path: nullable(Type.String()),
    message: Type.String(),
    before: Type.Unknown({ description: 'The value before, when it is small (an operationId, a server URL); else null' }),
    after: Type.Unknown({ description: 'The value after' }),
  },
  { $id: 'ApiDescriptionChange', title: 'ApiDescriptionChange' },
);
export type ApiDescriptionChange = Static<typeof ApiDescriptionChange>;

export const SYNC_OUTCOMES = ['unchanged', 'changed', 'failed'] as const;

export const ApiDescriptionSync = Type.Object(
  {
    smart_sync: Type.Integer({ description: 'The copilot’s setting: 1 = synced on a schedule' }),
    url: nullable(Type.String({ description: 'The http(s) swagger_url synced from; null when swagger_url is not a URL' })),
    last_synced_at: nullable(Timestamp),
    last_outcome: nullable(oneOf(SYNC_OUTCOMES)),
    last_error: nullable(Type.String()),
    next_sync_at: nullable(Timestamp),
    latest_version: nullable(ref(ApiDescriptionVersion)),
  },
  { $id: 'ApiDescriptionSync', title: 'ApiDescriptionSync' },
);
export type ApiDescriptionSync = Static<typeof ApiDescriptionSync>;

export const WEBHOOK_DELIVERY_STATES = ['pending', 'delivered', 'failed'] as const;

export const WebhookDelivery = Type.Object(
  {
    id: Type.String({ description: 'Also the `id` of the body and the `x-cms-delivery` header' }),
    event: Type.String({ examples: ['api_description.breaking_change'] }),
    copilot_id: nullable(Type.String()),
    url: Type.String({ description: 'WEBHOOK_URL when the event happened; for a key limited to bots, its origin and /…' }),
    state: oneOf(WEBHOOK_DELIVERY_STATES, { description: 'pending: to be (re)tried; delivered: answered 2xx; failed: every attempt failed' }),
    attempts: Type.Integer(),
    last_status: nullable(Type.Integer({ description: 'HTTP status of the last attempt, when one came' })),
    last_error: nullable(Type.String()),
    created_at: Timestamp,
    next_attempt_at: nullable(Timestamp),
    delivered_at: nullable(Timestamp),
  },
  { $id: 'WebhookDelivery', title: 'WebhookDelivery' },
);
export type WebhookDelivery = Static<typeof WebhookDelivery>;
