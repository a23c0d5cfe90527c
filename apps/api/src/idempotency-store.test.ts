import { once } from 'node:events';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, inject, it, vi } from 'vitest';
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

  it('a retry waiting on an attempt that fails takes the key and runs', async () => {
    const keys = new BatonKeys(uniquePrefix('idem'));
    const store = new IdempotencyStore(redis, keys, 3600, 5_000, 60);
    let fail: (() => void) | undefined;
    const first = store.run('t', 'create-run', 'k6', { a: 1 }, async () => {
      await new Promise<void>((resolve) => (fail = resolve));
      throw new Error('first failed');
    });
    await expect.poll(() => fail !== undefined).toBe(true);
    const retry = store.run('t', 'create-run', 'k6', { a: 1 }, () => Promise.resolve('second'));
    fail?.();
    await expect(first).rejects.toThrow('first failed');
    expect(await retry).toEqual({ response: 'second', replayed: false });
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

describe('IdempotencyStore when Redis refuses the settling of a claim', () => {
  /** A client of its own, taken down (commands refused unsent, as the fail-fast gate does). */
  async function ownClient(): Promise<Redis> {
    const client = new Redis(inject('redisUrl'), {
      maxRetriesPerRequest: 1,
      enableOfflineQueue: false,
      lazyConnect: true,
    });
    await client.connect();
    return client;
  }

  /** Brings a client taken down by disconnect() back. */
  async function reconnect(client: Redis): Promise<void> {
    if (client.status !== 'end') await once(client, 'end');
    await client.connect();
  }

  it('an attempt that failed while Redis was down frees its key once Redis is back', async () => {
    const client = await ownClient();
    const keys = new BatonKeys(uniquePrefix('idem'));
    // A minute's claim lapse and a retry that waits 5 s: only the release frees the key in time.
    const store = new IdempotencyStore(client, keys, 3600, 5_000, 60);
    const other = new IdempotencyStore(redis, keys, 3600, 5_000, 60);
    const key = keys.idempotency('t', 'create-run', 'k3');
    await expect(
      store.run('t', 'create-run', 'k3', { a: 1 }, () => {
        client.disconnect();
        return Promise.reject(new Error('Redis down'));
      }),
    ).rejects.toThrow('Redis down');
    expect(await redis.exists(key)).toBe(1);
    await reconnect(client);
    try {
      // Sent to another API instance: the first one releases the claim as soon as Redis answers.
      const retried = await other.run('t', 'create-run', 'k3', { a: 1 }, () =>
        Promise.resolve('second'),
      );
      expect(retried).toEqual({ response: 'second', replayed: false });
    } finally {
      await client.quit();
    }
  });

  it('an attempt that succeeded while Redis was down answers, and records the answer later', async () => {
    const client = await ownClient();
    const keys = new BatonKeys(uniquePrefix('idem'));
    const store = new IdempotencyStore(client, keys, 3600, 5_000, 60);
    const other = new IdempotencyStore(redis, keys, 3600, 5_000, 60);
    const first = await store.run('t', 'create-run', 'k4', { a: 1 }, () => {
      client.disconnect();
      return Promise.resolve('first');
    });
    expect(first).toEqual({ response: 'first', replayed: false });
    await reconnect(client);
    try {
      const again = await other.run('t', 'create-run', 'k4', { a: 1 }, () =>
        Promise.reject(new Error('must not run twice')),
      );
      expect(again).toEqual({ response: 'first', replayed: true });
    } finally {
      await client.quit();
    }
  });

  it('a claim written with its reply lost is released, and a retry runs', async () => {
    const client = await ownClient();
    const keys = new BatonKeys(uniquePrefix('idem'));
    const store = new IdempotencyStore(client, keys, 3600, 5_000, 60);
    const other = new IdempotencyStore(redis, keys, 3600, 5_000, 60);
    const key = keys.idempotency('t', 'create-run', 'k7');
    const set = client.set.bind(client) as (...args: unknown[]) => Promise<unknown>;
    const spy = vi
      .spyOn(client as unknown as { set: (...args: unknown[]) => Promise<unknown> }, 'set')
      .mockImplementationOnce(async (...args: unknown[]) => {
        await set(...args);
        throw new Error('Command timed out');
      });
    try {
      await expect(
        store.run('t', 'create-run', 'k7', { a: 1 }, () => Promise.resolve('never')),
      ).rejects.toThrow('Command timed out');
      expect(await redis.exists(key)).toBe(1);
      const retried = await other.run('t', 'create-run', 'k7', { a: 1 }, () =>
        Promise.resolve('second'),
      );
      expect(retried).toEqual({ response: 'second', replayed: false });
    } finally {
      spy.mockRestore();
      await client.quit();
    }
  });

  it("a settlement never replaces another attempt's claim", async () => {
    const keys = new BatonKeys(uniquePrefix('idem'));
    const store = new IdempotencyStore(redis, keys, 3600, 200, 1);
    const key = keys.idempotency('t', 'create-run', 'k5');
    let release: (() => void) | undefined;
    // The first attempt hangs past its claim's lapse; a retry claims the key and runs meanwhile.
    const slow = store.run('t', 'create-run', 'k5', { a: 1 }, async () => {
      await new Promise<void>((resolve) => (release = resolve));
      throw new Error('first failed late');
    });
    await expect.poll(() => redis.exists(key)).toBe(1);
    await expect.poll(() => redis.exists(key), { timeout: 5_000 }).toBe(0);
    let retryRuns: (() => void) | undefined;
    const retry = store.run('t', 'create-run', 'k5', { a: 1 }, async () => {
      await new Promise<void>((resolve) => (retryRuns = resolve));
      return 'second';
    });
    await expect.poll(() => retryRuns !== undefined).toBe(true);
    release?.();
    await expect(slow).rejects.toThrow('first failed late');
    // The retry's claim is still there: the late failure released nothing of it.
    expect(JSON.parse((await redis.get(key)) ?? '{}')).toMatchObject({ state: 'pending' });
    retryRuns?.();
    expect(await retry).toEqual({ response: 'second', replayed: false });
  });
});
