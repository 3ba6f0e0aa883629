/**
 * Issue 13 §10: storing a large page never holds other requests for long. Passages are
 * inserted in bounded batches, and on SQLite (whose driver is synchronous) the worker yields
 * to the event loop between them, all within one transaction, so a search never sees half a
 * page: it sees the old text until the new text is complete.
 */
import type { KyselyPlugin, PluginTransformQueryArgs, PluginTransformResultArgs, QueryResult, RootOperationNode, UnknownRow } from 'kysely';
import { describe, expect, it } from 'vitest';
import { IngestionWorker } from '../../src/jobs/ingestion-worker.js';
import type { Storage } from '../../src/storage/database.js';
import { useTestAppWithPages, type TestApp } from '../support/app.js';
import { DIALECTS } from '../support/databases.js';
import { createCopilot } from '../support/http.js';
import { linkRows, links, passageRows, postLinks, search } from '../support/knowledge-base.js';
import type { PageServer } from '../support/pages.js';

/** Plain text that splits into exactly `n` passages. */
function passagesText(n: number, word: string): string {
  return Array.from({ length: n }, (_, i) => `Paragraph ${i} mentions ${word}${i}x. ${'Some more words of the paragraph here. '.repeat(24)}`.trim()).join(
    '\n\n',
  );
}

/** Notes, for every INSERT into kb_passages, how many turns the event loop had made when it ran. */
class InsertTurns implements KyselyPlugin {
  readonly seen: number[] = [];
  private turns = 0;
  private timer: NodeJS.Immediate | null = null;

  start(): void {
    const tick = () => {
      this.turns++;
      this.timer = setImmediate(tick);
    };
    this.timer = setImmediate(tick);
  }

  stop(): void {
    if (this.timer) clearImmediate(this.timer);
  }

  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    const node = args.node;
    if (
      node.kind === 'InsertQueryNode' &&
      (node.into as { table?: { identifier?: { name?: string } } } | undefined)?.table?.identifier?.name === 'kb_passages'
    ) {
      this.seen.push(this.turns);
    }
    return node;
  }

  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    return args.result;
  }
}

for (const dialect of DIALECTS) {
  describe(`storing a large page (${dialect})`, () => {
    let t!: TestApp;
    let pages!: PageServer;
    useTestAppWithPages(dialect, { tap: true }, (made) => ({ t, pages } = made));

    it('inserts the passages in bounded batches with the event loop turning between them', async () => {
      const plugin = new InsertTurns();
      const storage: Storage = { ...t.storage, db: t.storage.db.withPlugin(plugin), readDb: t.storage.readDb, close: async () => undefined };
      const worker = new IngestionWorker(storage, { ...t.workerOptions, concurrency: 1 });
      const bot = (await createCopilot(t)).id;
      pages.set('/large', { type: 'text/plain', body: passagesText(1800, 'largepage') });
      const url = pages.url('/large');
      await postLinks(t, bot, [url]);
      plugin.start();
      try {
        expect(await worker.runOne()).toBe(true);
      } finally {
        plugin.stop();
        await worker.stop();
      }
      expect((await links(t, bot))!.get(url)).toMatchObject({ status: 'indexed', passages: 1800 });
      // Several statements, and never two of them in one turn of the event loop.
      expect(plugin.seen.length).toBeGreaterThanOrEqual(4);
      for (let i = 1; i < plugin.seen.length; i++) expect(plugin.seen[i]!, plugin.seen.join(', ')).toBeGreaterThan(plugin.seen[i - 1]!);
      const [row] = await linkRows(t.storage, bot, [url]);
      const stored = await passageRows(t.storage, [row!.id]);
      expect(stored.map((p) => Number(p.seq))).toEqual(Array.from({ length: 1800 }, (_, i) => i));
    });

    it('a search while the passages are being stored sees the old text only, then the new text whole', async () => {
      const worker = t.newWorker();
      const bot = (await createCopilot(t)).id;
      pages.set('/replaced', { type: 'text/plain', body: passagesText(3, 'oldtext') });
      const url = pages.url('/replaced');
      await postLinks(t, bot, [url]);
      expect(await worker.runOne()).toBe(true);

      pages.set('/replaced', { type: 'text/plain', body: passagesText(1200, 'newtext') });
      await postLinks(t, bot, [url]);
      // Stop the store after its first batch of new passages (the old ones deleted, in its transaction).
      const paused = t.tap.pauseAfter({ kind: 'insert', table: 'kb_passages' });
      const run = worker.runOne();
      await paused.reached;
      try {
        expect((await search(t, bot, 'newtext0x')).results).toEqual([]);
        expect((await search(t, bot, 'oldtext0x')).results.map((r) => r.url)).toEqual([url]);
        expect((await links(t, bot))!.get(url)).toMatchObject({ status: 'pending', passages: 3 });
      } finally {
        paused.release();
      }
      expect(await run).toBe(true);
      expect((await links(t, bot))!.get(url)).toMatchObject({ status: 'indexed', passages: 1200 });
      expect((await search(t, bot, 'oldtext0x')).results).toEqual([]);
      expect((await search(t, bot, 'newtext1199x')).results.map((r) => r.url)).toEqual([url]);
    });
  });
}
