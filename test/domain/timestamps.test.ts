/**
 * The service's timestamps (DESIGN §3: UTC, microseconds): read from the wall clock at every
 * call, so a clock that NTP steps is followed at once (clock sweep: the clock read at start plus a
 * monotonic timer kept a boot-time error, or a suspend's lag, for the life of the process).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { daysAgo, formatMicros, followClockOffset, isTimestamp, nowTimestamp, timestampIn } from '../../src/domain/ids.js';

const at = (iso: string) => vi.spyOn(Date, 'now').mockReturnValue(Date.parse(iso));
afterEach(() => {
  vi.restoreAllMocks();
  followClockOffset(0);
});

describe('timestamps', () => {
  it('follow the wall clock when it is stepped, forward or back', () => {
    at('2031-05-06T07:08:09.123Z');
    expect(nowTimestamp()).toBe('2031-05-06T07:08:09.123000Z');
    expect(timestampIn(60_000)).toBe('2031-05-06T07:09:09.123000Z');
    expect(daysAgo(2)).toBe('2031-05-04T07:08:09.123000Z');
    // NTP steps the clock back an hour: the next timestamps are an hour earlier, not frozen ahead.
    at('2031-05-06T06:08:10.000Z');
    expect(nowTimestamp()).toBe('2031-05-06T06:08:10.000000Z');
    expect(timestampIn(1000)).toBe('2031-05-06T06:08:11.000000Z');
    at('2031-05-06T09:00:00.000Z');
    expect(nowTimestamp()).toBe('2031-05-06T09:00:00.000000Z');
  });

  it('are strictly increasing while the clock reads the same millisecond', () => {
    at('2031-05-06T07:08:09.123Z');
    const seen = Array.from({ length: 1500 }, () => nowTimestamp());
    for (let i = 1; i < seen.length; i++) expect(seen[i]! > seen[i - 1]!, seen[i]).toBe(true);
    expect(seen[0]).toBe('2031-05-06T07:08:09.123000Z');
    expect(seen.every(isTimestamp)).toBe(true);
  });

  it('are in the wire format past 2038', () => {
    expect(formatMicros(Date.parse('2200-12-31T23:59:59.999Z') * 1000 + 999)).toBe('2200-12-31T23:59:59.999999Z');
    expect(formatMicros(Date.parse('2038-01-19T03:14:08Z') * 1000)).toBe('2038-01-19T03:14:08.000000Z');
  });

  it("follow the database server's clock once it is more than a second from this machine's (clock sweep: instances timed leases by their own clocks)", () => {
    at('2031-05-06T07:00:00.000Z');
    // Under a second: measurement noise, not followed (timestamps stay as the machine reads them).
    expect(followClockOffset(800)).toBe(false);
    expect(nowTimestamp()).toBe('2031-05-06T07:00:00.000000Z');
    // This machine runs two hours fast: every reading is the server's time.
    expect(followClockOffset(-7_200_000)).toBe(true);
    at('2031-05-06T07:00:01.000Z');
    expect(nowTimestamp()).toBe('2031-05-06T05:00:01.000000Z');
    expect(timestampIn(30_000)).toBe('2031-05-06T05:00:31.000000Z');
    expect(daysAgo(1)).toBe('2031-05-05T05:00:01.000000Z');
    // Measured again a few milliseconds off: kept as it is.
    expect(followClockOffset(-7_200_004)).toBe(false);
    expect(followClockOffset(0)).toBe(true);
    at('2031-05-06T07:00:02.000Z');
    expect(nowTimestamp()).toBe('2031-05-06T07:00:02.000000Z');
  });
});
