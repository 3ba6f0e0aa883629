import { Type, type TSchema } from '@sinclair/typebox';
import { ERROR_STATUS, type ErrorCode } from '../errors.js';

/** The contract's error body (DESIGN §8). */
export const ErrorBody = Type.Object(
  {
    error: Type.String({ description: 'snake_case error code' }),
    message: Type.String({ description: 'One sentence for a person' }),
    details: Type.Optional(Type.Unknown()),
  },
  { $id: 'ErrorBody', title: 'Error' },
);

/** Response schemas for the error codes a route may answer with, grouped by status. */
export function errorResponses(...codes: ErrorCode[]): Record<number, TSchema> {
  const all: ErrorCode[] = [...codes, 'invalid_request', 'internal_error'];
  const out: Record<number, TSchema> = {};
  for (const code of all) {
    const status = ERROR_STATUS[code];
    const listed = all.filter((c) => ERROR_STATUS[c] === status);
    out[status] = Type.Ref(ErrorBody, { description: `Error: ${listed.join(', ')}` }) as unknown as TSchema;
  }
  return out;
}

export const Timestamp = Type.String({
  pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{6}Z$',
  description: 'UTC, microseconds, trailing Z',
  examples: ['2023-08-20T08:15:21.000000Z'],
});

const Flag = Type.Integer({ minimum: 0, maximum: 1 });

/** A copilot on the wire: interface §2.1, keys in this order. */
export const Copilot = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    name: Type.String(),
    token: Type.String(),
    website: Type.String(),
    status: Type.String({ enum: ['draft', 'live'] }),
    prompt_message: Type.String(),
    enhanced_privacy: Flag,
    smart_sync: Flag,
    swagger_url: Type.String(),
    is_premade_demo_template: Flag,
    created_at: Timestamp,
    updated_at: Timestamp,
    deleted_at: Type.Union([Timestamp, Type.Null()]),
  },
  { $id: 'Copilot', title: 'Copilot' },
);

const FlagInput = Type.Union([Type.Boolean(), Type.Literal(0), Type.Literal(1)]);
const copilotFields = {
  name: Type.String({ minLength: 1, maxLength: 200 }),
  website: Type.String({ maxLength: 2048 }),
  status: Type.Union([Type.Literal('draft'), Type.Literal('live')]),
  prompt_message: Type.String({ maxLength: 100_000 }),
  enhanced_privacy: FlagInput,
  smart_sync: FlagInput,
  swagger_url: Type.String({ maxLength: 2048 }),
  is_premade_demo_template: FlagInput,
};

export const CopilotCreate = Type.Object(
  {
    ...copilotFields,
    website: Type.Optional(copilotFields.website),
    status: Type.Optional(copilotFields.status),
    prompt_message: Type.Optional(copilotFields.prompt_message),
    enhanced_privacy: Type.Optional(FlagInput),
    smart_sync: Type.Optional(FlagInput),
    swagger_url: Type.Optional(copilotFields.swagger_url),
    is_premade_demo_template: Type.Optional(FlagInput),
  },
  { additionalProperties: false },
);

export const CopilotPatch = Type.Partial(Type.Object(copilotFields), { additionalProperties: false, minProperties: 1 });

export const CopilotIdParams = Type.Object({ id: Type.String() });

export const ListCopilotsQuery = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100 })),
    cursor: Type.Optional(Type.String({ maxLength: 400 })),
    status: Type.Optional(Type.Union([Type.Literal('draft'), Type.Literal('live')])),
    q: Type.Optional(Type.String({ maxLength: 200 })),
    include_deleted: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);

export const ApiKey = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    scopes: Type.Array(Type.String()),
    bots: Type.Union([Type.Array(Type.String()), Type.Null()]),
    created_at: Timestamp,
    revoked_at: Type.Union([Timestamp, Type.Null()]),
  },
  { $id: 'ApiKey', title: 'ApiKey' },
);

export const ApiKeyCreate = Type.Object(
  {
    scopes: Type.Array(Type.String({ maxLength: 50 }), { minItems: 1, maxItems: 10 }),
    bots: Type.Optional(Type.Union([Type.Array(Type.String({ maxLength: 100 }), { maxItems: 1000 }), Type.Null()])),
    name: Type.Optional(Type.String({ maxLength: 200 })),
  },
  { additionalProperties: false },
);

export const ApiKeyCreated = Type.Object({
  id: Type.String(),
  key: Type.String({ description: 'The secret key; shown only in this response' }),
  scopes: Type.Array(Type.String()),
  bots: Type.Union([Type.Array(Type.String()), Type.Null()]),
  name: Type.String(),
  created_at: Timestamp,
});
