/**
 * A deterministic generator of realistic OpenAPI 3.0 descriptions for the benchmarks:
 * REST resources (collection + item paths), path/query/header parameters (some by
 * `$ref` to components.parameters), request bodies and responses whose schemas are
 * `$ref`s to components.schemas, and a few operations without operationId, description
 * or summary, so that every linter has findings to report. The same operation count
 * always gives the same bytes.
 *
 *   node dist-bench/bench/generate-openapi.js --operations 1000 --format json --out FILE
 *   node dist-bench/bench/generate-openapi.js --target-bytes 4194304 --out FILE
 */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dump } from 'js-yaml';

export interface GeneratorOptions {
  operations: number;
  /** PRNG seed; the default keeps every generated file stable across runs. */
  seed?: number;
  /** Share of operations with no operationId / description / summary. */
  missingOperationId?: number;
  missingDescription?: number;
  missingSummary?: number;
}

const AREAS = [
  'billing',
  'catalog',
  'crm',
  'inventory',
  'shipping',
  'identity',
  'analytics',
  'support',
  'payments',
  'content',
  'marketing',
  'hr',
  'projects',
  'storage',
  'messaging',
  'compliance',
  'devices',
  'search',
  'scheduling',
  'partners',
];
const NOUNS = [
  'account',
  'invoice',
  'customer',
  'order',
  'product',
  'shipment',
  'payment',
  'refund',
  'subscription',
  'plan',
  'coupon',
  'warehouse',
  'supplier',
  'employee',
  'team',
  'project',
  'task',
  'comment',
  'attachment',
  'document',
  'folder',
  'webhook',
  'event',
  'report',
  'dashboard',
  'metric',
  'alert',
  'device',
  'session',
  'token',
  'role',
  'permission',
  'policy',
  'audit',
  'ticket',
  'campaign',
  'segment',
  'contact',
  'lead',
  'deal',
  'note',
  'message',
  'channel',
  'calendar',
  'booking',
  'location',
  'price',
  'tax',
  'discount',
  'return',
];
const FIELD_TYPES: Array<[string, () => Record<string, unknown>]> = [
  ['name', () => ({ type: 'string', maxLength: 200, description: 'Display name shown to users.' })],
  ['description', () => ({ type: 'string', nullable: true, description: 'Free text, at most 2000 characters.' })],
  ['status', () => ({ type: 'string', enum: ['active', 'pending', 'archived'], description: 'Lifecycle state.' })],
  ['amount', () => ({ type: 'integer', format: 'int64', minimum: 0, description: 'Amount in the smallest currency unit.' })],
  ['currency', () => ({ type: 'string', pattern: '^[A-Z]{3}$', example: 'EUR' })],
  ['email', () => ({ type: 'string', format: 'email' })],
  ['quantity', () => ({ type: 'integer', minimum: 1, maximum: 10000 })],
  ['tags', () => ({ type: 'array', items: { type: 'string' }, maxItems: 20 })],
  ['metadata', () => ({ type: 'object', additionalProperties: { type: 'string' }, description: 'Key-value pairs for your own use.' })],
  ['priority', () => ({ type: 'string', enum: ['low', 'normal', 'high', 'urgent'] })],
  ['url', () => ({ type: 'string', format: 'uri' })],
  ['enabled', () => ({ type: 'boolean', default: true })],
  ['score', () => ({ type: 'number', format: 'double', minimum: 0, maximum: 1 })],
  ['due_date', () => ({ type: 'string', format: 'date' })],
  ['owner_id', () => ({ type: 'string', format: 'uuid', description: 'The user who owns this object.' })],
];

/** mulberry32: small, fast, deterministic. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const cap = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);
const camel = (parts: string[]) => parts.map((p, i) => (i === 0 ? p : cap(p))).join('');
const pascal = (parts: string[]) => parts.map(cap).join('');
const plural = (noun: string) =>
  noun.endsWith('y') && !noun.endsWith('ay') ? `${noun.slice(0, -1)}ies` : noun.endsWith('s') || noun.endsWith('x') ? `${noun}es` : `${noun}s`;

interface Resource {
  area: string;
  noun: string;
  /** Unique per resource: the schema name stem, e.g. BillingInvoice or BillingInvoice2. */
  stem: string;
  collection: string;
  item: string;
  idParam: string;
}

function resourceFor(index: number): Resource {
  const combos = AREAS.length * NOUNS.length;
  const area = AREAS[index % AREAS.length]!;
  const noun = NOUNS[Math.floor(index / AREAS.length) % NOUNS.length]!;
  const round = Math.floor(index / combos);
  const suffix = round === 0 ? '' : `-v${round + 1}`;
  const stem = pascal([area, noun]) + (round === 0 ? '' : String(round + 1));
  const collection = `/${area}/${plural(noun)}${suffix}`;
  const idParam = `${camel([noun])}Id`;
  return { area, noun, stem, collection, item: `${collection}/{${idParam}}`, idParam };
}

type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';
const COLLECTION_METHODS: Method[] = ['get', 'post'];
const ITEM_METHODS: Method[] = ['get', 'put', 'patch', 'delete'];

/** Builds the document as a plain object. */
export function generateOpenApi(options: GeneratorOptions): Record<string, unknown> {
  const rand = prng(options.seed ?? 20240601);
  const pick = <T>(list: readonly T[]) => list[Math.floor(rand() * list.length)]!;
  const missingOperationId = options.missingOperationId ?? 0.06;
  const missingDescription = options.missingDescription ?? 0.09;
  const missingSummary = options.missingSummary ?? 0.05;

  const schemas: Record<string, unknown> = {
    Error: {
      type: 'object',
      required: ['error', 'message'],
      properties: {
        error: { type: 'string', description: 'A snake_case error code.' },
        message: { type: 'string', description: 'A sentence for a person.' },
        details: { type: 'object', additionalProperties: true },
      },
    },
    PageInfo: {
      type: 'object',
      properties: { next_cursor: { type: 'string', nullable: true }, total: { type: 'integer', minimum: 0 } },
    },
  };
  const paths: Record<string, Record<string, unknown>> = {};
  const errorResponse = (description: string) => ({
    description,
    content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
  });

  let made = 0;
  for (let r = 0; made < options.operations; r++) {
    const res = resourceFor(r);
    const fieldCount = 4 + Math.floor(rand() * 8);
    const properties: Record<string, unknown> = {
      id: { type: 'string', format: 'uuid', readOnly: true },
      created_at: { type: 'string', format: 'date-time', readOnly: true },
    };
    const used = new Set<string>();
    for (let f = 0; f < fieldCount; f++) {
      const [name, make] = pick(FIELD_TYPES);
      if (used.has(name)) continue;
      used.add(name);
      properties[name] = make();
    }
    const inputProps = Object.fromEntries(Object.entries(properties).filter(([k]) => k !== 'id' && k !== 'created_at'));
    schemas[res.stem] = { type: 'object', required: ['id'], properties, description: `A ${res.noun} in ${res.area}.` };
    schemas[`${res.stem}Input`] = { type: 'object', properties: inputProps, additionalProperties: false };
    schemas[`${res.stem}List`] = {
      type: 'object',
      properties: { data: { type: 'array', items: { $ref: `#/components/schemas/${res.stem}` } }, page: { $ref: '#/components/schemas/PageInfo' } },
    };

    for (const [path, methods, isItem] of [
      [res.collection, COLLECTION_METHODS, false],
      [res.item, ITEM_METHODS, true],
    ] as const) {
      const item: Record<string, unknown> = {};
      for (const method of methods) {
        if (made >= options.operations) break;
        made++;
        const nouns = isItem ? res.noun : plural(res.noun);
        const verb = { get: isItem ? 'get' : 'list', post: 'create', put: 'replace', patch: 'update', delete: 'delete' }[method];
        const op: Record<string, unknown> = {};
        if (rand() >= missingOperationId)
          op.operationId =
            camel([verb, res.area, ...nouns.split('-')]) + (r >= AREAS.length * NOUNS.length ? String(Math.floor(r / (AREAS.length * NOUNS.length)) + 1) : '');
        if (rand() >= missingSummary) op.summary = `${cap(verb)} ${isItem ? 'a' : 'the'} ${nouns.replace(/-/g, ' ')} in ${res.area}`;
        if (rand() >= missingDescription) {
          op.description =
            `${cap(verb)} ${isItem ? `one ${res.noun} by its id` : `${plural(res.noun)}, newest first, paged with a cursor`}. ` +
            `Requires the \`${res.area}:${method === 'get' ? 'read' : 'write'}\` scope. ` +
            (rand() < 0.5 ? 'Rate limited to 100 requests per minute per key.' : 'Changes are visible to every client at once.');
        }
        op.tags = [res.area];
        const parameters: unknown[] = [];
        if (isItem)
          parameters.push({ name: res.idParam, in: 'path', required: true, description: `The ${res.noun} id.`, schema: { type: 'string', format: 'uuid' } });
        if (!isItem && method === 'get') {
          parameters.push({ $ref: '#/components/parameters/Limit' }, { $ref: '#/components/parameters/Cursor' });
          parameters.push({ name: 'status', in: 'query', required: false, schema: { type: 'string', enum: ['active', 'pending', 'archived'] } });
          if (rand() < 0.5) parameters.push({ name: 'q', in: 'query', description: 'Full-text filter.', schema: { type: 'string', maxLength: 200 } });
        }
        if (rand() < 0.3) parameters.push({ $ref: '#/components/parameters/RequestId' });
        if (parameters.length > 0) op.parameters = parameters;
        if (method === 'post' || method === 'put' || method === 'patch') {
          op.requestBody = {
            required: true,
            content: { 'application/json': { schema: { $ref: `#/components/schemas/${res.stem}Input` } } },
          };
        }
        const responses: Record<string, unknown> = {};
        if (method === 'delete') responses['204'] = { description: 'Deleted.' };
        else {
          const schema = { $ref: `#/components/schemas/${!isItem && method === 'get' ? `${res.stem}List` : res.stem}` };
          responses[method === 'post' ? '201' : '200'] = {
            description: method === 'post' ? 'Created.' : 'OK.',
            content: { 'application/json': { schema } },
            ...(method === 'post' && { headers: { Location: { description: 'The new object.', schema: { type: 'string' } } } }),
          };
        }
        responses['400'] = errorResponse('The request is not valid.');
        responses['401'] = { $ref: '#/components/responses/Unauthorized' };
        if (isItem) responses['404'] = errorResponse(`No ${res.noun} has this id.`);
        op.responses = responses;
        op.security = [{ bearerAuth: [] }];
        item[method] = op;
      }
      if (Object.keys(item).length > 0) paths[path] = item;
    }
  }

  return {
    openapi: '3.0.3',
    info: {
      title: `Generated API (${options.operations} operations)`,
      version: '1.0.0',
      description: 'A generated description for benchmarks: realistic shapes, deterministic content.',
    },
    servers: [{ url: 'https://api.example.com/v1', description: 'Production' }],
    tags: AREAS.map((name) => ({ name, description: `Everything about ${name}.` })),
    paths,
    components: {
      securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer' } },
      parameters: {
        Limit: { name: 'limit', in: 'query', required: false, description: 'Page size.', schema: { type: 'integer', minimum: 1, maximum: 100, default: 20 } },
        Cursor: { name: 'cursor', in: 'query', required: false, description: 'Opaque cursor from the previous page.', schema: { type: 'string' } },
        RequestId: { name: 'X-Request-Id', in: 'header', required: false, description: 'Echoed back for tracing.', schema: { type: 'string', maxLength: 128 } },
      },
      responses: { Unauthorized: errorResponse('The API key is missing or not valid.') },
      schemas,
    },
  };
}

export type OutputFormat = 'json' | 'yaml';

export function serialise(doc: unknown, format: OutputFormat): string {
  return format === 'json' ? `${JSON.stringify(doc, null, 2)}\n` : dump(doc, { noRefs: true, lineWidth: -1 });
}

/** The text of a description with `operations` operations. */
export function generateText(operations: number, format: OutputFormat): string {
  return serialise(generateOpenApi({ operations }), format);
}

/** The largest operation count whose description is at most `targetBytes` (within 0.5 %). */
export function operationsForSize(targetBytes: number, format: OutputFormat): number {
  const probe = 500;
  let n = Math.max(1, Math.round((targetBytes / Buffer.byteLength(generateText(probe, format))) * probe));
  for (let i = 0; i < 6; i++) {
    const size = Buffer.byteLength(generateText(n, format));
    if (size <= targetBytes && size > targetBytes * 0.995) return n;
    n = Math.max(1, Math.floor((n * targetBytes) / size) - (size > targetBytes ? 1 : 0));
  }
  return n;
}

function main(argv: string[]): void {
  const args = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const key = argv[i]!;
    if (!key.startsWith('--')) throw new Error(`Unexpected argument ${key}`);
    args.set(key.slice(2), argv[++i] ?? '');
  }
  const format = (args.get('format') ?? 'json') as OutputFormat;
  if (format !== 'json' && format !== 'yaml') throw new Error('--format must be json or yaml');
  const target = args.get('target-bytes');
  const operations = target ? operationsForSize(Number(target), format) : Number(args.get('operations') ?? '1000');
  if (!Number.isInteger(operations) || operations < 1) throw new Error('--operations must be a positive whole number');
  const text = generateText(operations, format);
  const out = args.get('out');
  if (out) {
    writeFileSync(out, text);
    process.stderr.write(`${out}: ${operations} operations, ${Buffer.byteLength(text)} bytes\n`);
  } else {
    process.stdout.write(text);
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) main(process.argv.slice(2));
