/**
 * CPU profiles of the scenarios the benchmark measures, summarised (top self-time
 * functions and files). The CLI runs under `node --cpu-prof`; the service runs in a
 * service host whose V8 profiler is started and stopped around the measured work only.
 *
 *   node dist-bench/bench/profile.js cli FILE            copilot-service validate FILE
 *   node dist-bench/bench/profile.js list [postgres]     GET /backend/api/copilots?limit=100 under autocannon
 *   node dist-bench/bench/profile.js delete [postgres]   DELETE of 1,000 links / 100,000 passages
 *   node dist-bench/bench/profile.js validate FILE       GET …/validator, cache cleared each time
 *   node dist-bench/bench/profile.js crawl [postgres]    a crawl of a local 2,000-page site (KB_WORKERS=2 unless set)
 *   node dist-bench/bench/profile.js large [postgres]    a 25 MiB Markdown page stored whole, lists at 50/s meanwhile (section 4)
 * Profiles go to bench/.work/profiles/. With `--threads` after a service scenario, the service
 * host runs under `node --cpu-prof` instead, and every thread's profile is summarised (the SQLite
 * writer, the task threads, the search and index threads: where the event loop only waits).
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import autocannon from 'autocannon';
import { withHost } from './lib/host.js';
import { json, send, timedGet } from './lib/http.js';
import { REPO_ROOT, WORK_DIR } from './lib/paths.js';
import { summarise } from './profile-summary.js';
import { benchCrawl, benchLargePage } from './sections/knowledge-base.js';

const DIR = path.join(WORK_DIR, 'profiles');

function report(file: string, top = 20): void {
  const s = summarise(JSON.parse(readFileSync(file, 'utf8')), top);
  const print = (title: string, rows: Array<{ name: string; ms: number; share: number }>) => {
    process.stdout.write(`\n${title}\n`);
    for (const r of rows) process.stdout.write(`${r.ms.toFixed(1).padStart(9)} ms ${r.share.toFixed(1).padStart(5)} %  ${r.name}\n`);
  };
  process.stdout.write(`\n${path.relative(process.cwd(), file)}: ${s.totalMs} ms sampled\n`);
  print('Self time by function:', s.functions);
  print('Self time by file:', s.files);
  print('Total time by function (self + callees):', s.inclusive);
}

async function main(argv: string[]): Promise<void> {
  mkdirSync(DIR, { recursive: true });
  const threads = argv.includes('--threads');
  const [scenario, arg] = argv.filter((a) => a !== '--threads');
  const dialect = arg === 'postgres' ? 'postgres' : 'sqlite';
  const stamp = `${scenario}-${Date.now()}`;
  if (scenario === 'cli') {
    if (!arg) throw new Error('profile.js cli FILE');
    const dir = path.join(DIR, stamp);
    const pkg = JSON.parse(readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as { bin: Record<string, string> };
    const cli = path.join(REPO_ROOT, pkg.bin['copilot-service']!); // the installed (bundled) command
    spawnSync(process.execPath, ['--cpu-prof', `--cpu-prof-dir=${dir}`, '--cpu-prof-interval=100', cli, 'validate', arg], {
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    const [file] = readdirSync(dir)
      .map((f) => path.join(dir, f))
      .sort((a, b) => statSync(b).size - statSync(a).size);
    report(file!);
    return;
  }
  const file = path.join(DIR, `${stamp}-${dialect}.cpuprofile`);
  const threadsDir = path.join(DIR, `${stamp}-${dialect}-threads`);
  const execArgv = threads ? ['--cpu-prof', `--cpu-prof-dir=${threadsDir}`, '--cpu-prof-interval=500'] : undefined;
  const workers = { KB_WORKERS: process.env.KB_WORKERS ?? '2', FETCH_ALLOW_NETWORKS: '127.0.0.0/8', KB_POLL_INTERVAL_MS: '50' };
  const env: Record<string, string> =
    scenario === 'crawl'
      ? workers
      : scenario === 'large'
        ? { ...workers, KB_MAX_PASSAGES_PER_LINK: '1000000', KB_MAX_PASSAGES_PER_BOT: '1000000' } // as section 4 runs it
        : { KB_WORKERS: '0' };
  await withHost(
    dialect,
    env,
    async (host, service) => {
      const headers = { authorization: `Bearer ${service.key}` };
      if (scenario === 'list') {
        for (let i = 0; i < 120; i++)
          await json('POST', `${service.url}/backend/api/copilots`, service.key, { name: `Copilot ${i}`, website: `https://example${i}.com` });
        const url = `${service.url}/backend/api/copilots?limit=100`;
        await autocannon({ url, headers, connections: 10, duration: 2 });
        await host.call('profileStart', {});
        const result = await autocannon({ url, headers, connections: 10, duration: 10 });
        await host.call('profileStop', { file });
        process.stdout.write(`list under profiler: ${result.requests.average} req/s, p99 ${result.latency.p99} ms\n`);
      } else if (scenario === 'delete') {
        const bot = await json<{ id: string }>('POST', `${service.url}/backend/api/copilots`, service.key, { name: 'kb' });
        const { urls } = await host.call<{ urls: string[] }>('seedKnowledgeBase', { botId: bot.id, links: 1000, passagesPerLink: 100, prefix: 'p' });
        await host.call('profileStart', {});
        const started = performance.now();
        const res = await send('DELETE', `${service.url}/backend/knowledgebase/b/${bot.id}`, {
          headers: { ...headers, 'content-type': 'application/json' },
          body: JSON.stringify({ links: urls }),
        });
        const ms = performance.now() - started;
        await host.call('profileStop', { file });
        process.stdout.write(`delete under profiler: ${res.status} in ${ms.toFixed(0)} ms\n`);
      } else if (scenario === 'validate') {
        if (!arg) throw new Error('profile.js validate FILE');
        const bot = await json<{ id: string }>('POST', `${service.url}/backend/api/copilots`, service.key, { name: 'doc' });
        const up = await send('PUT', `${service.url}/backend/api/copilot/${bot.id}/swagger`, {
          headers: { ...headers, 'content-type': arg.endsWith('.json') ? 'application/json' : 'application/yaml' },
          body: readFileSync(arg),
        });
        if (up.status !== 200) throw new Error(`upload → ${up.status}`);
        const url = `${service.url}/backend/api/copilot/${bot.id}/validator`;
        await timedGet(url, headers);
        await host.call('profileStart', {});
        const times: number[] = [];
        for (let i = 0; i < 10; i++) {
          await host.call('clearCache');
          times.push(await timedGet(url, headers));
        }
        await host.call('profileStop', { file });
        process.stdout.write(`first validations under profiler: ${times.map((t) => t.toFixed(0)).join(', ')} ms\n`);
      } else if (scenario === 'crawl') {
        await host.call('profileStart', {});
        const cpu = await host.call<NodeJS.CpuUsage>('cpuUsage');
        const ownCpu = process.cpuUsage();
        const result = await benchCrawl(service, { pages: 2000, runs: 1, warmup: false, workers: 2, log: (l) => process.stdout.write(`${l}\n`) });
        const after = await host.call<NodeJS.CpuUsage>('cpuUsage');
        const own = process.cpuUsage(ownCpu);
        await host.call('profileStop', { file });
        const seconds = result.runs[0]!.seconds;
        const cpuSeconds = (after.user - cpu.user + after.system - cpu.system) / 1e6;
        process.stdout.write(
          `crawl under profiler: ${result.median_pages_per_s} pages/s; service CPU ${cpuSeconds.toFixed(1)} s over ${seconds} s (every thread); this process (the site, the polling) ${((own.user + own.system) / 1e6).toFixed(1)} s\n`,
        );
      } else if (scenario === 'large') {
        await host.call('profileStart', {});
        const result = await benchLargePage(service, { bytes: 25 * 1024 * 1024, rounds: 1, listRate: 50, log: (l) => process.stdout.write(`${l}\n`) });
        await host.call('profileStop', { file });
        const { p99_ms, max_ms } = result.lists_during;
        process.stdout.write(
          `large page under profiler: ${result.passages} passages in ${result.ingest_ms[0]} ms; lists meanwhile p99 ${p99_ms} ms, max ${max_ms} ms\n`,
        );
      } else {
        throw new Error('scenario: cli FILE | list [postgres] | delete [postgres] | validate FILE | crawl [postgres] | large [postgres]');
      }
    },
    { execArgv },
  );
  report(file);
  // Every thread's profile, written when the host exits (the main thread's covers the whole run).
  if (threads) for (const f of readdirSync(threadsDir).sort()) report(path.join(threadsDir, f), 12);
}

main(process.argv.slice(2)).then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
