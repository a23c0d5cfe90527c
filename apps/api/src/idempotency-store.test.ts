import { Redis } from 'ioredis';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { uniquePrefix } from '@baton/testing/redis';
import { BatonKeys } from '@baton/runtime/internal';
import { IdempotencyStore } from './idempotency.ts';

const redis = new Redis(inject('redisUrl'), { maxRetriesPerRequest: 1 });
afterAll(async () => {
  await redis.quit();
});

describe('IdempotencyStore (real Redis)', () => {
  it('a claim blocks the key only briefly while pending, the answer for the full TTL', async () => {
    const keys = new BatonKeys(uniquePrefix('idem'));
    const store = new IdempotencyStore(redis, keys, 3600, 1_000, 60);
    const key = keys.idempotency('t', 'create-run', 'k1');
    let pendingTtl = -1;
    const { response, replayed } = await store.run('t', 'create-run', 'k1', { a: 1 }, async () => {
      pendingTtl = await redis.ttl(key);
      return { runId: 'r1' };
    });
    expect({ response, replayed }).toEqual({ response: { runId: 'r1' }, replayed: false });
    expect(pendingTtl).toBeGreaterThan(0);
    expect(pendingTtl).toBeLessThanOrEqual(60);
    expect(await redis.ttl(key)).toBeGreaterThan(60);
    const again = await store.run('t', 'create-run', 'k1', { a: 1 }, () => {
      throw new Error('must not run twice');
    });
    expect(again).toEqual({ response: { runId: 'r1' }, replayed: true });
  });

  it('a claim whose request never finished lapses, and a retry runs the request', async () => {
    const keys = new BatonKeys(uniquePrefix('idem'));
    const store = new IdempotencyStore(redis, keys, 3600, 200, 1);
    const key = keys.idempotency('t', 'create-run', 'k2');
    // The first request's API dies mid-request: its claim stays, nobody releases it.
    void store.run('t', 'create-run', 'k2', { a: 1 }, () => new Promise<never>(() => undefined));
    await expect.poll(() => redis.exists(key)).toBe(1);
    await expect(
      store.run('t', 'create-run', 'k2', { a: 1 }, () => Promise.resolve('second')),
    ).rejects.toMatchObject({ code: 'conflict' });
    await expect.poll(() => redis.exists(key), { timeout: 5_000 }).toBe(0);
    const retried = await store.run('t', 'create-run', 'k2', { a: 1 }, () =>
      Promise.resolve('second'),
    );
    expect(retried).toEqual({ response: 'second', replayed: false });
  });
});
