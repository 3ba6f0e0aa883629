/**
 * A measurement for planning issue 16's last target (search at 1,000,000 passages, p99 ≤ 50 ms),
 * not the product and not in `npm run bench`: what a search index of our own would cost if each
 * bot's postings were kept as one blob per (segment, term) and scored in JavaScript.
 *
 * One bot's passages are made as section 6 makes them (`passageText`, `passageTerms`), their
 * postings (passage id, tf, length) encoded per term as varints, cut into segments the sizes a
 * merge by eights leaves behind 10,000 links of 100 passages (4096, 4096, 512 × 3, 64 × 4, 8 × 2
 * links), and written to a SQLite file and a PostgreSQL database. Then:
 * - writing one 10-passage page as a new segment (a row per distinct term), 200 pages, a
 *   transaction each: the ingestion side;
 * - section 6's 60 queries (one word, two words, "request" and a word), twice, each read with
 *   one lookup per (segment, term) and scored with the repository's bm25 (k-way merge by id, the
 *   best 10 kept): the search side, warm, nothing else running;
 * - the same for 5 s at least while another connection (on SQLite, on a thread of its own, as the
 *   service's writer is) writes page segments without pause;
 * - the same with every tenth link deleted, its passages' ids in a table of dead ids that each
 *   search reads and leaves out;
 * - merging the segments of 512 links, then the two of 4,096, the dead dropped: read, merge in
 *   JavaScript, write (old rows deleted, merged rows written, one transaction).
 *
 * `npx tsc -p bench/tsconfig.json && node --max-old-space-size=12000 dist-bench/bench/search-segments.js
 * [--passages N] [--no-postgres]` (1,000,000 by default: about a minute to make the postings);
 * The encoding, merging and scoring are the service's own (src/domain/knowledgebase/search-index.ts),
 * which test/knowledgebase/search-index.test.ts holds to `searchPassages`' answers.
 * Hidden sets, ties by URL and scoring off the event loop are not modelled: see bench/README.md.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import Database from 'better-sqlite3';
import pg from 'pg';
import { mergePostings, scorePassages, segmentOf } from '../src/domain/knowledgebase/search-index.js';
import { passageTerms, queryTerms } from '../src/text/search-terms.js';
import { createBenchDatabase, postgresReachable } from './lib/postgres.js';
import { latencySummary } from './lib/stats.js';
import { passageText, searchQueries } from './lib/text.js';

const argv = process.argv.slice(2);
const flag = (name: string) => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : undefined;
};
const PASSAGES = Number(flag('--passages') ?? 1_000_000);
const PER_LINK = 100;
const PAGE_PASSAGES = 10;
const PAGES = 200;
const BOT = 'bot';

/** Passage `id` as section 6 makes it, with its terms. */
const passage = (id: number) => ({ id, ...passageTerms(passageText(id - 1)) });

/** The rows of one segment of `passages` (src/domain/knowledgebase/search-index.ts). */
function segmentRows(segment: number, passages: ReturnType<typeof passage>[]): Row[] {
  return [...segmentOf(passages)].map(([term, postings]) => ({ segment, term, postings }));
}

const NO_DEAD = new Int32Array(0);

/** The best 10 of a query (`blobsByTerm`: each term's blobs) among `n` passages, `dead` left out. */
function score(blobsByTerm: Buffer[][], n: number, avgdl: number, dead: ArrayLike<number> = NO_DEAD) {
  return scorePassages(blobsByTerm, { passages: n, terms: avgdl * n }, 10, dead).slice(0, 10);
}

/** Segments merged into one (`segment`): each term's postings in id order, the dead left out. */
function merge(rows: Row[], dead: ArrayLike<number>, segment: number): Row[] {
  const byTerm = new Map<string, Row[]>();
  for (const r of rows) {
    const list = byTerm.get(r.term);
    if (list) list.push(r);
    else byTerm.set(r.term, [r]);
  }
  const out: Row[] = [];
  for (const [term, list] of byTerm) {
    const postings = mergePostings(
      list.map((r) => r.postings),
      dead,
    );
    if (postings !== null) out.push({ segment, term, postings });
  }
  return out;
}

interface Row {
  segment: number;
  term: string;
  postings: Buffer;
}

interface Store {
  name: string;
  insert(rows: Row[]): Promise<void>;
  /** Each query term's blobs, every segment. */
  read(terms: string[]): Promise<Buffer[][]>;
  /** Every row of these segments. */
  segmentRows(segments: number[]): Promise<Row[]>;
  /** In one transaction: these segments' rows deleted, `rows` written. */
  replace(segments: number[], rows: Row[]): Promise<void>;
  /** Writes `pages` as new segments, one transaction each, over and over until stopped; `stop` answers how many. */
  ingest(pages: Row[][]): { ready: Promise<void>; stop(): Promise<number> };
  /** Passages deleted since their segments were written. */
  addDead(ids: number[]): Promise<void>;
  readDead(): Promise<Int32Array>;
  close(): Promise<void>;
}

function sqliteStore(file: string, segments: number): Store {
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.exec(
    'create table seg (bot_id text not null, segment integer not null, term text not null, postings blob not null, primary key (bot_id, segment, term)) without rowid',
  );
  const ins = db.prepare('insert into seg values (?, ?, ?, ?)');
  const one = db.prepare('select postings from seg where bot_id = ? and segment = ? and term = ?').pluck();
  db.exec('create table dead (bot_id text not null, passage_id integer not null, primary key (bot_id, passage_id)) without rowid');
  const insertAll = db.transaction((rows: Row[]) => {
    for (const r of rows) ins.run(BOT, r.segment, r.term, r.postings);
  });
  const rowsOf = db.prepare('select segment, term, postings from seg where bot_id = ? and segment = ?');
  const drop = db.prepare('delete from seg where bot_id = ? and segment = ?');
  const replaceAll = db.transaction((segments: number[], rows: Row[]) => {
    for (const g of segments) drop.run(BOT, g);
    for (const r of rows) ins.run(BOT, r.segment, r.term, r.postings);
  });
  const insDead = db.prepare('insert into dead values (?, ?)');
  const addDead = db.transaction((ids: number[]) => {
    for (const id of ids) insDead.run(BOT, id);
  });
  const dead = db.prepare('select passage_id from dead where bot_id = ? order by passage_id').pluck();
  return {
    name: 'sqlite',
    insert: async (rows) => insertAll(rows),
    read: async (terms) =>
      terms.map((term) => {
        const out: Buffer[] = [];
        for (let s = 0; s < segments; s++) {
          const b = one.get(BOT, s, term) as Buffer | undefined;
          if (b) out.push(b);
        }
        return out;
      }),
    ingest(pages) {
      // Another thread, another connection, as the service's writer thread is.
      const worker = new Worker(
        `const { parentPort, workerData } = require('node:worker_threads');
        const Database = require('better-sqlite3');
        const db = new Database(workerData.file);
        db.pragma('busy_timeout = 5000');
        const ins = db.prepare('insert into seg values (?, ?, ?, ?)');
        const write = db.transaction((segment, rows) => { for (const r of rows) ins.run(workerData.bot, segment, r.term, Buffer.from(r.postings)); });
        let written = 0;
        let stopped = false;
        parentPort.on('message', () => { stopped = true; });
        parentPort.postMessage('ready');
        const step = () => {
          if (stopped) { parentPort.postMessage(written); db.close(); return; }
          write(2000 + written, workerData.pages[written % workerData.pages.length]);
          written++;
          setImmediate(step);
        };
        step();`,
        { eval: true, workerData: { file, bot: BOT, pages } },
      );
      const ready = new Promise<void>((resolve) => worker.once('message', () => resolve()));
      return {
        ready,
        stop: () =>
          new Promise<number>((resolve) => {
            worker.once('message', (n: number) => {
              void worker.terminate();
              resolve(n);
            });
            worker.postMessage('stop');
          }),
      };
    },
    segmentRows: async (segments) => segments.flatMap((g) => rowsOf.all(BOT, g) as Row[]),
    replace: async (segments, rows) => replaceAll(segments, rows),
    addDead: async (ids) => addDead(ids),
    readDead: async () => Int32Array.from(dead.all(BOT) as number[]),
    close: async () => {
      db.close();
    },
  };
}

/** `rows` inserted into the PostgreSQL table, 500 a statement. */
async function insertRows(client: pg.Client, rows: Row[]): Promise<void> {
  for (let i = 0; i < rows.length; i += 500) {
    const params: unknown[] = [];
    const values = rows.slice(i, i + 500).map((r, k) => {
      params.push(BOT, r.segment, r.term, r.postings);
      return `($${k * 4 + 1}, $${k * 4 + 2}, $${k * 4 + 3}, $${k * 4 + 4})`;
    });
    await client.query(`insert into seg values ${values.join(',')}`, params);
  }
}

async function postgresStore(url: string): Promise<Store> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  await c.query(
    'create table seg (bot_id text not null, segment integer not null, term text not null, postings bytea not null, primary key (bot_id, segment, term))',
  );
  await c.query('alter table seg alter column postings set storage external');
  await c.query('create index seg_term on seg (bot_id, term, segment)');
  await c.query('create table dead (bot_id text not null, passage_id integer not null, primary key (bot_id, passage_id))');
  return {
    name: 'postgres',
    async insert(rows) {
      await c.query('begin');
      await insertRows(c, rows);
      await c.query('commit');
    },
    async read(terms) {
      const r = await c.query<{ term: string; postings: Buffer }>(
        'select term, postings from seg where bot_id = $1 and term = any($2::text[]) and segment < 1000 order by segment',
        [BOT, terms],
      );
      return terms.map((t) => r.rows.filter((x) => x.term === t).map((x) => x.postings));
    },
    ingest(pages) {
      const writer = new pg.Client({ connectionString: url });
      let written = 0;
      let stopped = false;
      const ready = writer.connect().then(() => undefined);
      const done = (async () => {
        await ready;
        while (!stopped) {
          await writer.query('begin'); // a page a transaction, as the service stores one
          await insertRows(
            writer,
            pages[written % pages.length]!.map((r) => ({ ...r, segment: 2000 + written })),
          );
          await writer.query('commit');
          written++;
        }
        await writer.end();
        return written;
      })();
      return {
        ready,
        stop: () => {
          stopped = true;
          return done;
        },
      };
    },
    async segmentRows(segments) {
      const r = await c.query<Row>('select segment, term, postings from seg where bot_id = $1 and segment = any($2::int[])', [BOT, segments]);
      return r.rows;
    },
    async replace(segments, rows) {
      await c.query('begin');
      await c.query('delete from seg where bot_id = $1 and segment = any($2::int[])', [BOT, segments]);
      await insertRows(c, rows);
      await c.query('commit');
    },
    async addDead(ids) {
      await c.query('insert into dead select $1, unnest($2::int[])', [BOT, ids]);
    },
    async readDead() {
      const r = await c.query<{ passage_id: number }>('select passage_id from dead where bot_id = $1 order by passage_id', [BOT]);
      return Int32Array.from(r.rows, (x) => x.passage_id);
    },
    close: () => c.end(),
  };
}

async function measure(store: Store, base: Row[], pages: Row[][], sizes: number[], n: number, avgdl: number, log: (l: string) => void) {
  let t = performance.now();
  await store.insert(base);
  log(`  ${store.name}: ${base.length} rows written in ${((performance.now() - t) / 1000).toFixed(1)} s`);
  const search = async (q: string, dead: ArrayLike<number> = NO_DEAD) => score(await store.read(queryTerms(q)), n - dead.length, avgdl, dead);
  const writes: number[] = [];
  for (const page of pages) {
    t = performance.now();
    await store.insert(page);
    writes.push(performance.now() - t);
  }
  const w = latencySummary(writes);
  log(`  ${store.name}: a page of ${PAGE_PASSAGES} passages as a segment (${pages[0]!.length} rows): p50 ${w.p50_ms} ms, p99 ${w.p99_ms} ms (n=${w.n})`);
  const list = searchQueries(60);
  const times: number[][] = [[], [], []];
  for (let pass = 0; pass < 3; pass++) {
    for (const [i, q] of list.entries()) {
      t = performance.now();
      await search(q);
      if (pass > 0) times[i % 3]!.push(performance.now() - t);
    }
  }
  for (const [k, label] of ['one word', 'two words', '"request" + a word'].entries()) {
    const s = latencySummary(times[k]!);
    log(`  ${store.name}: ${label}: p50 ${s.p50_ms} ms, max ${s.max_ms} ms (n=${s.n})`);
  }
  const all = latencySummary(times.flat());
  log(`  ${store.name}: all: p50 ${all.p50_ms} ms, p99 ${all.p99_ms} ms (n=${all.n})`);

  // The same searches while another connection (on SQLite, on another thread) writes page segments without pause.
  const ingestion = store.ingest(pages);
  await ingestion.ready;
  const busy: number[] = [];
  const started = performance.now();
  // Two passes of the queries at least, and 5 s at least.
  for (let pass = 0; pass < 2 || performance.now() - started < 5000; pass++) {
    for (const q of list) {
      t = performance.now();
      await search(q);
      busy.push(performance.now() - t);
    }
  }
  const seconds = (performance.now() - started) / 1000;
  const written = await ingestion.stop();
  const b = latencySummary(busy);
  log(
    `  ${store.name}: while ${written} pages were written as segments (${(written / seconds).toFixed(0)}/s): all: p50 ${b.p50_ms} ms, p99 ${b.p99_ms} ms (n=${b.n})`,
  );

  // Every tenth link deleted (its passages dead until a merge drops them), read by every search.
  const deadIds: number[] = [];
  for (let first = 1; first <= n; first += PER_LINK * 10) for (let k = 0; k < PER_LINK; k++) deadIds.push(first + k);
  await store.addDead(deadIds);
  const reads: number[] = [];
  const withDead: number[] = [];
  for (let pass = 0; pass < 3; pass++) {
    for (const q of list) {
      t = performance.now();
      const dead = await store.readDead();
      const read = performance.now() - t;
      await search(q, dead);
      if (pass > 0) {
        reads.push(read);
        withDead.push(performance.now() - t);
      }
    }
  }
  const r = latencySummary(reads);
  const d = latencySummary(withDead);
  log(
    `  ${store.name}: ${deadIds.length.toLocaleString('en-US')} dead passages read by each search (p50 ${r.p50_ms} ms): all: p50 ${d.p50_ms} ms, p99 ${d.p99_ms} ms (n=${d.n})`,
  );

  // Merges, the dead dropped: the segments of 512 links, then the two of 4096.
  for (const size of [512, 4096]) {
    const segments = sizes.flatMap((s, i) => (s === size ? [i] : []));
    if (segments.length < 2) continue;
    t = performance.now();
    const rows = await store.segmentRows(segments);
    const dead = await store.readDead();
    const read = performance.now() - t;
    t = performance.now();
    const merged = merge(rows, dead, size === 512 ? 500 : 501); // below the pages (1000 on)
    const built = performance.now() - t;
    t = performance.now();
    await store.replace(segments, merged);
    const written = performance.now() - t;
    const mb = (x: Row[]) => (x.reduce((sum, row) => sum + row.postings.length, 0) / 1e6).toFixed(0);
    log(
      `  ${store.name}: merging ${segments.length} segments of ${size} links (${mb(rows)} MB → ${mb(merged)} MB): read ${read.toFixed(0)} ms, merged in JavaScript ${built.toFixed(0)} ms, written ${written.toFixed(0)} ms`,
    );
  }
}

const log = (line: string) => console.log(line);

async function main(): Promise<void> {
  const t0 = performance.now();
  // Segments: links cut as a merge by eights leaves them, the oldest (lowest ids) first.
  const sizes: number[] = [];
  let left = PASSAGES / PER_LINK;
  for (const s of [4096, 4096, 512, 512, 512, 64, 64, 64, 64, 8, 8, 8, 8, 8, 8, 8, 1, 1, 1, 1, 1, 1, 1]) {
    if (left <= 0) break;
    sizes.push(Math.min(s, left));
    left -= s;
  }
  if (left > 0) sizes[0]! += left;
  const base: Row[] = [];
  let terms = 0;
  for (let segment = 0, id = 1; segment < sizes.length; segment++) {
    const passages = Array.from({ length: sizes[segment]! * PER_LINK }, () => passage(id++));
    for (const p of passages) terms += p.term_count;
    base.push(...segmentRows(segment, passages));
  }
  const pages: Row[][] = [];
  for (let page = 0, id = PASSAGES + 1; page < PAGES; page++) {
    pages.push(
      segmentRows(
        1000 + page,
        Array.from({ length: PAGE_PASSAGES }, () => passage(id++)),
      ),
    );
  }
  const distinct = new Set(base.map((r) => r.term)).size;
  log(`${PASSAGES.toLocaleString('en-US')} passages, ${distinct} terms, made in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  log(`${sizes.length} segments (links: ${sizes.join(', ')}), ${base.length} rows`);
  const avgdl = terms / PASSAGES;

  const dir = mkdtempSync(path.join(tmpdir(), 'cms-search-segments-'));
  try {
    const store = sqliteStore(path.join(dir, 'seg.db'), sizes.length);
    await measure(store, base, pages, sizes, PASSAGES, avgdl, log);
    await store.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  if (!argv.includes('--no-postgres') && (await postgresReachable())) {
    const database = await createBenchDatabase();
    try {
      const store = await postgresStore(database.url);
      await measure(store, base, pages, sizes, PASSAGES, avgdl, log);
      await store.close();
    } finally {
      await database.drop();
    }
  }
}

await main();
