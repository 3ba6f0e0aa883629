import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import * as descriptions from '../../domain/copilots/api-description.service.js';
import { maxAnswerChars, type DocumentSource } from '../../domain/validator/index.js';
import { CopilotTools, Overlay, TOOL_PLATFORM_IDS } from '../../domain/validator/wire-types.js';
import { oneOf } from '../../domain/wire.js';
import type { FetchPolicy } from '../../net/guarded-fetch.js';
import type { Storage } from '../../storage/database.js';
import type { AccessHook } from '../auth.js';
import { CopilotIdParams, DOCUMENT_ERRORS, errorResponses, jsonAnswer, ref } from '../schemas.js';
import { sendBytes } from '../send-bytes.js';
import { mediaTypeEssence } from '../../domain/validator/media-types.js';

const ToolsQuery = Type.Object(
  { platform: oneOf(TOOL_PLATFORM_IDS, { description: 'The platform whose tool form and rules apply' }) },
  { additionalProperties: false },
);

/** Whether an Accept header asks for YAML rather than JSON (media types named, weights not compared). */
function wantsYaml(accept: string | undefined): boolean {
  if (accept === undefined) return false;
  const types = accept.split(',').map(mediaTypeEssence);
  return types.some((t) => t === 'application/yaml' || t === 'application/x-yaml' || t === 'text/yaml') && !types.includes('application/json');
}

/**
 * Around the validator (issue 18 B): the tool definitions an LLM would be given, and the
 * computable fixes as an OpenAPI Overlay. Both read the copilot's document as GET …/validator
 * does (and refuse it the same way), then build the answer on a task thread; the validation
 * cache keeps it for the same bytes, as it keeps the validator's answer.
 */
export function validatorExtrasRoutes(
  instance: FastifyInstance,
  deps: { storage: Storage; access: AccessHook; fetchPolicy: FetchPolicy; validation: descriptions.ValidationDeps },
): void {
  const app = instance.withTypeProvider<TypeBoxTypeProvider>();
  const { storage, access, validation, fetchPolicy } = deps;
  const view = (id: string, name: string, render: (tenant: string, src: DocumentSource) => Promise<Uint8Array>) =>
    descriptions.copilotDocumentView(storage.readDb, validation, id, fetchPolicy, name, render);

  app.get(
    '/backend/api/copilot/:id/tools',
    {
      onRequest: access({ scope: 'copilots:read', botParam: 'id' }),
      schema: {
        operationId: 'getCopilotTools',
        summary: 'The tool definitions an LLM would be given for the API',
        description:
          "One tool per endpoint in the platform's form: a valid name (the operationId, or a proposed one), a capped description, and an input JSON Schema of the path, query and header parameters and the body (under `body`), local $refs resolved, cycles cut.",
        tags: ['api descriptions'],
        params: CopilotIdParams,
        querystring: ToolsQuery,
        response: { 200: jsonAnswer('The tools', ref(CopilotTools)), ...errorResponses(...DOCUMENT_ERRORS) },
      },
    },
    async (request, reply) => {
      const { platform } = request.query;
      // Built and written on a task thread: a large document delays only its own answer.
      const { copilotId, bytes: tools } = await view(request.params.id, `tools:${platform}`, (tenant, src) =>
        validation.renderer.toolsOnThread(tenant, src, platform, maxAnswerChars(src.bytes.length)),
      );
      const head = Buffer.from(`{"chatbot_id":${JSON.stringify(copilotId)},"platform":${JSON.stringify(platform)},"tools":`);
      return sendBytes(reply, 'application/json; charset=utf-8', [head, tools, Buffer.from('}')]);
    },
  );

  app.get(
    '/backend/api/copilot/:id/fixes',
    {
      onRequest: access({ scope: 'copilots:read', botParam: 'id' }),
      schema: {
        operationId: 'getCopilotFixes',
        summary: "The validator's computable fixes, as an OpenAPI Overlay",
        description:
          'An OpenAPI Overlay 1.0 document, one action per computable fix of validations.findings: operationIds, summaries, shorter descriptions, missing path parameters, servers. Applying it raises the readiness score.',
        tags: ['api descriptions'],
        params: CopilotIdParams,
        response: {
          200: {
            description: 'The overlay: JSON, or YAML when Accept names a YAML media type and not JSON',
            content: { 'application/json': { schema: ref(Overlay) }, 'application/yaml': { schema: Type.String({ description: 'The overlay as YAML' }) } },
          },
          ...errorResponses(...DOCUMENT_ERRORS),
        },
      },
    },
    async (request, reply) => {
      const yaml = wantsYaml(request.headers.accept);
      const format = yaml ? 'yaml' : 'json';
      const { bytes: overlay } = await view(request.params.id, `fixes:${format}`, (tenant, src) => validation.renderer.fixesOnThread(tenant, src, format));
      return sendBytes(reply, `application/${format}; charset=utf-8`, [overlay]);
    },
  );
}
