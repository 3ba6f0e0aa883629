/**
 * Summarises V8 CPU profiles (`node --cpu-prof`): total sampled time, the functions and
 * the files with the most self time, and — with `--inclusive` — the functions with the
 * most total (self + callees) time.
 *
 *   node dist-bench/bench/profile-summary.js [--top 25] [--inclusive] FILE.cpuprofile…
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  children?: number[];
}

interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

export interface Row {
  name: string;
  ms: number;
  share: number;
}

function shortUrl(url: string): string {
  if (url === '') return '(native/V8)';
  const clean = url.replace(/^file:\/\//, '');
  const nm = clean.lastIndexOf('node_modules/');
  if (nm >= 0) return clean.slice(nm);
  for (const marker of ['/dist-bench/', '/dist/', '/src/']) {
    const i = clean.indexOf(marker);
    if (i >= 0) return clean.slice(i + 1);
  }
  return clean.startsWith('node:') ? clean : path.basename(clean);
}

export function summarise(profile: Profile, top = 25): { totalMs: number; functions: Row[]; files: Row[]; inclusive: Row[] } {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  for (let i = 0; i < profile.samples.length; i++) {
    const id = profile.samples[i]!;
    self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0) / 1000);
  }
  const totalMs = [...self.values()].reduce((a, b) => a + b, 0);
  const label = (n: ProfileNode) => {
    const f = n.callFrame;
    const name = f.functionName || '(anonymous)';
    return f.url ? `${name}  ${shortUrl(f.url)}:${f.lineNumber + 1}` : name;
  };
  const functions = new Map<string, number>();
  const files = new Map<string, number>();
  for (const [id, ms] of self) {
    const n = byId.get(id)!;
    functions.set(label(n), (functions.get(label(n)) ?? 0) + ms);
    const file = shortUrl(n.callFrame.url);
    files.set(file, (files.get(file) ?? 0) + ms);
  }
  // Inclusive time: each node's self time counted once for every distinct function on its stack.
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const inclusive = new Map<string, number>();
  for (const [id, ms] of self) {
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const l = label(byId.get(cur)!);
      if (seen.has(l)) continue;
      seen.add(l);
      inclusive.set(l, (inclusive.get(l) ?? 0) + ms);
    }
  }
  const rows = (m: Map<string, number>) =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, ms]) => ({ name, ms: Math.round(ms * 10) / 10, share: Math.round((ms / totalMs) * 1000) / 10 }));
  return { totalMs: Math.round(totalMs), functions: rows(functions), files: rows(files), inclusive: rows(inclusive) };
}

function main(argv: string[]): void {
  let top = 25;
  let showInclusive = false;
  const files: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--top') top = Number(argv[++i]);
    else if (argv[i] === '--inclusive') showInclusive = true;
    else files.push(argv[i]!);
  }
  for (const file of files) {
    const s = summarise(JSON.parse(readFileSync(file, 'utf8')) as Profile, top);
    const print = (title: string, rows: Row[]) => {
      process.stdout.write(`\n${title}\n`);
      for (const r of rows) process.stdout.write(`${r.ms.toFixed(1).padStart(9)} ms ${r.share.toFixed(1).padStart(5)} %  ${r.name}\n`);
    };
    process.stdout.write(`${file}: ${s.totalMs} ms sampled\n`);
    print('Self time by function:', s.functions);
    print('Self time by file:', s.files);
    if (showInclusive) print('Total time by function (self + callees):', s.inclusive);
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) main(process.argv.slice(2));
