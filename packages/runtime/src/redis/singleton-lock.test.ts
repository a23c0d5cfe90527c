import { Redis } from 'ioredis';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { uniquePrefix } from '@baton/testing/redis';
import { waitFor } from '@baton/testing/worker-harness';
import type { RedisClient } from './scripts.ts';
import { withSingletonLock } from './singleton-lock.ts';

const redis = new Redis(inject('redisUrl'), { maxRetriesPerRequest: 1 });
const other = new Redis(inject('redisUrl'), { maxRetriesPerRequest: 1 });
afterAll(async () => {
  await Promise.all([redis.quit(), other.quit()]);
});

/** Resolves when `signal` aborts (the holder was told it lost the lock). */
const aborted = (signal: AbortSignal): Promise<unknown> =>
  new Promise((resolve) => {
    if (signal.aborted) resolve(signal.reason);
    else signal.addEventListener('abort', () => resolve(signal.reason), { once: true });
  });

/**
 * `client`, except that once armed, the reply of the next command it sends is held back until
 * `meanwhile` has run: the window in which a holder's lock lapses and another process takes it.
 */
function pausedAfterNextReply(client: Redis, meanwhile: () => Promise<void>) {
  let armed = false;
  const proxy = new Proxy(client, {
    get(target, prop, receiver) {
      const value: unknown = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function' || prop === 'defineCommand') return value;
      return (...args: unknown[]) => {
        const reply: unknown = (value as (...a: unknown[]) => unknown).apply(target, args);
        if (!armed || !(reply instanceof Promise)) return reply;
        armed = false;
        return reply.then(async (r: unknown) => {
          await meanwhile();
          return r;
        });
      };
    },
  });
  return { client: proxy as RedisClient, arm: () => (armed = true) };
}

/** The release the four copies used before withSingletonLock: GET, compare, DEL. */
async function oldRelease(client: RedisClient, key: string, token: string): Promise<void> {
  if ((await client.get(key)) === token) await client.del(key);
}

describe('withSingletonLock', () => {
  it('runs the work in one holder at a time and lets the next one in after the release', async () => {
    const key = `${uniquePrefix('lock')}:lock`;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let inside = 0;
    const first = withSingletonLock(redis, { key, ttlMs: 60_000 }, async () => {
      inside += 1;
      await gate;
      return 'first';
    });
    await waitFor(async () => inside === 1, 15_000, 'the first holder to start');
    const second = await withSingletonLock(other, { key, ttlMs: 60_000 }, async () => {
      inside += 1;
      return 'second';
    });
    expect(second).toEqual({ acquired: false });
    expect(inside).toBe(1);
    release();
    expect(await first).toEqual({ acquired: true, value: 'first' });
    expect(await redis.exists(key)).toBe(0);
    expect(await withSingletonLock(other, { key, ttlMs: 60_000 }, async () => 'third')).toEqual({
      acquired: true,
      value: 'third',
    });
  });

  it("a holder whose lock lapsed and was taken does not delete the new holder's lock", async () => {
    const key = `${uniquePrefix('lock')}:lock`;
    // Between the old holder's check and its delete, its lock lapses and B takes it.
    const takeOver = async () => {
      await other.del(key);
      expect(await other.set(key, 'B', 'PX', 60_000, 'NX')).toBe('OK');
    };

    // The copies' release (GET, then DEL from the client) deletes B's lock in that window:
    // a third process could now scan beside B.
    const old = pausedAfterNextReply(redis, takeOver);
    await redis.set(key, 'A', 'PX', 60_000);
    old.arm();
    await oldRelease(old.client, key, 'A');
    expect(await redis.get(key)).toBeNull();

    // withSingletonLock's release is one script: there is no window, B keeps its lock.
    await redis.del(key);
    const a = pausedAfterNextReply(redis, takeOver);
    const run = await withSingletonLock(a.client, { key, ttlMs: 60_000 }, async () => {
      a.arm();
      return 'done';
    });
    expect(run).toEqual({ acquired: true, value: 'done' });
    expect(await redis.get(key)).toBe('B');
    expect(await redis.pttl(key)).toBeGreaterThan(0);
  });

  it('keeps the lock while the work runs when it renews', async () => {
    const key = `${uniquePrefix('lock')}:lock`;
    const run = await withSingletonLock(
      redis,
      { key, ttlMs: 60_000, renewEveryMs: 20 },
      async (held) => {
        const token = await redis.get(key);
        // As if the work had run for all but 1 s of the TTL: a renewal sets it back.
        await other.pexpire(key, 1_000);
        await waitFor(async () => (await other.pttl(key)) > 30_000, 15_000, 'a renewal');
        expect(await other.get(key)).toBe(token);
        expect(await withSingletonLock(other, { key, ttlMs: 60_000 }, async () => 0)).toEqual({
          acquired: false,
        });
        return held.aborted;
      },
    );
    expect(run).toEqual({ acquired: true, value: false });
    expect(await redis.exists(key)).toBe(0);
  });

  it('tells the holder when a renewal finds another holder, and leaves that one its lock', async () => {
    const key = `${uniquePrefix('lock')}:lock`;
    const run = await withSingletonLock(
      redis,
      { key, ttlMs: 60_000, renewEveryMs: 20 },
      async (held) => {
        // The lock lapsed (a long pause) and another process took it.
        await other.set(key, 'B', 'PX', 60_000);
        const reason = await aborted(held);
        expect(String(reason)).toMatch(/another process holds it/);
        return held.aborted;
      },
    );
    expect(run).toEqual({ acquired: true, value: true });
    expect(await redis.get(key)).toBe('B');
  });

  it('tells the holder when the TTL passed without a renewal', async () => {
    const key = `${uniquePrefix('lock')}:lock`;
    const run = await withSingletonLock(redis, { key, ttlMs: 50 }, async (held) => {
      const reason = await aborted(held);
      expect(String(reason)).toMatch(/not renewed within 50 ms/);
      return held.aborted;
    });
    expect(run).toEqual({ acquired: true, value: true });
  });
});
