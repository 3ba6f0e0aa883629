/**
 * The turns on the scan connections (src/storage/scans.ts): a tenant never holds every
 * connection, waiting tenants are served round robin, and a tenant's queue is bounded.
 */
import { describe, expect, it } from 'vitest';
import { TooManyWaiting } from '../../src/fair-turns.js';
import { FairScans, ScanTimedOut, withinTimeLimit } from '../../src/storage/scans.js';

/** A scan that runs until the test ends it: records its start (tenant, slot) and settles on demand. */
function harness(scans: FairScans) {
  const started: string[] = [];
  const endings = new Map<string, (fail?: boolean) => void>();
  const settled: string[] = [];
  const run = (tenant: string, name: string) =>
    scans
      .run(tenant, (slot) => {
        started.push(`${name}@${slot}`);
        return new Promise<string>((resolve, reject) => endings.set(name, (fail) => (fail ? reject(new Error(name)) : resolve(name))));
      })
      .then(
        (value) => settled.push(`${value} ok`),
        (err: Error) => settled.push(`${err instanceof TooManyWaiting ? `refused ${name}` : `${err.message} failed`}`),
      );
  const end = async (name: string, fail = false) => {
    endings.get(name)!(fail);
    for (let i = 0; i < 5; i++) await Promise.resolve(); // the release, then the next start
  };
  return { started, settled, run, end };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('the scan connections’ turns', () => {
  it('leaves a connection for another tenant while one tenant has scans waiting', async () => {
    const h = harness(new FairScans(2, 1, 10));
    h.run('a', 'a1');
    h.run('a', 'a2');
    h.run('a', 'a3');
    h.run('b', 'b1');
    await tick();
    // a runs one scan at a time; b starts at once on the other connection.
    expect(h.started).toEqual(['a1@0', 'b1@1']);
    await h.end('b1');
    // The free connection is not a's to take: a has one running, its limit.
    expect(h.started).toEqual(['a1@0', 'b1@1']);
    await h.end('a1');
    expect(h.started).toEqual(['a1@0', 'b1@1', 'a2@0']);
  });

  it('serves waiting tenants round robin, first come first served within each', async () => {
    const h = harness(new FairScans(1, 1, 10));
    h.run('a', 'a1');
    h.run('a', 'a2');
    h.run('a', 'a3');
    h.run('b', 'b1');
    h.run('b', 'b2');
    h.run('c', 'c1');
    await tick();
    for (const name of ['a1', 'a2', 'b1', 'c1', 'a3', 'b2']) {
      expect(h.started.at(-1)).toBe(`${name}@0`);
      await h.end(name);
    }
    expect(h.started.map((s) => s.split('@')[0])).toEqual(['a1', 'a2', 'b1', 'c1', 'a3', 'b2']);
  });

  it('refuses a tenant’s scan beyond its waiting limit at once, and no other tenant’s', async () => {
    const scans = new FairScans(1, 1, 2);
    const h = harness(scans);
    h.run('a', 'a1'); // running
    h.run('a', 'a2'); // waiting
    h.run('a', 'a3'); // waiting
    h.run('a', 'a4'); // refused
    h.run('b', 'b1'); // waiting: b's own queue
    await tick();
    expect(h.settled).toEqual(['refused a4']);
    expect(scans.stats()).toEqual({ running: 1, waiting: 3, refused: 1, timedOut: 0 });
    for (const name of ['a1', 'a2', 'b1', 'a3']) await h.end(name);
    expect(h.settled).toEqual(['refused a4', 'a1 ok', 'a2 ok', 'b1 ok', 'a3 ok']);
    expect(scans.stats()).toEqual({ running: 0, waiting: 0, refused: 1, timedOut: 0 });
  });

  it('gives the connection back when a scan fails, or throws before it starts its work', async () => {
    const scans = new FairScans(1, 1, 10);
    const h = harness(scans);
    h.run('a', 'a1');
    const thrown = scans.run('a', () => {
      throw new Error('sync');
    });
    h.run('a', 'a2');
    await tick();
    await h.end('a1', true);
    await expect(thrown).rejects.toThrow('sync');
    await tick();
    expect(h.started).toEqual(['a1@0', 'a2@0']);
    await h.end('a2');
    expect(h.settled).toEqual(['a1 failed', 'a2 ok']);
    expect(scans.stats()).toEqual({ running: 0, waiting: 0, refused: 0, timedOut: 0 });
  });

  it('frees the connection of a scan past its time limit at once, and holds its tenant until the set-aside work ends', async () => {
    const scans = new FairScans(1, 1, 10);
    const h = harness(scans);
    let endSetAside!: () => void;
    const setAsideEnded = new Promise<void>((resolve) => (endSetAside = resolve));
    // a1 runs past its limit: its work goes on (as a SQLite statement on its thread), its answer is ScanTimedOut.
    const a1 = scans.run('a', () => withinTimeLimit(new Promise<never>(() => undefined), 5, () => scans.holdTurn('a', setAsideEnded)));
    h.run('a', 'a2');
    h.run('b', 'b1');
    await expect(a1).rejects.toBeInstanceOf(ScanTimedOut);
    await tick();
    // The connection went to b at once; a waits for its set-aside work.
    expect(h.started).toEqual(['b1@0']);
    await h.end('b1');
    expect(h.started).toEqual(['b1@0']);
    endSetAside();
    await tick();
    expect(h.started).toEqual(['b1@0', 'a2@0']);
    await h.end('a2');
    expect(scans.stats()).toEqual({ running: 0, waiting: 0, refused: 0, timedOut: 1 });
  });

  it('settles within the time limit as the work does', async () => {
    let setAside = 0;
    await expect(withinTimeLimit(Promise.resolve(7), 1000, () => setAside++)).resolves.toBe(7);
    await expect(withinTimeLimit(Promise.reject(new Error('no')), 1000, () => setAside++)).rejects.toThrow('no');
    expect(setAside).toBe(0);
  });
});
