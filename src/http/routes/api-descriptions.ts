import multipart from '@fastify/multipart';
import { Readable } from 'node:stream';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Config } from '../../config.js';
import * as descriptions from '../../domain/copilots/api-description.service.js';
import { AppError } from '../../errors.js';
import type { Storage } from '../../storage/database.js';
import { visibleCopilot, type AccessHook } from '../auth.js';
import { checkText } from '../text-guard.js';
import { Copilot, CopilotIdParams, errorResponses } from '../schemas.js';

const RAW_TYPES = ['application/json', 'application/yaml', 'application/x-yaml', 'text/yaml', 'text/x-yaml'];
const FILE_FIELDS = new Set(['file', 'swagger_file']);

type Upload = descriptions.UploadedDocument;

/** Reads a multipart body: the document from `file`/`swagger_file`, plus the text fields. */
async function readMultipart(request: FastifyRequest, maxBytes: number): Promise<{ upload: Upload | null; fields: Record<string, string> }> {
  let upload: Upload | null = null;
  const fields: Record<string, string> = {};
  try {
    for await (const part of request.parts({ limits: { fileSize: maxBytes, files: 1, fields: 20, fieldSize: 100_000 } })) {
      if (part.type === 'file') {
        const bytes = await part.toBuffer();
        if (part.file.truncated) throw new AppError('payload_too_large', `The API description is larger than ${maxBytes} bytes.`, { max_bytes: maxBytes });
        if (FILE_FIELDS.has(part.fieldname)) upload = { bytes, mediaType: part.mimetype, fileName: part.filename };
      } else if (typeof part.value === 'string') {
        fields[part.fieldname] = part.value;
      }
    }
  } catch (err) {
    if (err instanceof AppError) throw err;
    const code = (err as { code?: unknown }).code;
    // A second file part is not "too large": say what to send instead.
    if (code === 'FST_FILES_LIMIT') throw new AppError('invalid_request', 'Send one file only, in the field "file" or "swagger_file".');
    // The plugin's own errors (size limits, premature close) carry a status the error handler maps.
    if (typeof code === 'string' && code.startsWith('FST_')) throw err;
    // Anything else is busboy refusing the body (no boundary, unexpected end of form, …): a client error, not a 500.
    throw new AppError('invalid_request', 'The multipart body could not be read.');
  }
  checkText(fields, 'body');
  return { upload, fields };
}

async function readUpload(request: FastifyRequest, maxBytes: number): Promise<Upload> {
  if (request.isMultipart()) {
    const { upload } = await readMultipart(request, maxBytes);
    if (!upload) throw new AppError('invalid_request', 'The multipart body has no file in the field "file" or "swagger_file".');
    return upload;
  }
  // No body at all (no Content-Type, or Content-Length: 0) is an empty document, not a crash.
  return { bytes: Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0), mediaType: request.headers['content-type'] ?? null };
}

const ValidatorResponse = Type.Object(
  {
    chatbot_id: Type.String({ format: 'uuid' }),
    all_endpoints: Type.Array(Type.Object({}, { additionalProperties: true, description: 'Endpoint object (interface §2.3)' })),
    validations: Type.Object({}, { additionalProperties: true, description: 'Findings (interface §2.4, DESIGN §5)' }),
  },
  { description: 'Every endpoint of the API description and what an LLM will struggle with' },
);

/**
 * API descriptions: upload (raw JSON/YAML or multipart), download, and the validator.
 * Registered as an encapsulated plugin: here JSON and YAML bodies are kept as raw
 * bytes (stored as sent) with the document size cap instead of the JSON body limit.
 */
export function apiDescriptionRoutes(app: FastifyInstance, deps: { storage: Storage; access: AccessHook; config: Config }): void {
  const { storage, access, config } = deps;
  const maxBytes = config.maxDocumentBytes;
  const policy = () => ({
    timeoutMs: config.fetchTimeoutMs,
    maxBytes: config.maxDocumentBytes,
    maxRedirects: 5,
    allowNetworks: [...config.fetchAllowNetworks],
  });

  app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser(RAW_TYPES, { parseAs: 'buffer', bodyLimit: maxBytes }, (_request, body, done) => done(null, body));
    await scope.register(multipart, { limits: { fileSize: maxBytes } });

    scope.put(
      '/backend/api/copilot/:id/swagger',
      {
        onRequest: access({ scope: 'copilots:write', botParam: 'id' }),
        bodyLimit: maxBytes + 64 * 1024,
        schema: {
          summary: "Upload the copilot's API description (raw JSON/YAML body, or multipart with `file` or `swagger_file`)",
          description: `Accepted raw media types: ${RAW_TYPES.join(', ')}. The document is checked, stored under a generated file name that becomes swagger_url.`,
          tags: ['api descriptions'],
          params: CopilotIdParams,
          response: {
            200: Type.Ref(Copilot),
            ...errorResponses('invalid_swagger_file', 'unauthorized', 'forbidden', 'copilot_not_found', 'payload_too_large', 'unsupported_media_type', 'service_unavailable'),
          },
        },
      },
      async (request) =>
        visibleCopilot(
          request.principal,
          await descriptions.uploadApiDescription(storage, (request.params as { id: string }).id, await readUpload(request, maxBytes), maxBytes, request.principal),
        ),
    );

    scope.post(
      '/backend/api/copilot/swagger',
      {
        onRequest: access({ scope: 'copilots:write', createsBot: true }),
        bodyLimit: maxBytes + 256 * 1024,
        schema: {
          summary: 'Create a copilot with its API description in one call (multipart: swagger_file, name, website, prompt_message)',
          tags: ['api descriptions'],
          response: {
            201: Type.Ref(Copilot),
            ...errorResponses('invalid_swagger_file', 'unauthorized', 'forbidden', 'payload_too_large', 'unsupported_media_type', 'service_unavailable'),
          },
        },
      },
      async (request, reply) => {
        if (!request.isMultipart()) throw new AppError('unsupported_media_type', 'Send multipart/form-data with swagger_file, name, website and prompt_message.');
        const { upload, fields } = await readMultipart(request, maxBytes);
        if (!upload) throw new AppError('invalid_request', 'The multipart body has no file in the field "swagger_file".', { field: 'swagger_file' });
        const name = (fields.name ?? '').trim();
        if (name === '' || name.length > 200) throw new AppError('invalid_request', 'The field name is required (1 to 200 characters).', { field: 'name' });
        const created = await descriptions.createCopilotWithApiDescription(
          storage,
          {
            name,
            ...(fields.website !== undefined && { website: fields.website }),
            ...(fields.prompt_message !== undefined && { prompt_message: fields.prompt_message }),
          },
          upload,
          maxBytes,
          request.principal,
        );
        reply.code(201).header('location', `/backend/api/copilot/${created.id}`);
        return visibleCopilot(request.principal, created);
      },
    );
  });

  app.get(
    '/backend/api/copilot/:id/swagger',
    {
      onRequest: access({ scope: 'copilots:read', botParam: 'id' }),
      schema: {
        summary: 'The stored API description, as uploaded, with its media type',
        tags: ['api descriptions'],
        params: CopilotIdParams,
        response: { 200: Type.String({ description: 'The document bytes' }), ...errorResponses('unauthorized', 'forbidden', 'copilot_not_found', 'swagger_missing') },
      },
    },
    async (request, reply) => {
      const doc = await descriptions.getStoredApiDescription(storage, (request.params as { id: string }).id);
      return reply.type(`${doc.mediaType}; charset=utf-8`).header('content-disposition', `inline; filename="${doc.fileName}"`).send(doc.bytes);
    },
  );

  app.get(
    '/backend/api/copilot/:id/validator',
    {
      onRequest: access({ scope: 'copilots:read', botParam: 'id', anonymousReadable: true }),
      schema: {
        summary: "Validate the copilot's API description: every endpoint, and what an LLM will struggle with",
        tags: ['api descriptions'],
        params: CopilotIdParams,
        response: {
          200: ValidatorResponse,
          ...errorResponses('unauthorized', 'forbidden', 'copilot_not_found', 'swagger_missing', 'invalid_swagger_file', 'address_not_allowed', 'swagger_fetch_failed', 'service_unavailable'),
        },
      },
    },
    async (request, reply) => {
      const { head, body } = await descriptions.validateCopilot(storage, (request.params as { id: string }).id, policy());
      // Already JSON: the copilot's id, then the cached answer's own bytes, as two chunks of
      // one stream (joining them would copy the whole answer for each request).
      return reply
        .type('application/json; charset=utf-8')
        .header('content-length', String(head.length + body.length))
        .send(Readable.from([head, body]));
    },
  );
}
