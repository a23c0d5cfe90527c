import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { BatonKeys } from '@baton/runtime/internal';
import { AuthFailureLimiter, SseConnectionLimiter } from './limits.ts';

describe('SSE connection leases (real Redis)', () => {
  let redis: Redis;
  const prefix = `limits-test-${process.pid}-${Date.now()}`;
  beforeAll(() => {
    redis = new Redis(inject('redisUrl'));
  });
  afterAll(() => {
    redis.disconnect();
  });

  it('counts per tenant across limiters, refuses over the limit with 429, releases once', async () => {
    const one = new SseConnectionLimiter(redis, new BatonKeys(prefix), 2);
    const two = new SseConnectionLimiter(redis.duplicate(), new BatonKeys(prefix), 2);
    try {
      const r1 = await one.acquire('t');
      await two.acquire('t');
      await expect(one.acquire('t')).rejects.toMatchObject({
        code: 'rate_limited',
        retryAfterSeconds: 5,
      });
      await expect(two.acquire('u')).resolves.toBeTypeOf('function');
      r1();
      r1();
      await expect.poll(() => one.count('t')).toBe(1);
      await expect(two.acquire('t')).resolves.toBeTypeOf('function');
    } finally {
      one.close();
      two.close();
    }
  });

  it('a lease nobody refreshes (its instance died) stops counting once it expires', async () => {
    const dead = new SseConnectionLimiter(redis, new BatonKeys(`${prefix}-x`), 1, 300);
    await dead.acquire('t');
    dead.close(); // no release, no refresh: what a killed process leaves behind
    const live = new SseConnectionLimiter(redis, new BatonKeys(`${prefix}-x`), 1, 300);
    try {
      await expect(live.acquire('t')).rejects.toMatchObject({ code: 'rate_limited' });
      await expect.poll(() => live.count('t'), { timeout: 5_000 }).toBe(0);
      await expect(live.acquire('t')).resolves.toBeTypeOf('function');
    } finally {
      live.close();
    }
  });

  it('a refresh moves every live lease of the instance past its TTL again', async () => {
    const limiter = new SseConnectionLimiter(redis, new BatonKeys(`${prefix}-y`), 2, 60_000);
    try {
      await limiter.acquire('t');
      await limiter.acquire('t');
      const key = `${prefix}-y:{sse:t}:leases`;
      const before = await redis.zrange(key, '0', '-1', 'WITHSCORES');
      await new Promise((r) => setTimeout(r, 5));
      await limiter.refresh();
      const after = await redis.zrange(key, '0', '-1', 'WITHSCORES');
      expect(after.filter((_, i) => i % 2 === 0).sort()).toEqual(
        before.filter((_, i) => i % 2 === 0).sort(),
      );
      const expiry = (list: string[]): number[] => list.filter((_, i) => i % 2 === 1).map(Number);
      expect(Math.min(...expiry(after))).toBeGreaterThan(Math.max(...expiry(before)));
    } finally {
      limiter.close();
    }
  });

  it('a refresh of thousands of leases extends every one and brings back none that was released', async () => {
    const limiter = new SseConnectionLimiter(redis, new BatonKeys(`${prefix}-z`), 5_000, 60_000);
    try {
      // 2,500 crosses the script's batches of 1,000; the released one must not be re-added (XX)
      const releases = [];
      for (let i = 0; i < 2_500; i += 1) releases.push(await limiter.acquire('t'));
      const key = `${prefix}-z:{sse:t}:leases`;
      releases[0]?.();
      await expect.poll(() => redis.zcard(key)).toBe(2_499);
      const before = await redis.zrange(key, '0', '-1', 'WITHSCORES');
      const maxBefore = Math.max(...before.filter((_, i) => i % 2 === 1).map(Number));
      await new Promise((r) => setTimeout(r, 5));
      await limiter.refresh();
      const after = await redis.zrange(key, '0', '-1', 'WITHSCORES');
      expect(after.length / 2).toBe(2_499);
      expect(Math.min(...after.filter((_, i) => i % 2 === 1).map(Number))).toBeGreaterThan(
        maxBefore,
      );
    } finally {
      limiter.close();
    }
  });
});

describe('failed-authentication limit (real Redis)', () => {
  it('refuses an address once it failed too often, on every limiter sharing the Redis', async () => {
    const redis = new Redis(inject('redisUrl'));
    const prefix = `authfail-test-${process.pid}-${Date.now()}`;
    const a = new AuthFailureLimiter(redis, new BatonKeys(prefix), 3);
    const b = new AuthFailureLimiter(redis.duplicate(), new BatonKeys(prefix), 3);
    try {
      expect(await a.failed('10.0.0.1')).toBeNull();
      expect(await b.failed('10.0.0.1')).toBeNull();
      expect(await a.failed('10.0.0.1')).toBeNull();
      const refused = await b.failed('10.0.0.1');
      expect(refused).toMatchObject({ code: 'rate_limited' });
      await expect(a.check('10.0.0.1')).rejects.toMatchObject({ code: 'rate_limited' });
      await expect(b.check('10.0.0.2')).resolves.toBeUndefined();
    } finally {
      redis.disconnect();
    }
  });
});
