/**
 * Ad hoc (issue 16 §2, not in `npm run bench`): one bot's knowledge base of N passages (section
 * 6's text, seeded as section 6 seeds it), its bare searches timed with the segments the seed
 * left, then again once every merge is done. `node dist-bench/bench/search-settle.js [--passages N] [--postgres]`.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { mergeSegments, scorePassages } from '../src/domain/knowledgebase/search-index.js';
import { openStorage } from '../src/storage/database.js';
import { searchPassages } from '../src/storage/knowledge-base.repository.js';
import { migrateToLatest } from '../src/storage/migrate.js';
import { mergeSegmentsStep } from '../src/storage/search-index.repository.js';
import { queryTerms } from '../src/text/search-terms.js';
import { seedIndexedLinks } from '../test/support/seed.js';
import { latencySummary } from './lib/stats.js';
import { passageText, searchQueries } from './lib/text.js';

const args = process.argv.slice(2);
const passages = Number(args[args.indexOf('--passages') + 1] ?? 0) || 1_000_000;
const postgres = args.includes('--postgres');
const databaseUrl = postgres ? (process.env.BENCH_DATABASE_URL ?? null) : null;
const dir = args.includes('--dir') ? args[args.indexOf('--dir') + 1]! : mkdtempSync(path.join(os.tmpdir(), 'settle-'));
const storage = openStorage({ databaseUrl, dataDir: dir });
await migrateToLatest(storage);
const existing = await storage.db.selectFrom('knowledge_bases').select('bot_id').executeTakeFirst();
const bot = existing?.bot_id ?? randomUUID();
const started = performance.now();
let n = 0;
if (!existing)
  await storage.db.transaction().execute(async (trx) => {
    for (let i = 0; i < passages / 100; i += 200) {
      const links = Array.from({ length: 200 }, (_, k) => ({
        url: `https://docs.example.com/settle/page-${i + k}`,
        passages: Array.from({ length: 100 }, () => passageText(n++)),
      }));
      await seedIndexedLinks(trx, bot, links);
    }
  });
console.log(`seeded ${n} passages in ${((performance.now() - started) / 1000).toFixed(1)} s`);
const queries = searchQueries(60);
async function measure(label: string) {
  const segments = (await storage.db.selectFrom('kb_segments').select('id').where('bot_id', '=', bot).execute()).length;
  const ms: number[] = [];
  const scoring: number[] = [];
  const slow: Array<[number, string, number]> = [];
  // A round to warm up (JIT, page cache), then three measured.
  for (const q of queries) await searchPassages(storage.scanDb, storage.dialect, bot, queryTerms(q), 10);
  for (let round = 0; round < 3; round++)
    for (const q of queries) {
      const t = performance.now();
      let scored = 0;
      await searchPassages(storage.scanDb, storage.dialect, bot, queryTerms(q), 10, (b, totals, limit, x) => {
        const s0 = performance.now();
        const out = scorePassages(b, totals, limit, x);
        scored = performance.now() - s0;
        return out;
      });
      const took = performance.now() - t;
      ms.push(took);
      scoring.push(scored);
      if (round === 2) slow.push([took, q, scored]);
    }
  const s = latencySummary(ms);
  slow.sort((a, b) => b[0] - a[0]);
  const sc = latencySummary(scoring);
  console.log(`${label}: scoring alone p50 ${sc.p50_ms} ms, p99 ${sc.p99_ms} ms`);
  console.log(
    `${label}: ${segments} segments: p50 ${s.p50_ms} ms, p99 ${s.p99_ms} ms, max ${s.max_ms} ms; slowest: ${slow
      .slice(0, 4)
      .map(([t, q, sc]) => `${t.toFixed(1)} (scoring ${sc.toFixed(1)}) "${q}"`)
      .join(', ')}`,
  );
}
if (!args.includes('--merged-only')) await measure('as seeded');
const t = performance.now();
let merges = 0;
while (await mergeSegmentsStep(storage.db, storage.dialect, async (inputs, x) => mergeSegments(inputs, x))) merges++;
console.log(`${merges} merges in ${((performance.now() - t) / 1000).toFixed(1)} s`);
await measure('merged');
await storage.close();
