import { describe, expect, it } from 'vitest';
import { DEFAULT_RECONNECT_POLICY, backoffDelay, shouldGiveUp } from './backoff.ts';

describe('backoffDelay', () => {
  it('grows exponentially up to the cap when there is no randomness', () => {
    const policy = { initialDelayMs: 100, maxDelayMs: 1_000, multiplier: 2, jitter: 0.5 };
    expect([1, 2, 3, 4, 5, 6].map((a) => backoffDelay(policy, a, 0))).toEqual([
      100, 200, 400, 800, 1_000, 1_000,
    ]);
  });

  it('jitter takes at most its fraction off a delay', () => {
    const policy = { initialDelayMs: 1_000, maxDelayMs: 1_000, jitter: 0.25 };
    expect(backoffDelay(policy, 1, 0)).toBe(1_000);
    expect(backoffDelay(policy, 1, 0.999_999)).toBe(750);
    expect(backoffDelay({ ...policy, jitter: 1 }, 1, 0.5)).toBe(500);
    // out-of-range jitter is clamped instead of producing negative delays
    expect(backoffDelay({ ...policy, jitter: 7 }, 1, 0.999_999)).toBe(0);
  });

  it('defaults start at 250 ms and stay within 5 s', () => {
    expect(backoffDelay({}, 1, 0)).toBe(DEFAULT_RECONNECT_POLICY.initialDelayMs);
    expect(backoffDelay({}, 50, 0)).toBe(DEFAULT_RECONNECT_POLICY.maxDelayMs);
  });
});

describe('shouldGiveUp', () => {
  it('gives up after maxAttempts consecutive failures or maxElapsedMs, whichever comes first', () => {
    const policy = { maxAttempts: 3, maxElapsedMs: 10_000 };
    expect(shouldGiveUp(policy, 3, 0)).toBe(false);
    expect(shouldGiveUp(policy, 4, 0)).toBe(true);
    expect(shouldGiveUp(policy, 1, 10_001)).toBe(true);
    expect(shouldGiveUp({ maxAttempts: Infinity, maxElapsedMs: Infinity }, 1e9, 1e12)).toBe(false);
  });
});
