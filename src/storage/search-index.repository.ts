import {
  decodeIds,
  encodeIds,
  type IndexTotals,
  MERGE_FACTOR,
  type MergedSegment,
  type MergeInput,
  type ScoredPassage,
  scorePassages,
  blocksOf,
  compareCodePoints,
  postingsIn,
  segmentOf,
  excludedWithin,
  segmentsToMerge,
  type TermBlock,
  summaryOf,
  unionIds,
  withoutIds,
} from '../domain/knowledgebase/search-index.js';
import { nowTimestamp } from '../domain/ids.js';
import type { DialectName } from './database.js';
import type { Db } from './schema.js';
import { inTransaction } from './transaction.js';

/**
 * The knowledge base's search index (issue 16 §2; docs/search-index.md): each bot's postings
 * as one blob per (segment, term), a segment's blobs packed into blocks in kb_blocks (a page's
 * few hundred terms are a row or two), its segments in kb_segments, its deleted
 * passages that some segment still holds in kb_excluded. The blobs' format and the scoring are
 * src/domain/knowledgebase/search-index.ts; this is where they are stored and read.
 *
 * - A write of passages adds a segment of them, in the write's transaction (`writeSegment`).
 * - A deletion of passages adds their ids to the bot's excluded ids, in the deletion's
 *   transaction (`excludePassages`). Passages of a set being stored or retired
 *   (kb_hidden_passages) are left out at search time.
 * - Housekeeping merges a bot's segments, eight of a tier into one of the next, dropping the
 *   excluded ids they hold (`mergeSegmentsStep`).
 * - A search reads the bot's totals, excluded and hidden ids and the query terms' blobs in one
 *   snapshot, scores them (on a task thread in the service), and reads the best passages.
 */

/** Rows per INSERT into kb_blocks (4 values each: well under both databases' parameter limits). */
const BLOCKS_INSERT_BATCH = 2000;

/** Ids per `IN (…)` list when reading passages by id. */
const IDS_PER_READ = 5000;

export interface IndexedPassage {
  id: number;
  bot_id: string;
  /** `passageTerms(content).terms`: space-separated. */
  terms: string;
  term_count: number;
}

/** Adds a segment of the passages just written (each bot's its own) to the index, in the caller's transaction. */
export async function writeSegment(db: Db, passages: readonly IndexedPassage[]): Promise<void> {
  const byBot = byBotOf(passages);
  for (const [botId, own] of byBot) {
    const summary = summaryOf(own);
    if (summary.passages === 0) continue;
    const segment = await db
      .insertInto('kb_segments')
      .values({ bot_id: botId, passages: summary.passages, min_id: summary.minId, max_id: summary.maxId, created_at: nowTimestamp() })
      .returning('id')
      .executeTakeFirstOrThrow();
    await insertBlocks(db, botId, Number(segment.id), blocksOf(segmentOf(own)));
  }
}

function byBotOf<T extends { bot_id: string }>(rows: readonly T[]): Map<string, T[]> {
  const byBot = new Map<string, T[]>();
  for (const row of rows) {
    const own = byBot.get(row.bot_id);
    if (own) own.push(row);
    else byBot.set(row.bot_id, [row]);
  }
  return byBot;
}

async function insertBlocks(db: Db, botId: string, segment: number, blocks: readonly TermBlock[]): Promise<void> {
  for (let i = 0; i < blocks.length; i += BLOCKS_INSERT_BATCH)
    await db
      .insertInto('kb_blocks')
      .values(blocks.slice(i, i + BLOCKS_INSERT_BATCH).map((b) => ({ bot_id: botId, segment, first_term: b.firstTerm, block: b.block })))
      .execute();
}

/**
 * Notes deleted passages as excluded from their bots' index until a merge drops them, in the
 * deletion's transaction. Only the ids some segment of the bot holds: a passage without terms is
 * in none, nor is one deleted after its knowledge base (whose index went with it), and an id
 * no segment holds would stay excluded for good.
 */
export async function excludePassages(db: Db, dialect: DialectName, deleted: ReadonlyArray<{ id: number; bot_id: string; term_count: number }>): Promise<void> {
  const byBot = byBotOf(deleted.filter((p) => Number(p.term_count) > 0));
  for (const [botId, rows] of byBot) {
    const segments = await db.selectFrom('kb_segments').select(['min_id', 'max_id']).where('bot_id', '=', botId).execute();
    const held = rows.map((r) => Number(r.id)).filter((id) => segments.some((s) => Number(s.min_id) <= id && id <= Number(s.max_id)));
    if (held.length > 0) await updateExcluded(db, dialect, botId, (current) => unionIds(current, Int32Array.from(held).sort()));
  }
}

/** Rewrites a bot's excluded ids as `change` makes them, its row held until the transaction ends (PostgreSQL). */
async function updateExcluded(db: Db, dialect: DialectName, botId: string, change: (current: Int32Array) => Int32Array): Promise<void> {
  if (dialect === 'postgres') {
    // The row first, so that two deletions at once wait for each other instead of both inserting it.
    await db
      .insertInto('kb_excluded')
      .values({ bot_id: botId, ids: new Uint8Array(0), count: 0 })
      .onConflict((oc) => oc.column('bot_id').doNothing())
      .execute();
  }
  const row = await db
    .selectFrom('kb_excluded')
    .select('ids')
    .where('bot_id', '=', botId)
    .$if(dialect === 'postgres', (q) => q.forUpdate())
    .executeTakeFirst();
  const ids = change(decodeIds(row?.ids));
  if (ids.length === 0) {
    await db.deleteFrom('kb_excluded').where('bot_id', '=', botId).execute();
    return;
  }
  const value = { ids: encodeIds(ids), count: ids.length };
  await db
    .insertInto('kb_excluded')
    .values({ bot_id: botId, ...value })
    .onConflict((oc) => oc.column('bot_id').doUpdateSet(value))
    .execute();
}

/** Removes a bot's whole index (its knowledge base is deleted). */
export async function deleteBotIndex(db: Db, botId: string): Promise<void> {
  await db.deleteFrom('kb_blocks').where('bot_id', '=', botId).execute();
  await db.deleteFrom('kb_segments').where('bot_id', '=', botId).execute();
  await db.deleteFrom('kb_excluded').where('bot_id', '=', botId).execute();
}

// ---- merges ----

/** Merges segments (search-index.ts `mergeSegments`): on a task thread in the service. */
export type SegmentMerger = (inputs: MergeInput[], excluded: Int32Array) => Promise<MergedSegment>;

/**
 * One merge of some bot's segments (`segmentsToMerge` chooses), if any needs one; true when one
 * was made. The inputs are read outside any transaction (segments never change, they only go),
 * merged by `merge`, and swapped in by one short transaction that first deletes the inputs'
 * rows: when another instance merged any of them meanwhile, it finds fewer and writes nothing.
 * The excluded ids the merge dropped leave kb_excluded in the same transaction; ids excluded
 * since it read them stay.
 */
export async function mergeSegmentsStep(db: Db, dialect: DialectName, merge: SegmentMerger): Promise<boolean> {
  const candidates = await db
    .selectFrom('kb_segments')
    .select('bot_id')
    .groupBy('bot_id')
    .having((eb) => eb.fn.countAll(), '>=', MERGE_FACTOR)
    .union(db.selectFrom('kb_excluded').select('bot_id').where('count', '>', 0))
    .execute();
  for (const { bot_id: botId } of candidates) {
    const next = await nextMerge(db, botId);
    if (!next) continue;
    const { inputs, segments, excluded, eager } = next;
    const rows = await db.selectFrom('kb_blocks').select(['segment', 'block']).where('bot_id', '=', botId).where('segment', 'in', inputs).execute();
    const merged = await merge(
      segments.filter((s) => inputs.includes(s.id)).map((s) => ({ ...s, blocks: rows.filter((r) => Number(r.segment) === s.id).map((r) => r.block) })),
      excluded,
    );
    await inTransaction(db, async (trx) => {
      const gone = await trx.deleteFrom('kb_segments').where('id', 'in', inputs).executeTakeFirst();
      if (Number(gone.numDeletedRows) !== inputs.length) throw new MergeOvertaken();
      await trx.deleteFrom('kb_blocks').where('bot_id', '=', botId).where('segment', 'in', inputs).execute();
      if (merged.blocks.length > 0) {
        const segment = await trx
          .insertInto('kb_segments')
          .values({ bot_id: botId, passages: merged.passages, min_id: merged.minId, max_id: merged.maxId, created_at: nowTimestamp() })
          .returning('id')
          .executeTakeFirstOrThrow();
        await insertBlocks(trx, botId, Number(segment.id), merged.blocks);
      }
      // An eager merge took every segment that could hold its excluded ids: those it did not find
      // are in no segment, and leave too (else it would be chosen again and again).
      const dropped = eager
        ? excludedWithin(
            excluded,
            segments.filter((s) => inputs.includes(s.id)),
          )
        : merged.dropped;
      if (dropped.length > 0) await updateExcluded(trx, dialect, botId, (current) => withoutIds(current, dropped));
    }).catch((err: unknown) => {
      if (!(err instanceof MergeOvertaken)) throw err;
    });
    return true;
  }
  return false;
}

/** The bot's segments to merge next (`segmentsToMerge`), with what it read to choose them; null when none needs it. */
export async function nextMerge(db: Db, botId: string) {
  const segments = (await db.selectFrom('kb_segments').select(['id', 'passages', 'min_id', 'max_id']).where('bot_id', '=', botId).execute()).map((s) => ({
    id: Number(s.id),
    passages: Number(s.passages),
    minId: Number(s.min_id),
    maxId: Number(s.max_id),
  }));
  const excludedRow = await db.selectFrom('kb_excluded').select('ids').where('bot_id', '=', botId).executeTakeFirst();
  const excluded = decodeIds(excludedRow?.ids);
  const copilot = excluded.length > 0 ? await db.selectFrom('copilots').select('enhanced_privacy').where('id', '=', botId).executeTakeFirst() : undefined;
  const eager = Number(copilot?.enhanced_privacy ?? 0) === 1;
  const inputs = segmentsToMerge(segments, excluded, { eager });
  return inputs ? { inputs, segments, excluded, eager } : null;
}

/** Another merge took some of the inputs first: this one writes nothing. */
class MergeOvertaken extends Error {}

// ---- search ----

/** Scores a query's postings (search-index.ts `scorePassages`): on a task thread in the service. */
export type PassageScorer = (
  blobsByTerm: Uint8Array[][],
  totals: IndexTotals,
  limit: number,
  excluded: Int32Array,
) => ScoredPassage[] | Promise<ScoredPassage[]>;

export interface PassageHit {
  link_id: string;
  url: string;
  seq: number;
  content: string;
  score: number;
}

/**
 * The bot's passages holding any of the search terms (`queryTerms`), best first: bm25 (k1 = 1.2,
 * b = 0.75) over the bot's own statistics, divided by the best score the query could reach, so
 * 0 < score ≤ 1:
 *
 *   idf(t)   = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))
 *   bm25(p)  = Σ over the terms t in p: idf(t) · tf(t,p) · 2.2 / (tf(t,p) + 1.2 · (0.25 + 0.75 · len(p) / avglen))
 *   score(p) = bm25(p) / Σ over the terms t in any of the bot's passages: 2.2 · idf(t)
 *
 * N: the bot's passages; df(t): those holding t; tf(t,p): t's occurrences in p; len(p): p's
 * terms; avglen: the bot's terms / N (its knowledge_bases row keeps the totals, migration 014).
 * Ties (scores equal to 9 decimals) go by URL (code point order), then passage; the score is
 * answered rounded to 6 decimals. Passages of a set being stored or retired are never seen.
 *
 * Cost: one block read per (segment, query term) of the bot, a tight loop over the terms'
 * postings (`score`), then the best `limit` passages (and their ties) read by id. Everything is
 * read in one snapshot (a read transaction), so a page's passages are seen whole or not at all.
 */
export async function searchPassages(
  db: Db,
  dialect: DialectName,
  botId: string,
  terms: readonly string[],
  limit: number,
  score: PassageScorer = scorePassages,
): Promise<PassageHit[]> {
  if (terms.length === 0 || limit <= 0) return [];
  const search = async (trx: Db): Promise<PassageHit[]> => {
    // The bot's totals, its excluded ids and whether it hides a set, in one statement (each
    // statement of a search is a round trip, which costs most under load); the hidden ids are
    // read only when it does.
    const totals = await trx
      .selectFrom('knowledge_bases as k')
      .select(['k.passages', 'k.term_count'])
      .select((eb) => [
        eb.selectFrom('kb_excluded as e').select('e.ids').whereRef('e.bot_id', '=', 'k.bot_id').as('excluded'),
        eb.exists(eb.selectFrom('kb_hidden_passages as x').select('x.link_id').whereRef('x.bot_id', '=', 'k.bot_id')).as('hides'),
      ])
      .where('k.bot_id', '=', botId)
      .executeTakeFirst();
    if (!totals) return [];
    const hidden = totals.hides
      ? await trx
          .selectFrom('kb_hidden_passages as x')
          .innerJoin('kb_passages as q', (join) => join.onRef('q.link_id', '=', 'x.link_id').onRef('q.version', '=', 'x.version'))
          .select('q.id')
          .where('x.bot_id', '=', botId)
          .execute()
      : [];
    const excluded = unionIds(decodeIds(totals.excluded), Int32Array.from(hidden, (h) => Number(h.id)).sort());
    // Each term's block in each of the bot's segments (the one whose first term is the greatest
    // not after it), the segments in the order of their first ids: most follow one another.
    const rows = await trx
      .selectFrom('kb_segments as s')
      .select((eb) =>
        terms.map((term, i) =>
          eb
            .selectFrom('kb_blocks as b')
            .select('b.block')
            .whereRef('b.bot_id', '=', 's.bot_id')
            .whereRef('b.segment', '=', 's.id')
            .where('b.first_term', '<=', term)
            .orderBy('b.first_term', 'desc')
            .limit(1)
            .as(`t${i}`),
        ),
      )
      .where('s.bot_id', '=', botId)
      .orderBy('s.min_id')
      .execute();
    const blobsByTerm = terms.map((term, i) => {
      const bytes = Buffer.from(term, 'utf8');
      const blobs: Uint8Array[] = [];
      for (const row of rows as Array<Record<string, Uint8Array | null>>) {
        const block = row[`t${i}`];
        const blob = block ? postingsIn(block, bytes) : null;
        if (blob) blobs.push(blob);
      }
      return blobs;
    });
    const scored = await score(blobsByTerm, { passages: Number(totals.passages), terms: Number(totals.term_count) }, limit, excluded);
    if (scored.length === 0) return [];
    // Ties at the cutoff go by URL, then passage: more than `limit` are ordered by those first.
    // When every scored passage is answered (no more than `limit`), their content comes with them.
    const withContent = scored.length <= limit;
    const place = new Map<number, { link_id: string; url: string; seq: number; content?: string }>();
    for (let i = 0; i < scored.length; i += IDS_PER_READ) {
      const found = await trx
        .selectFrom('kb_passages as p')
        .innerJoin('kb_links as l', 'l.id', 'p.link_id')
        .select(['p.id', 'p.link_id', 'l.url', 'p.seq'])
        .$if(withContent, (qb) => qb.select('p.content'))
        .where(
          'p.id',
          'in',
          scored.slice(i, i + IDS_PER_READ).map((s) => s.id),
        )
        .execute();
      for (const r of found) place.set(Number(r.id), { link_id: r.link_id, url: r.url, seq: Number(r.seq), content: r.content });
    }
    const best = scored
      .filter((s) => place.has(s.id))
      .map((s) => ({ ...s, ...place.get(s.id)! }))
      .sort((a, b) => b.rounded - a.rounded || compareCodePoints(a.url, b.url) || a.seq - b.seq)
      .slice(0, limit);
    // The content came with the place, or is read now for the answered passages only.
    const content = withContent
      ? null
      : new Map(
          (
            await trx
              .selectFrom('kb_passages')
              .select(['id', 'content'])
              .where(
                'id',
                'in',
                best.map((b) => b.id),
              )
              .execute()
          ).map((r) => [Number(r.id), r.content]),
        );
    return best.map((b) => ({
      link_id: b.link_id,
      url: b.url,
      seq: b.seq,
      content: (content ? content.get(b.id) : b.content) ?? '',
      score: Math.round(b.score * 1e6) / 1e6,
    }));
  };
  if (db.isTransaction) return search(db);
  return dialect === 'postgres'
    ? db.transaction().setIsolationLevel('repeatable read').setAccessMode('read only').execute(search)
    : db.transaction().execute(search);
}
