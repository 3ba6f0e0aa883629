/**
 * The validator's answer as it goes over the wire (interface §2.3, §2.4; DESIGN §5), as
 * TypeBox schemas: the OpenAPI components Endpoint, FlagMap, Validations and
 * ValidationResult, and with `Static` the types the validator, the CLI and the dashboard
 * read. The validator imports only the types, so loading it never loads TypeBox.
 */
import { Type, type Static } from 'typebox';
import { jsonObject, oneOf, ref } from '../wire.js';
import { TOOL_PLATFORM_IDS } from './platforms.js';

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

/** The platforms copilots run on (DESIGN §5; docs/platform-rules.md), in the order of `readiness.platforms`. */
export const PLATFORM_IDS = ['openai', 'gpt_actions', 'anthropic', 'gemini', 'mcp', 'copilot_studio'] as const;
export type Platform = (typeof PLATFORM_IDS)[number];
export const SEVERITIES = ['error', 'warning', 'info'] as const;
export type Severity = (typeof SEVERITIES)[number];

export const RuleFinding = Type.Object(
  {
    rule: Type.String({ description: 'Stable rule id (src/domain/validator/README.md lists them)', examples: ['operation-id-missing'] }),
    severity: oneOf(SEVERITIES, { description: 'error: blocks the platforms listed; warning: works, worse; info: advice' }),
    endpoint: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], { description: 'Index in all_endpoints; null for the whole document' }),
    pointer: Type.String({ description: 'RFC 6901 JSON pointer of the culprit in the document as written', examples: ['/paths/~1pets/get/operationId'] }),
    message: Type.String({ description: 'What is wrong and why an LLM cares' }),
    platforms: Type.Array(oneOf(PLATFORM_IDS), { description: 'The platforms this finding breaks (error) or degrades' }),
    fix: Type.Unknown({ description: 'A computed replacement value for the culprit (e.g. a proposed operationId), or null' }),
  },
  { $id: 'RuleFinding', title: 'RuleFinding', description: 'One finding of a readiness rule, keys in the order of DESIGN §5' },
);
export type RuleFinding = Static<typeof RuleFinding>;

const PlatformReadiness = Type.Object({
  ready: Type.Boolean({ description: 'No error-severity finding lists this platform' }),
  blocking: Type.Integer({ minimum: 0, description: 'Error-severity findings for this platform' }),
  warnings: Type.Integer({ minimum: 0, description: 'Warning-severity findings for this platform' }),
});

export const Readiness = Type.Object(
  {
    score: Type.Integer({ minimum: 0, maximum: 100, description: 'LLM readiness, 0–100 (formula: src/domain/validator/README.md)' }),
    platforms: Type.Object(Object.fromEntries(PLATFORM_IDS.map((p) => [p, PlatformReadiness])) as Record<Platform, typeof PlatformReadiness>),
    worst_endpoints: Type.Array(Type.Integer({ minimum: 0 }), {
      maxItems: 10,
      description: 'Indexes in all_endpoints of the lowest-scoring endpoints, worst first',
    }),
  },
  { $id: 'Readiness', title: 'Readiness', description: 'How ready the API is for each platform copilots run on' },
);
export type Readiness = Static<typeof Readiness>;

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
    base_url: Type.Union([Type.String(), Type.Null()], { description: 'The server URL a copilot would call; null when the document names none' }),
    readiness: ref(Readiness),
    findings: Type.Array(ref(RuleFinding), { description: 'Every rule finding, rules in registry order' }),
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

// ——— Tool definitions and fixes (issue 18 B; src/domain/validator/README.md)

/** The platforms tool definitions are generated for. */
export { TOOL_PLATFORM_IDS } from './platforms.js';
export type ToolPlatform = (typeof TOOL_PLATFORM_IDS)[number];

const inputSchema = (platforms: string) =>
  Type.Optional(
    jsonObject({ description: `The input JSON Schema (${platforms}): an object with a property per parameter and the request body under \`body\`` }),
  );

export const ToolDefinition = Type.Object(
  {
    name: Type.String({
      description: 'The operationId when the platform accepts it, else the name the operation-id rules propose',
      examples: ['get_pets_by_petId'],
    }),
    description: Type.String({ description: 'Summary and description, capped for the platform (openai 1,024; the others 4,096)' }),
    parameters: inputSchema('openai and gemini; for gemini in its OpenAPI subset'),
    input_schema: inputSchema('anthropic'),
    inputSchema: inputSchema('mcp'),
    endpoint: Type.Integer({ minimum: 0, description: 'Index in all_endpoints of the endpoint the tool calls' }),
    method: Type.String({ description: 'The HTTP method, upper case' }),
    path: Type.String({ description: 'The path template' }),
  },
  {
    $id: 'ToolDefinition',
    title: 'ToolDefinition',
    description: 'One tool as the platform takes it (its schema under the field the platform names), with the endpoint it calls',
  },
);
export type ToolDefinition = Static<typeof ToolDefinition>;

/** GET …/copilot/:id/tools. */
export const CopilotTools = Type.Object(
  {
    chatbot_id: Type.String({ format: 'uuid' }),
    platform: oneOf(TOOL_PLATFORM_IDS),
    tools: Type.Array(ref(ToolDefinition), { description: 'One tool per endpoint, in all_endpoints order' }),
  },
  { $id: 'CopilotTools', title: 'CopilotTools', description: 'The tool definitions an LLM on the platform would be given for the API' },
);
export type CopilotTools = Static<typeof CopilotTools>;

export const OverlayAction = Type.Object(
  {
    target: Type.String({ description: 'A JSONPath (RFC 9535) selecting one node', examples: ["$.paths['/pets'].get"] }),
    description: Type.String({ description: 'The finding this action fixes' }),
    update: Type.Optional(Type.Unknown({ description: 'Merged into the target object (or appended to the target array)' })),
    remove: Type.Optional(Type.Boolean({ description: 'true: the target is removed' })),
  },
  { $id: 'OverlayAction', title: 'OverlayAction' },
);
export type OverlayAction = Static<typeof OverlayAction>;

/** GET …/copilot/:id/fixes: an OpenAPI Overlay 1.0 document. */
export const Overlay = Type.Object(
  {
    overlay: Type.Literal('1.0.0'),
    info: Type.Object({ title: Type.String(), version: Type.String() }),
    actions: Type.Array(ref(OverlayAction), {
      minItems: 1,
      description:
        'One action per computable fix, in the order of validations.findings; without a fix, one action that changes nothing (Overlay 1.0 asks for one at least)',
    }),
  },
  { $id: 'Overlay', title: 'Overlay', description: "An OpenAPI Overlay 1.0 document applying the validator's computable fixes" },
);
export type Overlay = Static<typeof Overlay>;
