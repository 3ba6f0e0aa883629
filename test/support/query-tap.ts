/**
 * A query tap: stops a statement right after it has run, inside its transaction, until the
 * test releases it, or makes it fail as if the database had failed (buildTestApp's `tap`).
 */
import type { KyselyPlugin, PluginTransformQueryArgs, PluginTransformResultArgs, QueryResult, RootOperationNode, UnknownRow } from 'kysely';
import type { Storage } from '../../src/storage/database.js';

type StatementKind = 'select' | 'insert' | 'update' | 'delete';
export interface StatementMatch {
  kind: StatementKind;
  table: string;
  /** Let this many matching statements through first. */
  skip?: number;
}

interface Trap {
  match: StatementMatch;
  skipped: number;
  action: 'pause' | 'fail';
  reached: () => void;
  released: Promise<void>;
  error?: Error;
}

export interface Pause {
  /** Resolves when the statement has run (its transaction is still open). */
  reached: Promise<void>;
  /** Lets the statement's caller go on. */
  release(): void;
}

function describeStatement(node: RootOperationNode): StatementMatch | null {
  const name = (table: unknown): string | undefined =>
    (table as { kind?: string; table?: { identifier?: { name?: string } } } | undefined)?.kind === 'TableNode'
      ? (table as { table: { identifier: { name: string } } }).table.identifier.name
      : undefined;
  switch (node.kind) {
    case 'SelectQueryNode': {
      const t = name(node.from?.froms[0]);
      return t ? { kind: 'select', table: t } : null;
    }
    case 'InsertQueryNode': {
      const t = name(node.into);
      return t ? { kind: 'insert', table: t } : null;
    }
    case 'UpdateQueryNode': {
      const t = name(node.table);
      return t ? { kind: 'update', table: t } : null;
    }
    case 'DeleteQueryNode': {
      const t = name(node.from.froms[0]);
      return t ? { kind: 'delete', table: t } : null;
    }
    default:
      return null;
  }
}

/**
 * A Kysely plugin that stops the next statement matching a kind and table right after it
 * has run — inside its transaction — until the test releases it, or makes it fail as if
 * the database had failed. Each trap fires once.
 */
export class QueryTap implements KyselyPlugin {
  private readonly traps: Trap[] = [];
  private readonly pending = new Map<unknown, Trap>();

  pauseAfter(match: StatementMatch): Pause {
    let reached!: () => void;
    const reachedPromise = new Promise<void>((resolve) => (reached = resolve));
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    this.traps.push({ match, skipped: 0, action: 'pause', reached, released });
    return { reached: reachedPromise, release };
  }

  /** The statement fails after it ran, with `error` (by default a plain Error). */
  failAfter(match: StatementMatch, error?: Error): Promise<void> {
    let reached!: () => void;
    const reachedPromise = new Promise<void>((resolve) => (reached = resolve));
    this.traps.push({ match, skipped: 0, action: 'fail', reached, released: Promise.resolve(), error });
    return reachedPromise;
  }

  clear(): void {
    this.traps.splice(0);
  }

  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    const statement = describeStatement(args.node);
    if (statement) {
      const i = this.traps.findIndex((t) => t.match.kind === statement.kind && t.match.table === statement.table);
      const trap = this.traps[i];
      if (trap && trap.skipped < (trap.match.skip ?? 0)) trap.skipped++;
      else if (trap) this.pending.set(args.queryId, this.traps.splice(i, 1)[0]!);
    }
    return args.node;
  }

  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    const trap = this.pending.get(args.queryId);
    if (!trap) return args.result;
    this.pending.delete(args.queryId);
    trap.reached();
    if (trap.action === 'fail') throw trap.error ?? new Error('simulated database failure (test tap)');
    await trap.released;
    return args.result;
  }
}

/** The storage with every statement on the write connection going through the tap. */
export function tappedStorage(storage: Storage, tap: QueryTap): Storage {
  const db = storage.db.withPlugin(tap);
  return {
    dialect: storage.dialect,
    name: storage.name,
    db,
    get readDb() {
      return storage.readDb;
    },
    get scanDb() {
      return storage.scanDb;
    },
    scan: (tenant, work) => storage.scan(tenant, work),
    scans: () => storage.scans(),
    connections: () => storage.connections(),
    close: () => storage.close(),
  };
}
