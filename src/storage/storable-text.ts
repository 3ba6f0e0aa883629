import {
  type KyselyPlugin,
  OperationNodeTransformer,
  type PluginTransformQueryArgs,
  type PluginTransformResultArgs,
  type PrimitiveValueListNode,
  type QueryResult,
  type RootOperationNode,
  type UnknownRow,
  type ValueNode,
} from 'kysely';

/**
 * Text both databases store alike (DESIGN §8). PostgreSQL's `text` cannot hold U+0000, which
 * SQLite stores: every string a statement writes or compares has U+0000 replaced by U+FFFD,
 * on both. Text a client sends with U+0000 is refused before it gets here (400,
 * http/text-guard.ts); what reaches this is text derived from content the service read: the
 * changes between two API descriptions (names and paths as the document writes them), a
 * site's robots.txt, a message quoting either. Bytes (documents, pages) are never touched.
 */
export const storableText: KyselyPlugin = {
  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    return transformer.transformNode(args.node);
  },
  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    return args.result;
  },
};

/** The text with U+0000 replaced (U+FFFD), or the same value when it holds none or is no text. */
export function storable<T>(value: T): T {
  if (typeof value === 'string') return (value.includes('\u0000') ? value.replaceAll('\u0000', '\ufffd') : value) as T;
  if (Array.isArray(value) && value.some((v) => typeof v === 'string' && v.includes('\u0000'))) return value.map(storable) as T;
  return value;
}

class StorableTextTransformer extends OperationNodeTransformer {
  protected override transformValue(node: ValueNode): ValueNode {
    const value = storable(node.value);
    return value === node.value ? node : { ...node, value };
  }

  protected override transformPrimitiveValueList(node: PrimitiveValueListNode): PrimitiveValueListNode {
    return node.values.some((v) => storable(v) !== v) ? { ...node, values: node.values.map(storable) } : node;
  }
}

const transformer = new StorableTextTransformer();
