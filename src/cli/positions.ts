import { createRequire } from 'node:module';
import type * as Jsonc from 'jsonc-parser';
import type * as JsYaml from 'js-yaml';
import type { DocumentFormat, DocumentSource } from '../domain/validator/index.js';

/**
 * Line and column (1-based, columns in UTF-16 code units as editors count them) of JSON
 * pointers in a document's text, for the formats that show where a finding is (text, sarif,
 * junit, github). The document is read a second time, with positions: JSON by jsonc-parser,
 * YAML by js-yaml's events. Only those formats pay for it; `json` never loads this.
 * A pointer that goes past the text (into a value an alias repeats, say) is placed at the
 * deepest node it reaches; a member is placed at its key, so an editor lands on the name.
 */

export interface Position {
  line: number;
  column: number;
}

export type Locate = (pointer: string) => Position;

const require = createRequire(import.meta.url);

export async function positionsOf(src: DocumentSource, format: DocumentFormat): Promise<Locate> {
  const text = decode(src.bytes);
  const lines = lineStarts(text);
  const at = (offset: number): Position => {
    let lo = 0;
    let hi = lines.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (lines[mid]! <= offset) lo = mid;
      else hi = mid - 1;
    }
    return { line: lo + 1, column: offset - lines[lo]! + 1 };
  };
  const offsetOf = format === 'json' ? jsonOffsets(text) : yamlOffsets(text);
  const cache = new Map<string, Position>();
  return (pointer) => {
    let position = cache.get(pointer);
    if (position === undefined) {
      position = at(offsetOf(segments(pointer)));
      cache.set(pointer, position);
    }
    return position;
  };
}

function decode(bytes: Buffer): string {
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) return bytes.toString('utf8', 3);
  if ((bytes[0] === 0xff && bytes[1] === 0xfe) || (bytes[0] === 0xfe && bytes[1] === 0xff)) {
    let body = bytes.subarray(2, bytes.length - (bytes.length % 2));
    if (bytes[0] === 0xfe) body = Buffer.from(body).swap16();
    return body.toString('utf16le');
  }
  return bytes.toString('utf8');
}

function lineStarts(text: string): number[] {
  const starts = [0];
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) starts.push(i + 1);
  return starts;
}

/** RFC 6901: `/a~1b/0` → ['a/b', '0']. */
function segments(pointer: string): string[] {
  if (pointer === '') return [];
  return pointer
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}

/** The last element that matches (Array.prototype.findLast is ES2023). */
function last<T>(items: readonly T[], match: (item: T) => boolean): T | undefined {
  for (let i = items.length - 1; i >= 0; i--) if (match(items[i]!)) return items[i];
  return undefined;
}

function jsonOffsets(text: string): (path: string[]) => number {
  const jsonc = require('jsonc-parser') as typeof Jsonc;
  const root = jsonc.parseTree(text, [], { allowTrailingComma: false, disallowComments: true });
  return (path) => {
    let node = root;
    if (node === undefined) return 0;
    let offset = node.offset;
    for (const segment of path) {
      let next: Jsonc.Node | undefined;
      if (node.type === 'object') {
        // The last member of a name wins, as JSON.parse reads it.
        const member: Jsonc.Node | undefined = last(node.children ?? [], (p) => p.children?.[0]?.value === segment);
        if (member?.children?.[1] !== undefined) {
          offset = member.offset;
          next = member.children[1];
        }
      } else if (node.type === 'array' && /^(0|[1-9]\d*)$/.test(segment)) {
        next = node.children?.[Number(segment)];
        if (next !== undefined) offset = next.offset;
      }
      if (next === undefined) break;
      node = next;
    }
    return offset;
  };
}

/** A YAML node as the locator needs it: where it starts, and its members or items. */
interface YamlNode {
  start: number;
  members?: Map<string, { keyStart: number; value: YamlNode }>;
  /** The values of a mapping's merge keys (`<<: *a`, `<<: [*a, *b]`), in order. */
  merges?: YamlNode[];
  items?: YamlNode[];
  /** An alias: the node its anchor named when the alias was written (a later anchor of that name is another). */
  target?: YamlNode;
}

/** How many merges and aliases a lookup follows from one node (a merge cycle is refused by the parser; this bounds it anyway). */
const MAX_HOPS = 64;

/**
 * YAML from js-yaml's event stream (the parser the validator uses; source offsets on every
 * event, and about ten times faster than the `yaml` package's CST on large documents): a
 * light tree of starts, members by key and items, aliases tied to their anchor as read, merge
 * keys' sources looked in when a mapping does not write a key itself.
 */
function yamlOffsets(text: string): (path: string[]) => number {
  const jsYaml = require('js-yaml') as typeof JsYaml;
  const { EVENT_ID } = jsYaml;
  const events = jsYaml.parseEvents(text, { maxDepth: 10_000 });
  const anchors = new Map<string, YamlNode>();
  const anchorName = (start: number, end: number) => text.slice(start, end).replace(/^[&*]/, '');
  let root: YamlNode | undefined;
  // Open collections; for a mapping, the key read and waiting for its value.
  const stack: { node: YamlNode; key?: { name: string | null; start: number; merge: boolean } }[] = [];
  for (const event of events) {
    if (event.type === EVENT_ID.POP) {
      stack.pop();
      continue;
    }
    if (event.type === EVENT_ID.DOCUMENT) continue;
    let node: YamlNode;
    let name: string | null = null;
    let merge = false;
    if (event.type === EVENT_ID.SCALAR) {
      // A quoted scalar's value starts after its quote; the node, at the quote.
      const quoted = event.style === jsYaml.SCALAR_STYLE_SINGLE_QUOTED || event.style === jsYaml.SCALAR_STYLE_DOUBLE_QUOTED;
      node = { start: quoted ? event.valueStart - 1 : event.valueStart };
      const parent = stack[stack.length - 1];
      if (parent?.node.members !== undefined && parent.key === undefined) {
        name = jsYaml.getScalarValue(text, event);
        // A plain `<<` is a merge key (as the validator reads it); a quoted one is a key.
        merge = name === '<<' && event.style === jsYaml.SCALAR_STYLE_PLAIN;
      }
    } else if (event.type === EVENT_ID.ALIAS) node = { start: event.anchorStart, target: anchors.get(anchorName(event.anchorStart, event.anchorEnd)) };
    else if (event.type === EVENT_ID.MAPPING) node = { start: event.start, members: new Map() };
    else node = { start: event.start, items: [] };
    if ('anchorStart' in event && event.type !== EVENT_ID.ALIAS && event.anchorStart >= 0) anchors.set(anchorName(event.anchorStart, event.anchorEnd), node);
    const parent = stack[stack.length - 1];
    if (parent === undefined) root ??= node;
    else if (parent.node.items !== undefined) parent.node.items.push(node);
    else if (parent.key === undefined) parent.key = { name, start: node.start, merge };
    else {
      if (parent.key.merge) {
        parent.node.merges ??= [];
        parent.node.merges.push(node);
      } else if (parent.key.name !== null) parent.node.members!.set(parent.key.name, { keyStart: parent.key.start, value: node });
      parent.key = undefined;
    }
    if (node.members !== undefined || node.items !== undefined) stack.push({ node });
  }
  const resolve = (node: YamlNode | undefined) => {
    for (let hops = 0; node?.target !== undefined && hops < MAX_HOPS; hops++) node = node.target;
    return node?.target === undefined ? node : undefined;
  };
  // A mapping's member: its own, else the first merge source (a mapping, or a sequence of them) holding it.
  const member = (node: YamlNode, key: string, hops: number): { keyStart: number; value: YamlNode } | undefined => {
    const own = node.members?.get(key);
    if (own !== undefined || node.merges === undefined || hops >= MAX_HOPS) return own;
    for (const merged of node.merges) {
      const source = resolve(merged);
      for (const item of source?.items ?? [source]) {
        const mapping = resolve(item);
        const found = mapping?.members === undefined ? undefined : member(mapping, key, hops + 1);
        if (found !== undefined) return found;
      }
    }
    return undefined;
  };
  return (path) => {
    let node = resolve(root);
    let offset = root?.start ?? 0;
    for (const segment of path) {
      let next: YamlNode | undefined;
      if (node?.members !== undefined) {
        const found = member(node, segment, 0);
        if (found !== undefined) {
          offset = found.keyStart;
          next = found.value;
        }
      } else if (node?.items !== undefined && /^(0|[1-9]\d*)$/.test(segment)) {
        // An item an alias repeats: where its anchor writes it.
        next = resolve(node.items[Number(segment)]);
        if (next !== undefined) offset = next.start;
      }
      next = resolve(next);
      if (next === undefined) break;
      node = next;
    }
    return offset;
  };
}
