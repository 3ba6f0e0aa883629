import { isPlainObject } from '../problems.js';
import { resolveLocalRef } from '../refs.js';
import { ALL_PLATFORMS, child, finding, type RuleFamily } from './rule.js';
import { mediaTypeEssence } from '../media-types.js';
import { groupDigits } from '../../../text/numbers.js';

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
 *
 * response-error-undocumented (info): an operation that documents its responses documents no
 * error (4xx, 5xx, `4XX`, `5XX` or `default`), so when a call fails the model learns nothing
 * of why. One cause, one finding: when no operation of the document documents an error, a
 * single finding on the document (`/paths`) rather than one per operation; otherwise one per
 * operation that lacks what the others have. Operations documenting no response at all are
 * left out (nothing there to add an error beside).
 */
export const responseRules: RuleFamily = {
  rules: {
    'response-unbounded': 'A success response is a list with no bound (no maxItems, no limit or page-size parameter).',
    'response-error-undocumented': 'No error response is documented: the model cannot tell why a call failed.',
  },
  check(ctx) {
    const withoutErrors: number[] = [];
    let documented = 0;
    // Whether each schema carries an unbounded list, read once: operations share their schemas.
    const lists = new Map<Record<string, unknown>, boolean>();
    for (let i = 0; i < ctx.endpoints.length; i++) {
      const e = ctx.endpoints[i]!;
      const written = ctx.sources[i]!.operation.responses;
      // OpenAPI 3's endpoint holds the responses as written: their keys are read once.
      const keys = isPlainObject(written) ? readKeys(written) : NO_KEYS;
      if (keys.documents !== NOTHING) {
        documented++;
        if (keys.documents === NO_ERROR) withoutErrors.push(i);
      }
      const success = e.responseBody === written ? keys.success : readKeys(e.responseBody).success;
      const found = success === null ? null : unboundedSuccess(ctx.doc, e.responseBody, success, lists);
      if (found === null || hasBoundingParameter(ctx.doc, e.requestParameters)) continue;
      const source = ctx.sources[i]!;
      const response = isPlainObject(written) ? written[found.status] : undefined;
      const inline = !ctx.swagger2 && isPlainObject(response) && typeof response.$ref !== 'string';
      ctx.emit(
        finding(
          'response-unbounded',
          'warning',
          i,
          inline ? child(source.pointer, 'responses', found.status, 'content', found.mediaType) : child(source.pointer, 'responses', found.status),
          `The ${found.status} response is a list with no bound (no maxItems, no limit or page-size parameter): GPT Actions fails a call whose answer exceeds ${groupDigits(GPT_ACTIONS_PAYLOAD_MAX)} characters, and every platform pays for a long answer in context.`,
          ['gpt_actions'],
        ),
      );
    }
    if (withoutErrors.length === 0) return;
    if (withoutErrors.length === documented) {
      ctx.emit(
        finding(
          'response-error-undocumented',
          'info',
          null,
          '/paths',
          'No operation documents an error response (4xx, 5xx or default): when a call fails, the model cannot tell why, or whether to retry, fix its arguments or ask the user.',
          ALL_PLATFORMS,
        ),
      );
      return;
    }
    for (const i of withoutErrors) {
      ctx.emit(
        finding(
          'response-error-undocumented',
          'info',
          i,
          child(ctx.sources[i]!.pointer, 'responses'),
          'No error response (4xx, 5xx or default) is documented, as other operations of this API document theirs: when a call fails, the model cannot tell why.',
          ALL_PLATFORMS,
        ),
      );
    }
  },
};

const NOTHING = 0;
const NO_ERROR = 1;
const AN_ERROR = 2;

interface ResponseKeys {
  /** NOTHING (no key but `x-` extensions), AN_ERROR (a `default` response, or a status code or range of the 4xx or 5xx class), else NO_ERROR. */
  documents: number;
  /** The success status: the first 2xx code or range, else `default`; null when none. */
  success: string | null;
}

const NO_KEYS: ResponseKeys = { documents: NOTHING, success: null };

/** Status codes looked up before the keys are listed: the least success codes, in order, and the commonest errors. */
const FIRST_SUCCESSES = ['200', '201', '202', '203', '204'];
const COMMON_ERRORS = ['400', '401', '403', '404', '422', '500', 'default'];

/**
 * What responses document. Numeric keys make an object's keys slow to list, so the commonest
 * case is answered by looking keys up: one of the least success codes (the first found comes
 * before any other 2xx: numeric keys are listed in ascending order, ranges such as `2XX` after
 * them) beside one of the commonest errors. Otherwise the keys are read in one pass.
 */
function readKeys(responses: Record<string, unknown>): ResponseKeys {
  for (let k = 0; k < FIRST_SUCCESSES.length; k++) {
    if (!Object.hasOwn(responses, FIRST_SUCCESSES[k]!)) continue;
    for (let e = 0; e < COMMON_ERRORS.length; e++) {
      if (Object.hasOwn(responses, COMMON_ERRORS[e]!)) return { documents: AN_ERROR, success: FIRST_SUCCESSES[k]! };
    }
    break;
  }
  let documents = NOTHING;
  let success: string | null = null;
  let fallback = false;
  for (const key in responses) {
    if (key.length === 3 && key[0] === '2') success ??= key;
    else if (key === 'default' || (key.length === 3 && (key[0] === '4' || key[0] === '5'))) {
      documents = AN_ERROR;
      fallback ||= key === 'default';
    }
    if (documents === NOTHING && !key.startsWith('x-')) documents = NO_ERROR;
  }
  return { documents, success: success ?? (fallback ? 'default' : null) };
}

/** Whether the success response (`status`) has a JSON schema that is an unbounded list; with its media type. */
function unboundedSuccess(
  doc: Record<string, unknown>,
  responses: Record<string, unknown>,
  status: string,
  lists: Map<Record<string, unknown>, boolean>,
): { status: string; mediaType: string } | null {
  const response = resolveLocalRef(doc, responses[status]);
  if (!response || !isPlainObject(response.content)) return null;
  for (const mediaType in response.content) {
    if (mediaType !== 'application/json' && !JSON_MEDIA_TYPE.test(mediaTypeEssence(mediaType))) continue;
    const media = response.content[mediaType];
    const schema = isPlainObject(media) ? resolveLocalRef(doc, media.schema) : null;
    if (schema === null) continue;
    let carries = lists.get(schema);
    if (carries === undefined) {
      carries = carriesUnboundedList(doc, schema);
      lists.set(schema, carries);
    }
    if (carries) return { status, mediaType };
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

const ENVELOPE_SHORTEST = Math.min(...[...ENVELOPE_LISTS].map((name) => name.length));
const ENVELOPE_LONGEST = Math.max(...[...ENVELOPE_LISTS].map((name) => name.length));

/** The schema is an unbounded list, or a list envelope whose list is. */
function carriesUnboundedList(doc: Record<string, unknown>, schema: Record<string, unknown>): boolean {
  if (isUnboundedList(schema)) return true;
  if (!isPlainObject(schema.properties)) return false;
  for (const name in schema.properties) {
    // A name of another length is not lowered to be looked up.
    if (name.length < ENVELOPE_SHORTEST || name.length > ENVELOPE_LONGEST || !ENVELOPE_LISTS.has(name.toLowerCase())) continue;
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
