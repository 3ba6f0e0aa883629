import { isPlainObject } from '../problems.js';
import { resolveLocalRef } from '../refs.js';
import { child, finding, type RuleFamily } from './rule.js';
import { mediaTypeEssence } from '../media-types.js';

/** GPT Actions: request and response payloads under 100,000 characters (docs/platform-rules.md). */
export const GPT_ACTIONS_PAYLOAD_MAX = 100_000;

/** Parameters by which a caller bounds a list: `limit`, `per_page`, `pageSize`, `$top`, `maxResults`, … */
const BOUNDING_PARAMETER = /^\$?(limit|top|first|last|count|size|take|per_?page|page_?size|max_?results|max_?items|results_?per_?page|num)$/i;
const JSON_MEDIA_TYPE = /^application\/(?:[\w.+-]+\+)?json$|^\*\/\*$/;

/**
 * response-unbounded: the success response is a list (or a list envelope, `{data: […]}`) with
 * no `maxItems`, and the operation takes no parameter that bounds
 * it (`limit`, `per_page`, `$top`, …). Nothing then keeps the answer under GPT Actions'
 * 100,000 characters, past which the call fails; other platforms pay for it in context.
 * A warning: the document cannot say how long real answers are, only that nothing bounds them.
 */
export const responseRules: RuleFamily = {
  ids: ['response-unbounded'],
  check(ctx) {
    for (let i = 0; i < ctx.endpoints.length; i++) {
      const e = ctx.endpoints[i]!;
      const found = unboundedSuccess(ctx.doc, e.responseBody);
      if (found === null || hasBoundingParameter(ctx.doc, e.requestParameters)) continue;
      const source = ctx.sources[i]!;
      const written = isPlainObject(source.operation.responses) ? source.operation.responses[found.status] : undefined;
      const inline = !ctx.swagger2 && isPlainObject(written) && typeof written.$ref !== 'string';
      ctx.emit(
        finding(
          'response-unbounded',
          'warning',
          i,
          inline ? child(source.pointer, 'responses', found.status, 'content', found.mediaType) : child(source.pointer, 'responses', found.status),
          `The ${found.status} response is a list with no bound (no maxItems, no limit or page-size parameter): GPT Actions fails a call whose answer exceeds ${GPT_ACTIONS_PAYLOAD_MAX.toLocaleString('en-US')} characters, and every platform pays for a long answer in context.`,
          ['gpt_actions'],
        ),
      );
    }
  },
};

/** The first success status (2xx, else `default`) whose JSON schema is an unbounded list, with its media type. */
function unboundedSuccess(doc: Record<string, unknown>, responses: Record<string, unknown>): { status: string; mediaType: string } | null {
  let status: string | null = null;
  for (const key in responses) {
    if (key.length === 3 && key[0] === '2') {
      status = key;
      break;
    }
  }
  if (status === null && Object.hasOwn(responses, 'default')) status = 'default';
  if (status === null) return null;
  const response = resolveLocalRef(doc, responses[status]);
  if (!response || !isPlainObject(response.content)) return null;
  for (const mediaType in response.content) {
    if (mediaType !== 'application/json' && !JSON_MEDIA_TYPE.test(mediaTypeEssence(mediaType))) continue;
    const media = response.content[mediaType];
    const schema = isPlainObject(media) ? resolveLocalRef(doc, media.schema) : null;
    if (schema && carriesUnboundedList(doc, schema)) return { status, mediaType };
  }
  return null;
}

function isUnboundedList(schema: Record<string, unknown>): boolean {
  return (schema.type === 'array' || (schema.type === undefined && schema.items !== undefined)) && typeof schema.maxItems !== 'number';
}

/**
 * The names list envelopes give their list (`{data: […]}`, OData's and Azure's `value`,
 * Spring's `content`, GraphQL-style `edges`/`nodes`): an array under another name (a pet's
 * `photoUrls`) is a field of one object, not the answer's list.
 */
const ENVELOPE_LISTS = new Set([
  'data',
  'items',
  'results',
  'records',
  'values',
  'value',
  'entries',
  'list',
  'elements',
  'objects',
  'hits',
  'edges',
  'nodes',
  'content',
  'rows',
]);

/** The schema is an unbounded list, or a list envelope whose list is. */
function carriesUnboundedList(doc: Record<string, unknown>, schema: Record<string, unknown>): boolean {
  if (isUnboundedList(schema)) return true;
  if (!isPlainObject(schema.properties)) return false;
  for (const name in schema.properties) {
    if (!ENVELOPE_LISTS.has(name.toLowerCase())) continue;
    const property = resolveLocalRef(doc, schema.properties[name]);
    if (property && isUnboundedList(property)) return true;
  }
  return false;
}

function hasBoundingParameter(doc: Record<string, unknown>, parameters: readonly Record<string, unknown>[] | null): boolean {
  if (parameters === null) return false;
  for (const written of parameters) {
    const p = resolveLocalRef(doc, written);
    if (p && p.in === 'query' && typeof p.name === 'string' && BOUNDING_PARAMETER.test(p.name)) return true;
  }
  return false;
}
