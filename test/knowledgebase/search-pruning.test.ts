/**
 * Issue 16: search at a million passages. bm25's document frequencies are kept per bot and term
 * (kb_terms, migration 016), so a search reads the passages of its rare words only and bounds
 * what its common words can add (searchPassages). These tests hold it to exact bm25 — against a
 * reference that scores every passage — and kb_terms to the counts of the visible passages,
 * through every write that changes them.
 */
import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Storage } from '../../src/storage/database.js';
import * as kb from '../../src/storage/knowledge-base.repository.js';
import { termCounts } from '../../src/storage/migrations/016-term-counts.js';
import { countTermPassages, decodeTermPassages, passageTerms, queryTerms } from '../../src/text/search-terms.js';
import { createTestStorage, DIALECTS } from '../support/databases.js';
import { seedIndexedLinks } from '../support/seed.js';

const NOW = '2026-01-01T00:00:00.000000Z';

/** A deterministic knowledge base: `common` in most passages, `often` in many, rare words in a few. */
function corpus(links: number, perLink: number): Array<{ url: string; passages: string[] }> {
  let seed = 7;
  const next = () => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return seed / 2 ** 32;
  };
  const filler = Array.from({ length: 60 }, (_, i) => `filler${String.fromCharCode(97 + (i % 26))}${Math.floor(i / 26)}`);
  return Array.from({ length: links }, (_, l) => ({
    url: `https://docs.example/page-${String(l).padStart(3, '0')}`,
    passages: Array.from({ length: perLink }, () => {
      const words: string[] = [];
      const length = 5 + Math.floor(next() * 30);
      for (let w = 0; w < length; w++) {
        const x = next();
        words.push(x < 0.12 ? 'common' : x < 0.16 ? 'often' : x < 0.2 ? `rare${Math.floor(next() * 40)}` : filler[Math.floor(next() * filler.length)]!);
      }
      return words.join(' ');
    }),
  }));
}

/** bm25 as searchPassages documents it, over every passage: the scores, best first. */
function reference(links: ReadonlyArray<{ url: string; passages: string[] }>, q: string): Array<{ url: string; seq: number; score: number }> {
  const docs = links.flatMap((link) => link.passages.map((content, seq) => ({ url: link.url, seq, terms: passageTerms(content).terms.split(' ') })));
  const n = docs.length;
  const avgdl = docs.reduce((sum, d) => sum + d.terms.length, 0) / n;
  const idf = new Map<string, number>();
  for (const term of queryTerms(q)) {
    const df = docs.filter((d) => d.terms.includes(term)).length;
    if (df > 0) idf.set(term, Math.log(1 + (n - df + 0.5) / (df + 0.5)));
  }
  const best = [...idf.values()].reduce((sum, x) => sum + 2.2 * x, 0);
  return docs
    .map((d) => {
      let raw = 0;
      for (const [term, weight] of idf) {
        const tf = d.terms.filter((t) => t === term).length;
        if (tf > 0) raw += (weight * tf * 2.2) / (tf + 1.2 * (0.25 + (0.75 * d.terms.length) / avgdl));
      }
      return { url: d.url, seq: d.seq, score: raw / best };
    })
    .filter((d) => d.score > 0)
    .sort((a, b) => b.score - a.score);
}

for (const dialect of DIALECTS) {
  describe(`search over the kept term counts (${dialect})`, () => {
    let storage: Storage;
    let cleanup: () => Promise<void>;
    beforeAll(async () => {
      ({ storage, cleanup } = await createTestStorage(dialect));
    });
    afterAll(async () => cleanup?.());

    /** kb_terms of the bot, and the counts of its visible passages recomputed from their content. */
    async function termCountsOf(bot: string) {
      const kept = await storage.db.selectFrom('kb_terms').select(['term', 'passages']).where('bot_id', '=', bot).execute();
      const visible = await storage.db
        .selectFrom('kb_passages as p')
        .select('p.content')
        .where('p.bot_id', '=', bot)
        .where(({ not, exists, selectFrom }) =>
          not(
            exists(selectFrom('kb_hidden_passages as x').select('x.version').whereRef('x.link_id', '=', 'p.link_id').whereRef('x.version', '=', 'p.version')),
          ),
        )
        .execute();
      const counted = countTermPassages(visible.map((r) => passageTerms(r.content).terms));
      // The links' kept counts add up to the bot's.
      const links = await storage.db.selectFrom('kb_link_terms').select('term_passages').where('bot_id', '=', bot).execute();
      const linked = new Map<string, number>();
      for (const link of links) decodeTermPassages(link.term_passages, linked);
      expect(Object.fromEntries([...linked].sort(([a], [b]) => (a < b ? -1 : 1)))).toEqual(
        Object.fromEntries([...counted].sort(([a], [b]) => (a < b ? -1 : 1))),
      );
      return {
        kept: Object.fromEntries(kept.map((r) => [r.term, Number(r.passages)]).sort(([a], [b]) => (a! < b! ? -1 : 1))),
        counted: Object.fromEntries([...counted].sort(([a], [b]) => (a < b ? -1 : 1))),
      };
    }

    it('answers what scoring every passage answers, for rare and common words alone and together', async () => {
      const bot = randomUUID();
      const links = corpus(40, 10);
      await seedIndexedLinks(storage.db, dialect, bot, links);
      const queries = [
        'common',
        'often',
        'rare3',
        'rare3 common',
        'common rare7 often',
        'often rare11',
        'rare1 rare2 common',
        'common often',
        'nothing here',
        'rare39 fillera0',
      ];
      for (const q of queries)
        for (const limit of [1, 5, 10, 50]) {
          const hits = await kb.searchPassages(storage.scanDb, dialect, bot, queryTerms(q), limit);
          const expected = reference(links, q);
          expect(hits.length, `${q} (limit ${limit})`).toBe(Math.min(limit, expected.length));
          // The scores are the best ones …
          for (const [i, hit] of hits.entries()) expect(hit.score, `${q} #${i}`).toBeCloseTo(expected[i]!.score, 6);
          // … and each is its passage's own.
          for (const hit of hits) expect(hit.score).toBeCloseTo(expected.find((e) => e.url === hit.url && e.seq === hit.seq)!.score, 6);
        }
    });

    it("reads the passages of a query's rare words, not those of a word most passages hold", async () => {
      const bot = randomUUID();
      const links = corpus(40, 10);
      await seedIndexedLinks(storage.db, dialect, bot, links);
      const statements: Array<{ sql: string; parameters: readonly unknown[] }> = [];
      const spy = storage.scanDb.withPlugin({
        transformQuery(args) {
          statements.push(storage.scanDb.getExecutor().compileQuery(args.node, args.queryId));
          return args.node;
        },
        transformResult: async (args) => args.result,
      });
      const hits = await kb.searchPassages(spy, dialect, bot, queryTerms('common rare3'), 5);
      expect(hits.length).toBe(5);
      const scoring = statements.filter((s) => s.sql.includes('weights'));
      expect(scoring.length).toBe(1);
      const parameters = scoring[0]!.parameters;
      if (dialect === 'postgres') {
        // The index is asked for the rare word's passages (the tsquery); each one's tsvector gives the common word's count.
        expect(parameters.filter((p) => typeof p === 'string' && p.startsWith("'"))).toEqual(["'rare3'"]);
      } else {
        // The index is asked for the rare word's entries only; the common word is counted in the few passages within reach.
        expect(parameters).toContain('rare3');
        expect(parameters).not.toContain('common');
      }
      // The word held by most passages: what this test is about.
      const df = await storage.db.selectFrom('kb_terms').select('passages').where('bot_id', '=', bot).where('term', '=', 'common').executeTakeFirstOrThrow();
      expect(Number(df.passages)).toBeGreaterThan(links.length * 10 * 0.5);
    });

    it('keeps the counts of the visible passages through publishing, replacing, staging, deleting and purging', async () => {
      const bot = randomUUID();
      const [first, second] = await seedIndexedLinks(storage.db, dialect, bot, [
        { url: 'https://docs.example/a', passages: ['Alpha keys rotate.', 'Alpha keys expire; beta keys too.'] },
        { url: 'https://docs.example/b', passages: ['Beta gamma.'] },
      ]);
      expect((await termCountsOf(bot)).kept).toEqual((await termCountsOf(bot)).counted);
      expect((await termCountsOf(bot)).kept).toMatchObject({ alpha: 2, kei: 2, beta: 2 });

      // The worker replaces a page: the new set's terms come in, the old set's go.
      const claim = async (id: string) => {
        await storage.db
          .updateTable('kb_links')
          .set({ status: 'pending', lease_owner: 'w', lease_expires_at: '2999-01-01T00:00:00.000000Z' })
          .where('id', '=', id)
          .execute();
        return { id, owner: 'w', generation: 0 };
      };
      const page = (id: string, contents: string[]) => contents.map((content, seq) => ({ link_id: id, bot_id: bot, seq, content }));
      const firstJob = await claim(first!);
      const atOnce = await storage.db.transaction().execute((trx) => kb.storePageAtOnce(trx, dialect, firstJob, page(first!, ['Delta keys.']), { now: NOW }));
      expect(atOnce).toEqual({ published: true, retired: true });
      let counts = await termCountsOf(bot);
      expect(counts.kept).toEqual(counts.counted);
      expect(counts.kept).toMatchObject({ kei: 1, delta: 1, beta: 1 });
      expect(counts.kept.alpha).toBeUndefined();

      // A staged set counts once published, not while it is written.
      const job = await claim(second!);
      const version = (await kb.beginStaging(storage.db, job, bot, NOW))!;
      const terms = kb.emptySetTerms();
      await kb.stagePassages(storage.db, dialect, page(second!, ['Epsilon keys.', 'Epsilon again.']), version, terms);
      counts = await termCountsOf(bot);
      expect(counts.kept).toEqual(counts.counted);
      expect(counts.kept.epsilon).toBeUndefined();
      await storage.db.transaction().execute((trx) => kb.publishStagedPage(trx, dialect, job, { version, passages: 2, terms, now: NOW }));
      counts = await termCountsOf(bot);
      expect(counts.kept).toEqual(counts.counted);
      expect(counts.kept).toMatchObject({ epsilon: 2, kei: 2 });
      expect(counts.kept.gamma).toBeUndefined();

      await storage.db.transaction().execute((trx) => kb.deleteLinksAndPassages(trx, dialect, [first!]));
      counts = await termCountsOf(bot);
      expect(counts.kept).toEqual(counts.counted);
      expect(counts.kept).toEqual({ epsilon: 2, kei: 1 });

      await storage.db.transaction().execute((trx) => kb.purgeKnowledgeBase(trx, dialect, bot));
      expect((await termCountsOf(bot)).kept).toEqual({});
    });

    it('migration 016 counts the visible passages a database already holds', async () => {
      const bot = randomUUID();
      const [link] = await seedIndexedLinks(storage.db, dialect, bot, [{ url: 'https://docs.example/m', passages: ['Zeta eta.', 'Zeta theta.'] }]);
      // A hidden set (being stored) is not counted.
      await storage.db.insertInto('kb_hidden_passages').values({ link_id: link!, version: 7, bot_id: bot, state: 'staging', created_at: NOW }).execute();
      await kb.stagePassages(storage.db, dialect, [{ link_id: link!, bot_id: bot, seq: 0, content: 'Zeta iota.' }], 7, kb.emptySetTerms());
      const db = storage.db as unknown as Kysely<any>;
      await termCounts(dialect).down!(db);
      await termCounts(dialect).up(db);
      const counts = await termCountsOf(bot);
      expect(counts.kept).toEqual({ eta: 1, theta: 1, zeta: 2 });
      expect(counts.kept).toEqual(counts.counted);
    });
  });
}
