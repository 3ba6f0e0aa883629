import { isPlainObject } from '../problems.js';
import { resolveLocalRefWithPointer } from '../refs.js';
import { child, finding, type Platform, type RuleFamily } from './rule.js';
import { mediaTypeEssence } from '../media-types.js';

const JSON_MEDIA_TYPE = /^application\/(?:[\w.+-]+\+)?json$|^\*\/\*$|^application\/\*$/;
const FORM_MEDIA_TYPE = 'application/x-www-form-urlencoded';
const LLM_PLATFORMS: readonly Platform[] = ['openai', 'gpt_actions', 'anthropic', 'gemini', 'mcp'];

/**
 * request-media-type-unsupported: a request body a model cannot write. A model writes JSON
 * arguments; a converter sends them as JSON or as a flat form. A body offered only as XML,
 * plain text, multipart or bytes needs an encoder the platforms do not have.
 */
export const requestBodyRules: RuleFamily = {
  rules: {
    'request-media-type-unsupported': 'A request body only in media types a model cannot write (neither JSON nor a form).',
  },
  check(ctx) {
    for (let i = 0; i < ctx.endpoints.length; i++) {
      const written = ctx.endpoints[i]!.requestBody;
      // A `$ref` is resolved with where its target is written (null for a body written here): the finding points there.
      const resolved = resolveLocalRefWithPointer(ctx.doc, written);
      const body = resolved === null ? written : resolved.target;
      if (!isPlainObject(body) || !isPlainObject(body.content)) continue;
      const types = Object.keys(body.content);
      if (types.length === 0) continue;
      let usable = false;
      for (const t of types) {
        const essence = mediaTypeEssence(t);
        if (JSON_MEDIA_TYPE.test(essence) || essence === FORM_MEDIA_TYPE) {
          usable = true;
          break;
        }
      }
      if (usable) continue;
      const op = ctx.sources[i]!.pointer;
      const pointer = ctx.swagger2
        ? Object.hasOwn(ctx.sources[i]!.operation, 'consumes')
          ? child(op, 'consumes')
          : op
        : child(resolved === null ? child(op, 'requestBody') : resolved.pointer, 'content');
      ctx.emit(
        finding(
          'request-media-type-unsupported',
          'warning',
          i,
          pointer,
          `The request body is only ${types.slice(0, 3).join(', ')}${types.length > 3 ? ', …' : ''}: a model writes JSON arguments, so the tool needs a JSON (or form) body to be called as described.`,
          LLM_PLATFORMS,
        ),
      );
    }
  },
};
