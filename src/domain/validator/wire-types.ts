/**
 * The validator's answer as it goes over the wire (interface §2.3, §2.4; DESIGN §5), as
 * TypeBox schemas: the OpenAPI components Endpoint, FlagMap, Validations and
 * ValidationResult, and with `Static` the types the validator, the CLI and the dashboard
 * read. The validator imports only the types, so loading it never loads TypeBox.
 */
import { Type, type Static } from 'typebox';
import { jsonObject, ref } from '../wire.js';

export const Endpoint = Type.Object(
  {
    operationId: Type.Union([Type.String(), Type.Null()], { description: 'As written; null when missing' }),
    type: Type.String({ enum: ['GET', 'PUT', 'POST', 'DELETE', 'OPTIONS', 'HEAD', 'PATCH', 'TRACE'], description: 'The HTTP method, upper case' }),
    name: Type.String({ description: "The operation's summary; empty when missing" }),
    description: Type.String({ description: 'Empty when missing' }),
    // As written in the document (a malformed one may hold anything here): typed `unknown`.
    requestBody: Type.Unsafe<unknown>({
      type: ['object', 'null'],
      additionalProperties: true,
      description: 'The Request Body Object as written ($refs kept); for Swagger 2.0 built from the body/formData parameters; null when absent',
    }),
    requestParameters: Type.Union([Type.Array(jsonObject()), Type.Null()], {
      description: "Path-level parameters merged with the operation's (the operation's win on the same name and in); null when none",
    }),
    responseBody: jsonObject({ description: "The operation's responses as written, by status code; {} when absent" }),
    path: Type.String({ description: 'The path template, parameters in braces' }),
  },
  { $id: 'Endpoint', title: 'Endpoint', description: 'One (path, HTTP method) of the API description, keys in the order of DESIGN §5' },
);
export type Endpoint = Static<typeof Endpoint>;

/** Index in `all_endpoints` (as a string) → the identical endpoint object; `[]` when empty. */
export const FlagMap = Type.Unsafe<Record<string, Endpoint> | []>({
  $id: 'FlagMap',
  title: 'FlagMap',
  description: 'The flagged endpoints by their index in all_endpoints (as a string); an empty array when none is flagged',
  anyOf: [
    { type: 'object', propertyNames: { pattern: '^(0|[1-9][0-9]*)$' }, additionalProperties: Type.Ref('Endpoint') },
    { type: 'array', maxItems: 0, items: Type.Ref('Endpoint') },
  ],
});
export type FlagMap = Static<typeof FlagMap>;

const flagMap = (description: string) => ref(FlagMap, { description });

/** The interface's four keys first, then the additive ones (DESIGN §5); more may be added. */
export const Validations = Type.Object(
  {
    endpoints_without_operation_id: flagMap('Endpoints whose operationId is missing'),
    endpoints_without_description: flagMap('Endpoints whose description is missing'),
    endpoints_without_name: flagMap('Endpoints whose summary (name) is missing'),
    auth_type: Type.String({
      description: 'The type of the security scheme the document applies (apiKey, http, oauth2, openIdConnect, mutualTLS), or none',
      examples: ['oauth2'],
    }),
    endpoints_with_duplicate_operation_id: flagMap('Endpoints whose operationId another endpoint also has'),
    endpoints_with_invalid_operation_id: flagMap('Endpoints whose operationId cannot be a tool name (^[A-Za-z0-9_-]{1,64}$)'),
    base_url: Type.Union([Type.String(), Type.Null()], { description: 'The server URL a copilot would call; null when the document names none' }),
  },
  { $id: 'Validations', title: 'Validations' },
);
export type Validations = Static<typeof Validations>;

/** What the validator computes for a document (the CLI prints it). */
export const ValidationResult = Type.Object({ all_endpoints: Type.Array(ref(Endpoint)), validations: ref(Validations) });
export type ValidationResult = Static<typeof ValidationResult>;

/** GET …/copilot/:id/validator (interface §4.3): the OpenAPI component ValidationResult. */
export const CopilotValidationResult = Type.Object(
  {
    chatbot_id: Type.String({ format: 'uuid' }),
    all_endpoints: Type.Array(ref(Endpoint), { description: 'Every endpoint of the API description, in document order' }),
    validations: ref(Validations),
  },
  { $id: 'ValidationResult', title: 'ValidationResult', description: 'Every endpoint of the API description and what an LLM will struggle with' },
);
export type CopilotValidationResult = Static<typeof CopilotValidationResult>;

/** Keys of `validations` whose value is an index → endpoint map. */
export type EndpointFindingKey = { [K in keyof Validations]: Validations[K] extends FlagMap ? K : never }[keyof Validations];
