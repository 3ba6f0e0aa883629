import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey, revokeApiKey } from '../../src/domain/auth/api-keys.js';
import { changeCountersReader, sharedFreshReads } from '../../src/domain/change-counters.js';
import { createCopilot } from '../../src/domain/copilots/copilot.service.js';
import type { Storage } from '../../src/storage/database.js';
import { createTestStorage, DIALECTS } from '../support/databases.js';

/** A read whose completion the test controls; records when each read started. */
function controlledReads() {
  const started: number[] = [];
  const finishers: Array<(value: number) => void> = [];
  let clock = 0;
  const read = () => {
    started.push(clock);
    return new Promise<number>((resolve) => finishers.push(resolve));
  };
  return {
    read,
    started,
    tick: () => ++clock,
    finish: (i: number, value: number) => finishers[i]!(value),
  };
}

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('sharedFreshReads', () => {
  it('gives the callers of one turn one shared read', async () => {
    const c = controlledReads();
    const get = sharedFreshReads(c.read);
    const calls = [get(), get(), get()];
    await turn();
    expect(c.started).toHaveLength(1);
    c.finish(0, 7);
    expect(await Promise.all(calls)).toEqual([7, 7, 7]);
  });

  it('never hands a caller a read that started before its call, and does not wait for it either', async () => {
    const c = controlledReads();
    const get = sharedFreshReads(c.read);
    const first = get();
    await turn();
    expect(c.started).toEqual([0]);
    c.tick(); // time 1: a read is running; these callers must get a new one
    const second = [get(), get()];
    await turn();
    expect(c.started).toEqual([0, 1]); // one read for both, started after their calls, while the first still runs
    c.finish(1, 2);
    expect(await Promise.all(second)).toEqual([2, 2]);
    c.finish(0, 1);
    expect(await first).toBe(1);
  });

  it('fails only the callers of a failed read; the next call reads again', async () => {
    let n = 0;
    const get = sharedFreshReads(async () => {
      n++;
      if (n === 1) throw new Error('database gone');
      return n;
    });
    await expect(Promise.all([get(), get()])).rejects.toThrow('database gone');
    expect(n).toBe(1);
    expect(await get()).toBe(2);
  });
});

for (const dialect of DIALECTS) {
  describe(`change counters (${dialect})`, () => {
    let storage: Storage;
    let cleanup: () => Promise<void>;
    beforeAll(async () => {
      ({ storage, cleanup } = await createTestStorage(dialect));
    });
    afterAll(async () => cleanup());

    it('change with every copilot write and every key creation and revocation, and only then', async () => {
      const read = changeCountersReader(storage);
      const before = await read();
      expect(before.copilots).not.toBeNull();
      expect(before.apiKeys).not.toBeNull();
      const key = await createApiKey(storage, { scopes: ['admin'] });
      const afterKey = await read();
      expect(afterKey.apiKeys).not.toBe(before.apiKeys);
      expect(afterKey.copilots).toBe(before.copilots);

      await createCopilot(storage, { name: 'counted' });
      const afterCopilot = await read();
      expect(afterCopilot.copilots).not.toBe(afterKey.copilots);
      expect(afterCopilot.apiKeys).toBe(afterKey.apiKeys);

      await revokeApiKey(storage, key.id);
      const afterRevoke = await read();
      expect(afterRevoke.apiKeys).not.toBe(afterCopilot.apiKeys);
      expect(await read()).toEqual(afterRevoke); // reading changes nothing
    });

    it('are tokens, not counters: a restored database does not bring back a value caches may hold', async () => {
      const read = changeCountersReader(storage);
      const seen = new Set<number | null>([(await read()).apiKeys]);
      for (let i = 0; i < 5; i++) {
        await createApiKey(storage, { scopes: ['copilots:read'] });
        seen.add((await read()).apiKeys);
      }
      expect(seen.size).toBe(6); // all different, and not a run of consecutive numbers
      const values = [...seen] as number[];
      expect(values.every((v) => Number.isSafeInteger(v))).toBe(true);
      expect(values.slice(1).every((v, i) => v === values[i]! + 1)).toBe(false);
    });

    if (dialect === 'postgres') {
      it('change on TRUNCATE too (PostgreSQL)', async () => {
        const read = changeCountersReader(storage);
        const before = await read();
        await sql`truncate api_keys`.execute(storage.db);
        expect((await read()).apiKeys).not.toBe(before.apiKeys);
      });
    }

    it('read as null when a token row is missing (then nothing is cached under it)', async () => {
      await storage.db.deleteFrom('change_counters').where('name', '=', 'api_keys').execute();
      const tokens = await changeCountersReader(storage)();
      expect(tokens.apiKeys).toBeNull();
      expect(tokens.copilots).not.toBeNull();
    });
  });
}
