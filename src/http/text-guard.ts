import type { FastifyRequest } from 'fastify';
import { AppError } from '../errors.js';

/**
 * Text the databases cannot hold alike is refused before any route reads it (DESIGN §8):
 * U+0000 (PostgreSQL's `text` refuses it, SQLite stores it) and strings that are not
 * well-formed Unicode (lone surrogates, which a database stores as U+FFFD, so the next read
 * would differ from what the client was told). Every key and value of the JSON body, the
 * query string and the path parameters is checked; multipart fields go through `checkText`
 * too. 400 `invalid_request` names the field.
 */
export function refuseUnstorableText(request: FastifyRequest): void {
  checkText(request.params, 'path');
  checkText(request.query, 'query');
  if (!Buffer.isBuffer(request.body)) checkText(request.body, 'body');
}

const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Bytes read as UTF-8 strictly: null for what is not (a lone or encoded surrogate, an overlong
 * form, a stray Latin-1 byte), which Node's own decoding would turn into U+FFFD, storing text
 * the client did not send. A byte-order mark is left out.
 */
export function strictUtf8(bytes: Uint8Array): string | null {
  try {
    return STRICT_UTF8.decode(bytes);
  } catch {
    return null;
  }
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

function problem(text: string): string | null {
  if (text.includes('\u0000')) return 'contains U+0000 (NUL), which cannot be stored';
  if (LONE_SURROGATE.test(text)) return 'is not well-formed Unicode (a lone surrogate)';
  return null;
}

/** Walks a parsed value (iteratively: a body may nest deeply) and throws at the first bad string. */
export function checkText(value: unknown, location: string): void {
  const stack: Array<[unknown, string]> = [[value, '']];
  while (stack.length > 0) {
    const [item, path] = stack.pop()!;
    if (typeof item === 'string') {
      const why = problem(item);
      if (why) throw unstorable(location, path, why);
    } else if (Array.isArray(item)) {
      for (let i = item.length - 1; i >= 0; i--) stack.push([item[i], `${path}/${i}`]);
    } else if (item !== null && typeof item === 'object') {
      for (const key of Object.keys(item)) {
        const why = problem(key);
        if (why) throw unstorable(location, `${path}/${key.replace(/\u0000/g, '\\u0000')}`, `has a name that ${why}`);
        stack.push([(item as Record<string, unknown>)[key], `${path}/${key}`]);
      }
    }
  }
}

function unstorable(location: string, path: string, why: string): AppError {
  const field =
    path
      .split('/')
      .filter((p) => p !== '' && !/^\d+$/.test(p))
      .at(-1) ?? location;
  return new AppError(
    'invalid_request',
    `The ${location === 'body' ? 'request body' : location === 'query' ? 'query string' : 'path'} field ${field} ${why}.`,
    {
      location,
      path: path || '/',
      field,
    },
  );
}
