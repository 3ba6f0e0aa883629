import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queryTerms } from '../../src/text/search-terms.js';
import type { Storage } from '../../src/storage/database.js';
import * as kb from '../../src/storage/knowledge-base.repository.js';
import { createTestStorage, DIALECTS } from '../support/databases.js';
import { rawIndexHits } from '../support/knowledge-base.js';
import { QueryTap, tappedStorage } from '../support/query-tap.js';

const NOW = '2026-01-01T00:00:00.000000Z';

// A page's passages are written as a hidden set in short transactions and made visible in one
// (issue 13 §10): a search sees the old set or the new, never a part of the new one, and sets
// that are replaced or left half written are deleted afterwards.
for (const dialect of DIALECTS) {
  describe(`staged passages (${dialect})`, () => {
    let storage: Storage;
    let cleanup: () => Promise<void>;
    beforeAll(async () => {
      ({ storage, cleanup } = await createTestStorage(dialect));
    });
    afterAll(async () => cleanup?.());

    /** A bot with one link claimed by `owner`, holding `passages` as its visible set. */
    async function claimedLink(passages: string[]): Promise<{ bot: string; job: { id: string; owner: string; generation: number } }> {
      const bot = randomUUID();
      const id = randomUUID();
      await storage.db.insertInto('knowledge_bases').values({ bot_id: bot, created_at: NOW, updated_at: NOW }).execute();
      await storage.db
        .insertInto('kb_links')
        .values({
          id,
          bot_id: bot,
          url: `https://docs.example/${id}`,
          status: 'pending',
          error: null,
          passages: passages.length,
          attempts: 1,
          generation: 0,
          run_after: NOW,
          lease_owner: 'worker-1',
          lease_expires_at: '2999-01-01T00:00:00.000000Z',
          created_at: NOW,
          updated_at: NOW,
        })
        .execute();
      await kb.insertPassages(
        storage.db,
        passages.map((content, seq) => ({ link_id: id, bot_id: bot, seq, content })),
      );
      return { bot, job: { id, owner: 'worker-1', generation: 0 } };
    }
    const rows = (bot: string, linkId: string, contents: string[]) => contents.map((content, seq) => ({ link_id: linkId, bot_id: bot, seq, content }));
    const hits = async (bot: string, q: string) => (await kb.searchPassages(storage.readDb, dialect, bot, queryTerms(q), 10)).map((h) => h.content);
    const stored = async (linkId: string) =>
      Number(
        (
          await storage.db
            .selectFrom('kb_passages')
            .select((eb) => eb.fn.countAll().as('n'))
            .where('link_id', '=', linkId)
            .executeTakeFirstOrThrow()
        ).n,
      );

    it('each batch of passages written is a segment of the search index, written with it', async () => {
      const { bot, job } = await claimedLink([]);
      const version = (await kb.beginStaging(storage.db, job, bot, NOW))!;
      const segments = async () =>
        (await storage.db.selectFrom('kb_segments').select('passages').where('bot_id', '=', bot).orderBy('id').execute()).map((s) => Number(s.passages));
      const before = await segments();
      // 450 passages in one part: batches of 200, 200 and 50.
      const contents = Array.from({ length: 450 }, (_, k) => `Passage ${k} of a long page segmentword.`);
      await kb.stagePassages(storage.db, dialect, rows(bot, job.id, contents), version);
      expect((await segments()).slice(before.length)).toEqual([200, 200, 50]);
      // Staged, so hidden: the index holds them, no search sees them.
      expect(await rawIndexHits(storage, 'segmentword')).toBe(450);
      expect(await hits(bot, 'segmentword')).toEqual([]);
    });

    it('a set being written is committed batch by batch yet never searched; publishing swaps the sets at once and the old one is deleted afterwards', async () => {
      const { bot, job } = await claimedLink(['The old page speaks of oldword alone.']);
      const version = await kb.beginStaging(storage.db, job, bot, NOW);
      expect(version).toBe(1);
      const terms = (await kb.stagePassages(
        storage.db,
        dialect,
        rows(bot, job.id, ['The new page speaks of newword.', 'A second newword passage.']),
        version!,
      ))!;
      expect(terms).toBeGreaterThan(0);
      // Committed already (its own transaction), so other connections see the rows …
      expect(await stored(job.id)).toBe(3);
      // … but no search does.
      expect(await hits(bot, 'newword')).toEqual([]);
      expect(await hits(bot, 'oldword')).toEqual(['The old page speaks of oldword alone.']);

      expect(await kb.publishStagedPage(storage.db, job, { version: version!, passages: 2, termCount: terms, now: NOW })).toBe(true);
      expect(await hits(bot, 'newword')).toHaveLength(2);
      expect(await hits(bot, 'oldword')).toEqual([]);
      const link = await storage.db.selectFrom('kb_links').selectAll().where('id', '=', job.id).executeTakeFirstOrThrow();
      expect({ status: link.status, passages: link.passages, version: link.version, term_count: link.term_count }).toEqual({
        status: 'indexed',
        passages: 2,
        version: 1,
        term_count: terms,
      });

      expect(await kb.deleteRetiredPassages(storage.db, dialect, { linkId: job.id, budget: Infinity })).toBe(1);
      expect(await stored(job.id)).toBe(2);
      expect(await storage.db.selectFrom('kb_hidden_passages').selectAll().where('link_id', '=', job.id).execute()).toEqual([]);
    });

    it("a job no longer its worker's publishes nothing, and its set is retired", async () => {
      const { bot, job } = await claimedLink(['Kept passage keptword.']);
      const version = (await kb.beginStaging(storage.db, job, bot, NOW))!;
      const terms = (await kb.stagePassages(storage.db, dialect, rows(bot, job.id, ['Lost passage lostword.']), version))!;
      // Another worker took the job over (a new generation).
      await storage.db.updateTable('kb_links').set({ generation: 1, lease_owner: 'worker-2' }).where('id', '=', job.id).execute();
      expect(await kb.publishStagedPage(storage.db, job, { version, passages: 1, termCount: terms, now: NOW })).toBe(false);
      await kb.retireSet(storage.db, job.id, version, bot, NOW);
      expect(await hits(bot, 'keptword')).toEqual(['Kept passage keptword.']);
      expect(await hits(bot, 'lostword')).toEqual([]);
      expect(await kb.deleteRetiredPassages(storage.db, dialect, { linkId: job.id, budget: Infinity })).toBe(1);
      expect(await stored(job.id)).toBe(1);
    });

    it('a set left half written by a stopped process stays hidden, and goes when the job runs again', async () => {
      const { bot, job } = await claimedLink([]);
      const first = (await kb.beginStaging(storage.db, job, bot, NOW))!;
      await kb.stagePassages(storage.db, dialect, rows(bot, job.id, ['Half written halfword.']), first);
      expect(await hits(bot, 'halfword')).toEqual([]);
      // The next attempt: a new version; the half-written one is retired.
      const second = (await kb.beginStaging(storage.db, job, bot, NOW))!;
      expect(second).toBe(first + 1);
      const states = await storage.db.selectFrom('kb_hidden_passages').select(['version', 'state']).where('link_id', '=', job.id).orderBy('version').execute();
      expect(states).toEqual([
        { version: first, state: 'retired' },
        { version: second, state: 'staging' },
      ]);
      expect(await kb.deleteRetiredPassages(storage.db, dialect, { budget: Infinity })).toBeGreaterThanOrEqual(1);
      expect(await stored(job.id)).toBe(0);
    });

    it('a small page is stored and published in one transaction, replacing the old set', async () => {
      const { bot, job } = await claimedLink(['The old page speaks of oldword alone.']);
      const stored1 = await storage.db
        .transaction()
        .execute((trx) =>
          kb.storePageAtOnce(trx, dialect, job, rows(bot, job.id, ['The new page speaks of newword.', 'A second newword passage.']), { now: NOW }),
        );
      expect(stored1).toEqual({ published: true, retired: true });
      expect(await hits(bot, 'newword')).toHaveLength(2);
      expect(await hits(bot, 'oldword')).toEqual([]);
      const link = await storage.db.selectFrom('kb_links').selectAll().where('id', '=', job.id).executeTakeFirstOrThrow();
      expect({ status: link.status, passages: link.passages, version: link.version }).toEqual({ status: 'indexed', passages: 2, version: 1 });
      expect(await kb.deleteRetiredPassages(storage.db, dialect, { linkId: job.id, budget: Infinity })).toBe(1);
      expect(await stored(job.id)).toBe(2);
      expect(await storage.db.selectFrom('kb_hidden_passages').selectAll().where('link_id', '=', job.id).execute()).toEqual([]);
    });

    it('a small page of a link never indexed retires nothing; one of a job no longer its worker’s writes nothing', async () => {
      const { bot, job } = await claimedLink([]);
      expect(
        await storage.db.transaction().execute((trx) => kb.storePageAtOnce(trx, dialect, job, rows(bot, job.id, ['First firstword.']), { now: NOW })),
      ).toEqual({ published: true, retired: false });
      expect(await hits(bot, 'firstword')).toEqual(['First firstword.']);

      const other = await claimedLink(['Kept passage keptword.']);
      await storage.db.updateTable('kb_links').set({ generation: 1, lease_owner: 'worker-2' }).where('id', '=', other.job.id).execute();
      expect(
        await storage.db
          .transaction()
          .execute((trx) => kb.storePageAtOnce(trx, dialect, other.job, rows(other.bot, other.job.id, ['Lost lostword.']), { now: NOW })),
      ).toBeNull();
      expect(await hits(other.bot, 'keptword')).toEqual(['Kept passage keptword.']);
      expect(await stored(other.job.id)).toBe(1);
    });

    it('a small page after a set left half written retires that set', async () => {
      const { bot, job } = await claimedLink([]);
      const half = (await kb.beginStaging(storage.db, job, bot, NOW))!;
      await kb.stagePassages(storage.db, dialect, rows(bot, job.id, ['Half written halfword.']), half);
      const result = await storage.db
        .transaction()
        .execute((trx) => kb.storePageAtOnce(trx, dialect, job, rows(bot, job.id, ['Whole wholeword.']), { now: NOW }));
      expect(result).toEqual({ published: true, retired: true });
      const link = await storage.db.selectFrom('kb_links').select('version').where('id', '=', job.id).executeTakeFirstOrThrow();
      expect(Number(link.version)).toBe(half + 1);
      expect(await hits(bot, 'halfword')).toEqual([]);
      expect(await hits(bot, 'wholeword')).toEqual(['Whole wholeword.']);
      await kb.deleteRetiredPassages(storage.db, dialect, { linkId: job.id, budget: Infinity });
      expect(await stored(job.id)).toBe(1);
    });

    it('a batch for a set retired meanwhile (its link deleted) writes nothing, before and after the housekeeping deleted the set', async () => {
      const { bot, job } = await claimedLink([]);
      const version = (await kb.beginStaging(storage.db, job, bot, NOW))!;
      expect(await kb.stagePassages(storage.db, dialect, rows(bot, job.id, ['Early earlyword.']), version)).toBeGreaterThan(0);
      await storage.db.transaction().execute((trx) => kb.deleteLinks(trx, [job.id], NOW));
      // The worker has not noticed yet: one more batch, then another once the set is gone.
      const late = (seq: number) => [{ link_id: job.id, bot_id: bot, seq, content: `Late lateword ${seq}.` }];
      const beforeSweep = await kb.stagePassages(storage.db, dialect, late(1), version);
      expect(await kb.deleteRetiredPassages(storage.db, dialect, { budget: Infinity })).toBeGreaterThanOrEqual(1);
      expect(await storage.db.selectFrom('kb_hidden_passages').selectAll().where('link_id', '=', job.id).execute()).toEqual([]);
      const afterSweep = await kb.stagePassages(storage.db, dialect, late(2), version);
      // Nothing hides a passage of a set whose row is gone: it would be searched, and never deleted.
      expect(await hits(bot, 'lateword')).toEqual([]);
      expect(await stored(job.id)).toBe(0);
      expect([beforeSweep, afterSweep]).toEqual([null, null]);
    });

    it('a batch being written when its link is deleted is deleted with the set', async () => {
      const tap = new QueryTap();
      const tapped = tappedStorage(storage, tap);
      const { bot, job } = await claimedLink([]);
      const version = (await kb.beginStaging(storage.db, job, bot, NOW))!;
      // The batch has written its passages and not yet committed.
      const pause = tap.pauseAfter({ kind: 'insert', table: 'kb_passages' });
      const writing = kb.stagePassages(tapped.db, dialect, rows(bot, job.id, ['Racing raceword.']), version);
      await pause.reached;
      // The deletion, then a housekeeping round, each given time to finish while the batch is open.
      const finishes = (work: Promise<unknown>) => Promise.race([work.then(() => true), delay(300).then(() => false)]);
      const deleting = storage.db.transaction().execute((trx) => kb.deleteLinks(trx, [job.id], NOW));
      await finishes(deleting);
      const sweeping = kb.deleteRetiredPassages(storage.db, dialect, { budget: Infinity });
      await finishes(sweeping);
      pause.release();
      await Promise.all([writing, deleting, sweeping]);
      // The housekeeping's next round.
      await kb.deleteRetiredPassages(storage.db, dialect, { budget: Infinity });
      expect(await hits(bot, 'raceword')).toEqual([]);
      expect(await stored(job.id)).toBe(0);
      expect(await storage.db.selectFrom('kb_hidden_passages').selectAll().where('link_id', '=', job.id).execute()).toEqual([]);
    });
  });
}
