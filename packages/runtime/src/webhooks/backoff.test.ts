import { describe, expect, it } from 'vitest';
import { parseRetryAfter } from '@baton/protocol';
import { webhookRetryDelay } from './backoff.ts';

const opts = { baseMs: 1000, maxMs: 60_000 };

describe('webhook retry delay', () => {
  it('doubles per attempt between half and all of the schedule, up to the cap', () => {
    const low = (n: number): number => webhookRetryDelay(n, opts, () => 0);
    const high = (n: number): number => webhookRetryDelay(n, opts, () => 1);
    expect([1, 2, 3, 4].map(low)).toEqual([500, 1000, 2000, 4000]);
    expect([1, 2, 3, 4].map(high)).toEqual([1000, 2000, 4000, 8000]);
    expect(high(20)).toBe(60_000);
    expect(low(20)).toBe(30_000);
    expect(high(1_000)).toBe(60_000);
    for (let i = 0; i < 200; i += 1) {
      const d = webhookRetryDelay(3, opts);
      expect(d).toBeGreaterThanOrEqual(2000);
      expect(d).toBeLessThanOrEqual(4000);
    }
  });

  it('honours a longer Retry-After, never past the cap', () => {
    expect(webhookRetryDelay(1, opts, () => 0, 10_000)).toBe(10_000);
    expect(webhookRetryDelay(1, opts, () => 0, 10)).toBe(500);
    expect(webhookRetryDelay(1, opts, () => 0, 3_600_000)).toBe(60_000);
  });

  it('parses Retry-After as seconds or an HTTP date', () => {
    const now = Date.parse('2025-01-01T00:00:00Z');
    expect(parseRetryAfter('30', now)).toBe(30_000);
    expect(parseRetryAfter('Wed, 01 Jan 2025 00:00:10 GMT', now)).toBe(10_000);
    expect(parseRetryAfter('Tue, 31 Dec 2024 00:00:00 GMT', now)).toBe(0);
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
    expect(parseRetryAfter('soon', now)).toBeUndefined();
  });
});
