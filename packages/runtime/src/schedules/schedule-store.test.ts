import { Redis } from 'ioredis';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { uniquePrefix } from '@baton/testing/redis';
import { BatonKeys } from '../redis/keys.ts';
import type { ScheduleRecord } from './schedule-record.ts';
import { KEPT_FIRINGS, RedisScheduleStore } from './schedule-store.ts';

const redis = new Redis(inject('redisUrl'), { maxRetriesPerRequest: 1 });
afterAll(async () => {
  await redis.quit();
});

const record = (scheduleId: string): ScheduleRecord => ({
  scheduleId,
  tenantId: 't',
  agent: 'a',
  input: { messages: [{ role: 'user', content: 'hi' }] },
  everyMs: 60_000,
  state: 'active',
  anchorAt: 0,
  createdAt: 1,
  updatedAt: 1,
});

describe('RedisScheduleStore.recordFiring (real Redis)', () => {
  it('keeps the newest firings and drops the rest from both the index and the bodies', async () => {
    const keys = new BatonKeys(uniquePrefix('sched'));
    const store = new RedisScheduleStore(redis, keys);
    await store.create(record('s1'));
    const k = keys.schedule('t', 's1');
    // A store written by a version that kept more: 2,500 firings over the limit at once, more
    // than one HDEL batch of the trim.
    const old = Array.from({ length: KEPT_FIRINGS + 2_500 }, (_, i) => i + 1);
    await redis.zadd(k.firings, ...old.flatMap((at) => [at, String(at)]));
    await redis.hset(k.firing, Object.fromEntries(old.map((at) => [String(at), '{}'])));
    const at = old.length + 1;
    const recorded = await store.recordFiring('t', 's1', {
      scheduledFor: at,
      firedAt: at,
      outcome: 'created',
      runId: `s1.${at}`,
    });
    expect(recorded.recorded).toBe(true);
    const kept = (await redis.zrange(k.firings, '0', '-1')).map(Number);
    expect(kept).toHaveLength(KEPT_FIRINGS);
    expect(kept[0]).toBe(at - KEPT_FIRINGS + 1);
    expect(kept.at(-1)).toBe(at);
    expect((await redis.hkeys(k.firing)).map(Number).sort((a, b) => a - b)).toEqual(kept);
  });
});
