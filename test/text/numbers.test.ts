import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { groupDigits } from '../../src/text/numbers.js';

describe('groupDigits', () => {
  it('writes whole numbers as toLocaleString("en-US") does', () => {
    for (const n of [0, 7, 12, 999, 1000, 12_345, 100_000, 999_999, 1_000_000, 2 ** 53 - 1, -1, -1234, -1_000_000])
      expect(groupDigits(n)).toBe(n.toLocaleString('en-US'));
    fc.assert(fc.property(fc.maxSafeInteger(), (n) => groupDigits(n) === n.toLocaleString('en-US')));
  });
});
