import { createRequire } from 'node:module';
import type * as JsYaml from 'js-yaml';
import { AppError } from '../../errors.js';
import { countMembers, duplicateKeyError, membersAtMost, parseJson, tooDeepError, type DecodedJson } from './json.js';
import { at, invalidDocument, positionOfIndex } from './problems.js';
import { REFS_SEEN_WHEN_PARSED } from './refs.js';
import { checkRoot } from './root-check.js';
import type { ApiDocument, DocumentFormat, DocumentSource, ParseOptions } from './types.js';
import { mediaTypeEssence } from './media-types.js';

/**
 * Reading an API description: JSON or YAML, guarded against hostile input (nesting
 * depth, alias expansion, duplicate keys, object-constructing tags), then root-checked.
 * Throws `AppError('invalid_swagger_file')` with `{line, column}` or `{pointer}` in its
 * details when the document cannot be used.
 */

export const DEFAULT_MAX_DEPTH = 256;

export function parseDocument(src: DocumentSource, opts: ParseOptions = {}): unknown {
  return parseDocumentWithFormat(src, opts).doc;
}

export function parseDocumentWithFormat(src: DocumentSource, opts: ParseOptions = {}): { doc: ApiDocument; format: DocumentFormat } {
  const { bytes } = src;
  if (opts.maxBytes !== undefined && bytes.length > opts.maxBytes) {
    throw new AppError('payload_too_large', `The API description is larger than ${opts.maxBytes} bytes.`, { max_bytes: opts.maxBytes });
  }
  const maxDepth = opts.maxDepth ?? DEFAULT_MAX_DEPTH;
  const format = detectFormat(src);
  const decoded = decode(bytes);
  if (decoded.text.trim() === '') throw invalidDocument('The document is empty.');

  let doc: unknown;
  if (format === 'json') {
    doc = parseJson(decoded, maxDepth, opts.scanNestingFirst ?? true);
    if (typeof doc === 'object' && doc !== null) {
      const keys = measureTree(doc, maxDepth, Infinity, () => tooDeepError(decoded, maxDepth));
      // Fewer keys than members: an object repeats a key. The cheap bound first; the
      // exact count only when the bound is loose (a string such as ":smile:").
      if (keys !== membersAtMost(decoded.text) && keys !== countMembers(decoded.text)) {
        const duplicate = duplicateKeyError(decoded, maxDepth);
        if (duplicate) throw duplicate;
      }
    }
  } else {
    doc = parseYaml(decoded.text, maxDepth, mergedKeysBound(bytes.length));
    const maxNodes = opts.maxExpandedNodes ?? 1_000_000 + 2 * bytes.length;
    if (typeof doc === 'object' && doc !== null) measureTree(doc, maxDepth, maxNodes, () => null);
  }
  checkRoot(doc);
  return { doc, format };
}

/**
 * Which parser a document goes to: its media type when that names JSON or YAML, else the
 * file name's extension, else the first non-blank character (`{` is JSON, anything
 * else YAML).
 */
export function detectFormat(src: DocumentSource): DocumentFormat {
  return formatFromMediaType(src.mediaType) ?? formatFromFileName(src.fileName) ?? sniffFormat(src.bytes);
}

function formatFromMediaType(mediaType: string | null | undefined): DocumentFormat | null {
  if (!mediaType) return null;
  const essence = mediaTypeEssence(mediaType);
  if (essence === 'application/json' || essence === 'text/json' || essence.endsWith('+json')) return 'json';
  if (
    essence === 'application/yaml' ||
    essence === 'application/x-yaml' ||
    essence === 'text/yaml' ||
    essence === 'text/x-yaml' ||
    essence === 'application/vnd.oai.openapi' ||
    essence.endsWith('+yaml')
  ) {
    return 'yaml';
  }
  return null;
}

function formatFromFileName(fileName: string | null | undefined): DocumentFormat | null {
  if (!fileName) return null;
  const name = fileName.split(/[?#]/, 1)[0]!.toLowerCase();
  if (name.endsWith('.json')) return 'json';
  if (name.endsWith('.yaml') || name.endsWith('.yml')) return 'yaml';
  return null;
}

function sniffFormat(bytes: Uint8Array): DocumentFormat {
  let i = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0;
  for (; i < bytes.length; i++) {
    const c = bytes[i]!;
    if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) continue;
    return c === 0x7b ? 'json' : 'yaml';
  }
  return 'yaml';
}

/** The document as text (a byte-order mark dropped) and as the UTF-8 bytes the JSON scan reads. */
function decode(bytes: Buffer): DecodedJson {
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) {
    return { text: bytes.toString('utf8', 3), utf8: bytes, start: 3 };
  }
  if ((bytes[0] === 0xff && bytes[1] === 0xfe) || (bytes[0] === 0xfe && bytes[1] === 0xff)) {
    let body = bytes.subarray(2, bytes.length - (bytes.length % 2));
    if (bytes[0] === 0xfe) body = Buffer.from(body).swap16(); // big-endian: swap a copy
    const text = body.toString('utf16le');
    return { text, utf8: Buffer.from(text, 'utf8'), start: 0 };
  }
  return { text: bytes.toString('utf8'), utf8: bytes, start: 0 };
}

/**
 * The bounded walk after parsing; returns the object keys it met. Nesting deeper than
 * `maxDepth` (which also catches the cycles a self-referencing YAML alias makes) and more
 * than `maxNodes` values once aliases are followed (a "billion laughs" document is a few
 * hundred bytes that expand to billions of values) are refused before anything else
 * walks or serialises the tree. `tooDeep` may name where the text is too deep.
 */
function measureTree(root: object, maxDepth: number, maxNodes: number, tooDeep: () => AppError | null): number {
  let nodes = 0;
  let keys = 0;
  const refs = new Set<string>();
  const visit = (value: object, depth: number): void => {
    if (depth > maxDepth) {
      throw (
        tooDeep() ??
        invalidDocument(`The document is nested more than ${maxDepth} levels deep (or refers to itself through an alias).`, {
          max_depth: maxDepth,
        })
      );
    }
    if (Array.isArray(value)) {
      nodes += value.length + 1;
      if (nodes > maxNodes) throw tooLarge(maxNodes);
      for (let i = 0; i < value.length; i++) {
        const item: unknown = value[i];
        if (typeof item === 'object' && item !== null) visit(item, depth + 1);
      }
    } else {
      let own = 0;
      for (const key in value) {
        own++;
        const item: unknown = (value as Record<string, unknown>)[key];
        if (typeof item === 'object' && item !== null) visit(item, depth + 1);
        else if (key === '$ref' && typeof item === 'string') refs.add(item);
      }
      keys += own;
      nodes += own + 1;
      if (nodes > maxNodes) throw tooLarge(maxNodes);
    }
  };
  visit(root, 1);
  REFS_SEEN_WHEN_PARSED.set(root, refs);
  return keys;
}

function tooLarge(maxNodes: number) {
  return invalidDocument(`The document expands to more than ${maxNodes} values once its YAML aliases are followed.`, {
    max_nodes: maxNodes,
  });
}

/**
 * YAML with js-yaml (about six times faster than `yaml` on large documents), loaded on
 * first use so a JSON-only process never pays for it. The schema is the YAML 1.2 core
 * schema: no tag constructs objects (`!!js/function`, `!!python/object`, custom tags and
 * even `!!binary`/`!!timestamp` are refused), dates stay strings, duplicate keys are
 * errors. It follows aliases by reference, so `measureTree` bounds depth (cycles
 * included) and the expanded size afterwards.
 *
 * Plus merge keys (`<<: *defaults`, YAML 1.1's, which real API descriptions use to share
 * fields): a plain `<<` copies the keys of the mapping (or mappings) it names that the
 * mapping does not set itself, as every YAML tool that reads them does. Copies are real
 * keys, not shared references, so js-yaml counts them as it merges and stops past
 * `mergedKeysBound`: a few bytes that merge a large mapping many times cannot take the
 * time and memory an alias bomb cannot.
 */
const require = createRequire(import.meta.url);
let jsYaml: typeof JsYaml | undefined;

/**
 * A value as YAML, as the service and the CLI write what they make (an Overlay, a fixed
 * document): every alias expanded (`noRefs`), no line folded.
 */
export function writeYaml(value: unknown): string {
  return yaml().dump(value, { noRefs: true, lineWidth: -1 });
}

/**
 * The most keys a document's merge keys may copy, counted as js-yaml counts them (each
 * key of each merged mapping, and each merge): 10,000 and 4 a byte of the document, at
 * most a million. A million take about 90 MB and a quarter of a second, so the work is
 * bounded by the document's size as its parse is: a merge (`- {<<: *d}`) is 10 bytes,
 * and a document that shares fields this way copies a few keys a merge, not hundreds.
 */
export const MAX_MERGED_KEYS = 1_000_000;

export function mergedKeysBound(bytes: number): number {
  return Math.min(MAX_MERGED_KEYS, 10_000 + 4 * bytes);
}

/** js-yaml, loaded on first use. */
function yaml(): typeof JsYaml {
  jsYaml ??= require('js-yaml') as typeof JsYaml;
  return jsYaml;
}

let coreWithMerge: JsYaml.Schema | undefined;

function parseYaml(text: string, maxDepth: number, maxMergedKeys: number): unknown {
  const jsYaml = yaml();
  coreWithMerge ??= jsYaml.CORE_SCHEMA.withTags(jsYaml.mergeTag);
  // js-yaml counts the document itself as a level; measureTree applies the exact limit.
  const options = { schema: coreWithMerge, maxDepth: maxDepth + 2, maxTotalMergeKeys: maxMergedKeys };
  try {
    return jsYaml.load(text, options);
  } catch (err) {
    if (isComplexKeyError(err)) throw complexKeyError(text, options);
    throw yamlError(err, maxDepth, maxMergedKeys);
  }
}

const COMPLEX_KEY = 'object-based map does not support complex keys';

function isComplexKeyError(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as YamlExceptionLike).reason === COMPLEX_KEY;
}

/**
 * A mapping or sequence used as a key (`? [a, b]`, `{a: 1}: x`): an object cannot hold it.
 * js-yaml places this error at the start of the text, so the key is found in its events
 * (the error path only; the text parsed, so they parse).
 */
function complexKeyError(text: string, options: JsYaml.ParserOptions) {
  const { EVENT_ID, parseEvents } = yaml();
  // Each open collection: null for a sequence; for a mapping, whether its next node is a key.
  const open: (boolean | null)[] = [];
  let events: ReturnType<typeof parseEvents> = [];
  try {
    events = parseEvents(text, options);
  } catch {
    // Not expected (load reads the events before it builds anything): the error without a position.
  }
  for (const event of events) {
    if (event.type === EVENT_ID.POP) {
      open.pop();
      continue;
    }
    if (event.type === EVENT_ID.DOCUMENT) continue;
    const parent = open.length - 1;
    const isKey = parent >= 0 && open[parent] === true;
    if (isKey && (event.type === EVENT_ID.MAPPING || event.type === EVENT_ID.SEQUENCE)) {
      const position = positionOfIndex(text, event.start);
      return invalidDocument(`The document is not valid YAML: a mapping or sequence is used as a key ${at(position)}.`, { ...position });
    }
    if (parent >= 0 && open[parent] !== null) open[parent] = !isKey;
    if (event.type === EVENT_ID.MAPPING) open.push(true);
    else if (event.type === EVENT_ID.SEQUENCE) open.push(null);
  }
  return invalidDocument('The document is not valid YAML: a mapping or sequence is used as a key.');
}

interface YamlExceptionLike {
  reason?: unknown;
  mark?: { line?: unknown; column?: unknown } | null;
}

function yamlError(err: unknown, maxDepth: number, maxMergedKeys: number) {
  const e = (typeof err === 'object' && err !== null ? err : {}) as YamlExceptionLike;
  const reason = typeof e.reason === 'string' && e.reason !== '' ? e.reason : err instanceof RangeError ? 'the document is too complex' : 'unreadable';
  const mark = e.mark;
  const position = mark && typeof mark.line === 'number' && typeof mark.column === 'number' ? { line: mark.line + 1, column: mark.column + 1 } : null;
  const where = position ? ` ${at(position)}` : '';
  if (reason.startsWith('nesting exceeded maxDepth')) {
    return invalidDocument(`The document is nested more than ${maxDepth} levels deep${where}.`, { ...position, max_depth: maxDepth });
  }
  if (reason.startsWith('merge keys exceeded maxTotalMergeKeys')) {
    return invalidDocument(`The document's YAML merge keys (<<) copy more than ${maxMergedKeys} keys${where}.`, {
      ...position,
      max_merged_keys: maxMergedKeys,
    });
  }
  if (reason === 'expected a document, but the input is empty') return invalidDocument('The document is empty.');
  if (position) return invalidDocument(`The document is not valid YAML: ${reason}${where}.`, { ...position });
  return invalidDocument(`The document is not valid YAML: ${reason}.`);
}
