import multipart from '@fastify/multipart';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Readable } from 'node:stream';
import { Type, type Static } from 'typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { SwaggerTransform } from '@fastify/swagger';
import type { Config } from '../../config.js';
import * as descriptions from '../../domain/copilots/api-description.service.js';
import { CopilotValidationResult } from '../../domain/validator/wire-types.js';
import { Copilot, CopilotCreate, jsonObject } from '../../domain/wire.js';
import { AppError } from '../../errors.js';
import type { FetchPolicy } from '../../net/guarded-fetch.js';
import type { Storage } from '../../storage/database.js';
import { visibleCopilot, type AccessHook } from '../auth.js';
import { checkText, strictUtf8 } from '../text-guard.js';
import { CopilotIdParams, DOCUMENT_ERRORS, errorResponses, jsonAnswer, LOCATION_HEADER, ref } from '../schemas.js';
import { sendBytes } from '../send-bytes.js';

const RAW_TYPES = ['application/json', 'application/yaml', 'application/x-yaml', 'text/yaml', 'text/x-yaml'];
const FILE_FIELDS = new Set(['file', 'swagger_file']);

type Upload = descriptions.UploadedDocument;

/** The text fields the multipart create takes besides the file. */
const CREATE_FIELDS = ['name', 'website', 'prompt_message'] as const;
/** Text fields a multipart body may hold beside its file. */
const MAX_FIELDS = 20;
/** A text field's bytes: the longest a field takes (100,000 characters) at 4 bytes each. */
const FIELD_MAX_BYTES = 4 * 100_000;

const fileTooLarge = (maxBytes: number) => new AppError('payload_too_large', `The API description is larger than ${maxBytes} bytes.`, { max_bytes: maxBytes });
const fieldName = (part: { fieldname: string }) => part.fieldname.slice(0, 100);

/**
 * A part is the file as busboy tells a file (a file name, or application/octet-stream); every
 * other part is a text field.
 */
const isFile = (part: { filename?: string; mimetype: string }) => part.filename !== undefined || part.mimetype === 'application/octet-stream';

/** A part's bytes, refused as soon as they pass `limit` (toBuffer reads the rest of the part first). */
async function partBytes(stream: Readable & { truncated?: boolean }, limit: number, tooLarge: () => AppError): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream) {
    size += (chunk as Buffer).length;
    if (stream.truncated || size > limit) throw tooLarge();
    chunks.push(chunk as Buffer);
  }
  if (stream.truncated) throw tooLarge();
  return Buffer.concat(chunks);
}

/**
 * Reads a multipart body: the document from `file`/`swagger_file`, plus the text fields.
 * Every part is read as bytes (busboy's `isPartAFile`), so that a text field is decoded as
 * UTF-8 strictly and never cut short: busboy's own fields put U+FFFD for bytes that are not
 * UTF-8 and cut a long value silently at its field limit.
 */
async function readMultipart(request: FastifyRequest, maxBytes: number): Promise<{ upload: Upload | null; fields: Record<string, string> }> {
  let upload: Upload | null = null;
  let files = 0;
  const fields: Record<string, string> = {};
  try {
    const parts = request.parts({ isPartAFile: () => true, limits: { fileSize: Math.max(maxBytes, FIELD_MAX_BYTES), files: MAX_FIELDS + 1 } });
    for await (const part of parts) {
      if (part.type !== 'file') continue;
      // The answer to a refusal here closes the connection (connections.ts), the rest unread.
      if (isFile(part)) {
        if (++files > 1) throw new AppError('invalid_request', 'Send one file only, in the field "file" or "swagger_file".');
        const bytes = await partBytes(part.file, maxBytes, () => fileTooLarge(maxBytes));
        if (FILE_FIELDS.has(part.fieldname)) upload = { bytes, mediaType: part.mimetype, fileName: part.filename ?? null };
        continue;
      }
      const field = fieldName(part);
      const bytes = await partBytes(part.file, FIELD_MAX_BYTES, () => tooLong(field, FIELD_MAX_BYTES / 4));
      const text = strictUtf8(bytes);
      if (text === null) throw new AppError('invalid_request', `The field "${field}" is not valid UTF-8, which text fields are read as.`, { field });
      fields[part.fieldname] = text;
    }
  } catch (err) {
    if (err instanceof AppError) throw err;
    const code = err !== null && typeof err === 'object' && 'code' in err ? err.code : undefined;
    // Too many parts, whatever the body's size: not "too large".
    if (code === 'FST_FILES_LIMIT' || code === 'FST_FIELDS_LIMIT' || code === 'FST_PARTS_LIMIT')
      throw new AppError('invalid_request', `A multipart body holds the file and at most ${MAX_FIELDS} text fields.`, { max_fields: MAX_FIELDS });
    // The plugin's own errors (size limits, premature close) carry a status the error handler maps.
    if (typeof code === 'string' && code.startsWith('FST_')) throw err;
    // Anything else is busboy refusing the body (no boundary, unexpected end of form, …): a client error, not a 500.
    throw new AppError('invalid_request', 'The multipart body could not be read.');
  }
  checkText(fields, 'body');
  return { upload, fields };
}

const tooLong = (field: string, maxLength: number) =>
  new AppError('invalid_request', `The field "${field}" is longer than ${maxLength} characters.`, { field, max_length: maxLength });

/** The multipart create's fields, held to the JSON create's own limits (counted as Ajv counts them, in code points). */
function checkCreateFields(fields: Record<string, string>): void {
  for (const field of CREATE_FIELDS) {
    const value = fields[field];
    const schema: object = CopilotCreate.properties[field];
    const maxLength = 'maxLength' in schema ? schema.maxLength : undefined;
    if (value !== undefined && typeof maxLength === 'number' && codePoints(value) > maxLength) throw tooLong(field, maxLength);
  }
}

function codePoints(text: string): number {
  let count = 0;
  for (const _ of text) count++;
  return count;
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

// The uploads read their own bodies (raw bytes, or a multipart stream), so no schema can
// validate them; their request bodies are published in the document only (`swaggerTransform`).
const OPENAPI_DOCUMENT = jsonObject({ description: 'An OpenAPI 3.x or Swagger 2.0 document' });
const YAML_TEXT = Type.String({ description: 'An OpenAPI 3.x or Swagger 2.0 document, as YAML' });
const FILE = Type.String({ format: 'binary', description: 'The document, JSON or YAML' });

const uploadBody = {
  content: {
    'application/json': { schema: OPENAPI_DOCUMENT },
    ...Object.fromEntries(RAW_TYPES.filter((t) => t !== 'application/json').map((t) => [t, { schema: YAML_TEXT }])),
    'multipart/form-data': {
      schema: Type.Object({ file: Type.Optional(FILE), swagger_file: Type.Optional(FILE) }, { description: 'One file, in the field `file` or `swagger_file`' }),
    },
  },
};

const createBody = {
  content: {
    'multipart/form-data': {
      schema: Type.Object({
        swagger_file: Type.Unsafe<string>({ ...FILE, description: 'The document, JSON or YAML (the field `file` is accepted too)' }),
        name: Type.String({ minLength: 1, maxLength: 200 }),
        website: Type.Optional(Type.String({ maxLength: 2048 })),
        prompt_message: Type.Optional(Type.String({ maxLength: 100_000 })),
      }),
    },
  },
};

const documentedBody =
  (body: object): SwaggerTransform =>
  ({ schema, url }) => ({ schema: { ...schema, body }, url });

/**
 * API descriptions: upload (raw JSON/YAML or multipart), download, and the validator.
 * Registered as an encapsulated plugin: here JSON and YAML bodies are kept as raw
 * bytes (stored as sent) with the document size cap instead of the JSON body limit.
 */
export function apiDescriptionRoutes(
  instance: FastifyInstance,
  deps: { storage: Storage; access: AccessHook; config: Config; fetchPolicy: FetchPolicy; validation: descriptions.ValidationDeps },
): void {
  const app = instance.withTypeProvider<TypeBoxTypeProvider>();
  const { storage, access, config, validation } = deps;
  const maxBytes = config.maxDocumentBytes;

  app.register(async (plugin) => {
    const scope = plugin.withTypeProvider<TypeBoxTypeProvider>();
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser(RAW_TYPES, { parseAs: 'buffer', bodyLimit: maxBytes }, (_request, body, done) => done(null, body));
    await scope.register(multipart, { limits: { fileSize: maxBytes } });

    scope.put(
      '/backend/api/copilot/:id/swagger',
      {
        onRequest: access({ scope: 'copilots:write', botParam: 'id' }),
        bodyLimit: maxBytes + 64 * 1024,
        config: { swaggerTransform: documentedBody(uploadBody), documentLimit: maxBytes },
        schema: {
          operationId: 'uploadApiDescription',
          summary: "Upload the copilot's API description",
          description: `A raw body (${RAW_TYPES.join(', ')}) or multipart with the file in \`file\` or \`swagger_file\`. The document is checked, then stored under a generated file name that becomes swagger_url. Written to the audit log.`,
          tags: ['api descriptions'],
          params: CopilotIdParams,
          response: {
            200: jsonAnswer('The copilot, with its new swagger_url', ref(Copilot)),
            ...errorResponses(
              'invalid_swagger_file',
              'unauthorized',
              'forbidden',
              'copilot_not_found',
              'payload_too_large',
              'unsupported_media_type',
              'quota_exceeded',
              'service_unavailable',
            ),
          },
        },
      },
      async (request) =>
        visibleCopilot(
          request.principal,
          await descriptions.uploadApiDescription(storage.db, validation, request.params.id, await readUpload(request, maxBytes), maxBytes, request.principal),
        ),
    );

    scope.post(
      '/backend/api/copilot/swagger',
      {
        onRequest: access({ scope: 'copilots:write', createsBot: true }),
        bodyLimit: maxBytes + 256 * 1024,
        config: { swaggerTransform: documentedBody(createBody), documentLimit: maxBytes },
        schema: {
          operationId: 'createCopilotWithApiDescription',
          summary: 'Create a copilot with its API description in one call',
          description: 'Multipart: swagger_file, name, website, prompt_message; in one transaction. Written to the audit log.',
          tags: ['api descriptions'],
          response: {
            201: jsonAnswer('The created copilot', ref(Copilot), LOCATION_HEADER),
            ...errorResponses(
              'invalid_swagger_file',
              'unauthorized',
              'forbidden',
              'payload_too_large',
              'unsupported_media_type',
              'quota_exceeded',
              'service_unavailable',
            ),
          },
        },
      },
      async (request, reply) => {
        if (!request.isMultipart())
          throw new AppError('unsupported_media_type', 'Send multipart/form-data with swagger_file, name, website and prompt_message.');
        const { upload, fields } = await readMultipart(request, maxBytes);
        if (!upload) throw new AppError('invalid_request', 'The multipart body has no file in the field "swagger_file".', { field: 'swagger_file' });
        // Refused as the JSON create refuses unknown properties: a setting sent here and dropped
        // (enhanced_privacy, say) would make a copilot other than the one asked for.
        const unknown = Object.keys(fields).find((field) => !(CREATE_FIELDS as readonly string[]).includes(field));
        if (unknown !== undefined) {
          throw new AppError(
            'invalid_request',
            `The field "${unknown.slice(0, 100)}" is not taken here; send swagger_file, ${CREATE_FIELDS.join(', ')}, and change other settings with PATCH.`,
            { field: unknown.slice(0, 100) },
          );
        }
        checkCreateFields(fields);
        const name = (fields.name ?? '').trim();
        if (name === '' || name.length > 200) throw new AppError('invalid_request', 'The field name is required (1 to 200 characters).', { field: 'name' });
        const created = await descriptions.createCopilotWithApiDescription(
          storage.db,
          validation,
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

  // The stored bytes as uploaded (a Buffer, never serialised): the reply's type says so, the
  // schema describes them for the document.
  app.get<{ Params: Static<typeof CopilotIdParams>; Reply: Buffer }>(
    '/backend/api/copilot/:id/swagger',
    {
      onRequest: access({ scope: 'copilots:read', botParam: 'id' }),
      schema: {
        operationId: 'getApiDescription',
        summary: 'The stored API description, as uploaded',
        description: 'Answered in the format it was stored in: a JSON object (application/json) or YAML text (application/yaml).',
        tags: ['api descriptions'],
        params: CopilotIdParams,
        response: {
          200: {
            description: 'The document',
            headers: { 'content-disposition': Type.String({ description: '`inline; filename="<stored file name>"`, the copilot\'s swagger_url' }) },
            content: {
              'application/json': { schema: OPENAPI_DOCUMENT },
              'application/yaml': { schema: YAML_TEXT },
            },
          },
          ...errorResponses('unauthorized', 'forbidden', 'copilot_not_found', 'swagger_missing'),
        },
      },
    },
    async (request, reply) => {
      const doc = await descriptions.getStoredApiDescription(storage.readDb, validation.cache, request.params.id);
      return reply.type(`${doc.mediaType}; charset=utf-8`).header('content-disposition', `inline; filename="${doc.fileName}"`).send(doc.bytes);
    },
  );

  // JSON already rendered (the cached validation's bytes), never serialised: the reply's type
  // says so, the schema describes it for the document.
  app.get<{ Params: Static<typeof CopilotIdParams>; Reply: Readable }>(
    '/backend/api/copilot/:id/validator',
    {
      onRequest: access({ scope: 'copilots:read', botParam: 'id', anonymousReadable: true }),
      schema: {
        operationId: 'validateCopilot',
        summary: "Validate the copilot's API description",
        description:
          'Every endpoint of the API description, and what an LLM will struggle with: endpoints without operationId, description or name (summary), duplicate or invalid operationIds, the auth type and the base URL (interface §4.3, DESIGN §5).',
        tags: ['api descriptions'],
        params: CopilotIdParams,
        response: {
          200: jsonAnswer('The validation result', ref(CopilotValidationResult)),
          ...errorResponses(...DOCUMENT_ERRORS),
        },
      },
    },
    async (request, reply) => {
      const { head, body } = await descriptions.validateCopilot(storage.readDb, validation, request.params.id, deps.fetchPolicy);
      // Already JSON: the copilot's id, then the cached answer's own bytes.
      return sendBytes(reply, 'application/json; charset=utf-8', [head, body]);
    },
  );
}
