/** Small statistics helpers: every comparison is a ratio of medians measured in the same run. */

export function median(values: readonly number[]): number {
  return percentile(values, 50);
}

/** Nearest-rank percentile (p in 0..100); NaN for no values. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))]!;
}

export function ratio(a: number, b: number): number {
  return b === 0 || !Number.isFinite(a) || !Number.isFinite(b) ? Number.NaN : a / b;
}

export function round(value: number, digits = 2): number {
  if (!Number.isFinite(value)) return value;
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

/** Count, p50, p99 and maximum of latencies in milliseconds (rounded to 0.01 ms). */
export function latencySummary(ms: readonly number[]): { n: number; p50_ms: number; p99_ms: number; max_ms: number } {
  return { n: ms.length, p50_ms: round(percentile(ms, 50), 2), p99_ms: round(percentile(ms, 99), 2), max_ms: round(Math.max(...ms), 2) };
}
