// Part of `npm run build`, after rolldown: writes V8's code cache of the bundled CLI
// (dist/cli/copilot-service.bundle.cjs.cache), which dist/cli/copilot-service.cjs compiles the
// bundle from (src/cli/copilot-service.cts). The cache holds the code of every function that had
// run when it was made, so the bundle first runs the validator's commands here, in this
// process, on documents made here (OpenAPI 3 and Swagger 2.0, JSON and YAML), their output
// dropped. It belongs to the Node.js that built it; another one rejects it and compiles as usual.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';

// Run from the package's root, as `npm run build` does (the package test builds a copy elsewhere).
const require = createRequire(path.resolve('package.json'));
const { CODE_CACHE, compileBundle, runBundle } = require(path.resolve('dist/cli/copilot-service.cjs'));
const jsYaml = require('js-yaml');

const operation = (id, extra = {}) => ({
  operationId: id,
  summary: `Do ${id}`,
  parameters: [
    { name: 'id', in: 'path', required: true, schema: { type: 'string' } },
    { name: 'limit', in: 'query', schema: { type: 'integer', maximum: 100 } },
    { name: 'X-Trace', in: 'header', schema: { type: 'string' } },
  ],
  responses: {
    200: { description: 'OK', content: { 'application/json': { schema: { type: 'array', items: { $ref: '#/components/schemas/Item' } } } } },
    404: { description: 'Not found' },
  },
  ...extra,
});

const openApi3 = {
  openapi: '3.0.3',
  info: { title: 'Warm-up', version: '1' },
  servers: [{ url: 'http://{host}/v1', variables: { host: { default: 'example.com' } } }],
  security: [{ key: [] }],
  paths: {
    '/items/{id}': {
      get: operation('getItem'),
      put: operation('put item!', {
        description: 'Replaces the item.',
        requestBody: { required: true, content: { 'application/json': { schema: { $ref: '#/components/schemas/Item' } } } },
      }),
      delete: operation('getItem', { summary: '' }),
    },
    '/items/{id}/parts/{part}': { post: operation('addPart', { requestBody: { content: { 'multipart/form-data': { schema: { type: 'object' } } } } }) },
  },
  components: {
    securitySchemes: { key: { type: 'apiKey', in: 'cookie', name: 'k' } },
    schemas: {
      Item: { type: 'object', required: ['name'], properties: { name: { type: 'string', enum: ['a', 'b'] }, next: { $ref: '#/components/schemas/Item' } } },
    },
  },
};

const swagger2 = {
  swagger: '2.0',
  info: { title: 'Warm-up', version: '1' },
  host: 'example.com',
  basePath: '/v1',
  schemes: ['http'],
  parameters: { Body: { name: 'body', in: 'body', schema: { $ref: '#/definitions/Item' } } },
  paths: {
    '/items': {
      post: { summary: 'Create an item', parameters: [{ $ref: '#/parameters/Body' }], responses: { 201: { description: 'Created', schema: { $ref: '#/definitions/Item' } } } },
      get: { operationId: 'listItems', parameters: [{ name: 'page', in: 'query', type: 'integer' }], responses: { 200: { description: 'OK' } } },
    },
    '/upload': { post: { operationId: 'upload', consumes: ['multipart/form-data'], parameters: [{ name: 'file', in: 'formData', type: 'file' }], responses: {} } },
  },
  definitions: { Item: { type: 'object', properties: { name: { type: 'string' } } } },
};

const dir = mkdtempSync(path.join(os.tmpdir(), 'copilot-service-code-cache-'));
const write = process.stdout.write;
const writeErr = process.stderr.write;
try {
  const files = [];
  for (const [name, doc] of Object.entries({ openApi3, swagger2 })) {
    for (const [ext, text] of [
      ['json', JSON.stringify(doc, null, 2)],
      ['yaml', jsYaml.dump(doc)],
    ]) {
      files.push(path.join(dir, `${name}.${ext}`));
      writeFileSync(files.at(-1), text);
    }
  }
  const commands = [
    ...['json', 'text', 'sarif', 'junit', 'github'].map((format) => ['validate', '--format', format, ...files]),
    ...files.flatMap((file) => [
      ['validate', file],
      ['validate', '--platform', 'openai,gpt_actions', '--fail-on', 'warning', file],
      ...['openai', 'anthropic', 'gemini', 'mcp'].map((platform) => ['tools', file, '--platform', platform]),
      ['fix', file],
      ['fix', '--apply', file],
    ]),
    ['validate', path.join(dir, 'missing.json')],
    ['validate', '--help'],
  ];
  // Each `validate` listens for EPIPE on stdout (a reader that stops early).
  process.stdout.setMaxListeners(commands.length + 10);
  const script = compileBundle();
  process.stdout.write = process.stderr.write = () => true;
  for (const args of commands) {
    process.argv = [process.execPath, 'copilot-service', ...args];
    await runBundle(script).done;
  }
  process.exitCode = 0;
  writeFileSync(CODE_CACHE, script.createCachedData());
} finally {
  process.stdout.write = write;
  process.stderr.write = writeErr;
  rmSync(dir, { recursive: true, force: true });
}
