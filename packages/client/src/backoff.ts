/**
 * When a broken event stream reconnects, and when it gives up. Delays grow exponentially from
 * `initialDelayMs` to `maxDelayMs`; jitter spreads clients that lost the same API instance so they
 * do not all come back in the same millisecond.
 */
export interface ReconnectPolicy {
  /** Delay before the first reconnect attempt (default 250 ms). */
  readonly initialDelayMs?: number;
  /** Upper bound of a delay (default 5 000 ms). */
  readonly maxDelayMs?: number;
  /** Growth factor per consecutive failure (default 2). */
  readonly multiplier?: number;
  /** Fraction of each delay that is random, 0..1 (default 0.5: a delay d becomes d/2..d). */
  readonly jitter?: number;
  /** Give up after this many consecutive failed attempts (default 20; Infinity never). */
  readonly maxAttempts?: number;
  /** Give up when failures have lasted this long without an event in between (default 120 000 ms). */
  readonly maxElapsedMs?: number;
}

export const DEFAULT_RECONNECT_POLICY: Required<ReconnectPolicy> = {
  initialDelayMs: 250,
  maxDelayMs: 5_000,
  multiplier: 2,
  jitter: 0.5,
  maxAttempts: 20,
  maxElapsedMs: 120_000,
};

/** The delay before attempt `attempt` (1-based) given `random` in [0, 1). */
export function backoffDelay(policy: ReconnectPolicy, attempt: number, random: number): number {
  const p = { ...DEFAULT_RECONNECT_POLICY, ...policy };
  const exponent = Math.max(0, attempt - 1);
  const base = Math.min(p.maxDelayMs, p.initialDelayMs * p.multiplier ** exponent);
  const jitter = Math.min(1, Math.max(0, p.jitter));
  return Math.round(base * (1 - jitter * random));
}

/** Whether a stream that has failed `attempts` times in a row, for `elapsedMs`, gives up. */
export function shouldGiveUp(
  policy: ReconnectPolicy,
  attempts: number,
  elapsedMs: number,
): boolean {
  const p = { ...DEFAULT_RECONNECT_POLICY, ...policy };
  return attempts > p.maxAttempts || elapsedMs > p.maxElapsedMs;
}
