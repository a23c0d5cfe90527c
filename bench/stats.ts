/**
 * Small statistics and concurrency helpers shared by the HTTP scenarios (latency, api-throughput,
 * decision-latency, sse-fanout, ...). Percentiles are nearest-rank; nothing here asserts timing.
 */
import { round } from './lib.ts';

/** Nearest-rank percentile of an ascending array. */
function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1] as number;
}

export interface Stats {
  readonly n: number;
  readonly p50: number;
  readonly p95: number;
  readonly p99: number;
  readonly mean: number;
  readonly min: number;
  readonly max: number;
}

export function stats(values: readonly number[]): Stats {
  const sorted = Float64Array.from(values).sort();
  let sum = 0;
  for (const v of sorted) sum += v;
  return {
    n: sorted.length,
    p50: round(percentile(sorted, 50), 3),
    p95: round(percentile(sorted, 95), 3),
    p99: round(percentile(sorted, 99), 3),
    mean: round(sum / Math.max(1, sorted.length), 3),
    min: round(sorted[0] ?? Number.NaN, 3),
    max: round(sorted[sorted.length - 1] ?? Number.NaN, 3),
  };
}

export function mean(values: readonly number[]): number {
  return values.length === 0 ? Number.NaN : values.reduce((a, b) => a + b, 0) / values.length;
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

/** a ÷ b for p50/p95/p99/mean of two Stats (e.g. Baton over its baseline). */
export function statsRatio(a: Stats, b: Stats, digits = 2): Record<string, number> {
  return {
    p50: round(a.p50 / b.p50, digits),
    p95: round(a.p95 / b.p95, digits),
    p99: round(a.p99 / b.p99, digits),
    mean: round(a.mean / b.mean, digits),
  };
}

/** Lanes run `fn` one after another; at most `width` in flight; results in index order. */
export async function lanes<R>(
  n: number,
  width: number,
  fn: (i: number) => Promise<R>,
): Promise<R[]> {
  const out = new Array<R>(n);
  let next = 0;
  const lane = async (): Promise<void> => {
    for (;;) {
      const i = next++;
      if (i >= n) return;
      out[i] = await fn(i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(width, n) }, lane));
  return out;
}
