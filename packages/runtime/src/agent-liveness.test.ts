import { Redis } from 'ioredis';
import { afterAll, beforeEach, describe, expect, inject, it } from 'vitest';
import { uniquePrefix } from '@baton/testing/redis';
import { AgentLiveness } from './agent-liveness.ts';
import { BatonKeys } from './redis/keys.ts';

const redis = new Redis(inject('redisUrl'), { maxRetriesPerRequest: 1 });
let keys: BatonKeys;
let liveness: AgentLiveness;

beforeEach(() => {
  keys = new BatonKeys(uniquePrefix('liveness'));
  liveness = new AgentLiveness(redis, keys);
});

afterAll(async () => {
  await redis.quit();
});

describe('AgentLiveness', () => {
  it("sums the step slots live workers advertise; an older worker's advertise none; a worker that leaves takes its slots", async () => {
    await liveness.heartbeat('w1', ['alpha'], 60_000, [], 256);
    await liveness.heartbeat('w2', ['alpha'], 60_000, [], 16);
    await liveness.heartbeat('old', ['alpha'], 60_000);
    const workers = (await liveness.workers(['alpha'])).get('alpha') ?? [];
    expect(workers).toEqual(['old', 'w1', 'w2']);
    expect(await liveness.stepSlots(workers)).toBe(272);
    await liveness.leave('w2', ['alpha']);
    expect(await liveness.stepSlots(['old', 'w1', 'w2'])).toBe(256);
    expect(await liveness.stepSlots([])).toBe(0);
  });

  it('lists the workers whose heartbeat is current, per agent', async () => {
    await liveness.heartbeat('w1', ['alpha', 'beta'], 60_000);
    await liveness.heartbeat('w2', ['beta'], 60_000);
    const live = await liveness.workers(['alpha', 'beta', 'gamma']);
    expect(Object.fromEntries(live)).toEqual({ alpha: ['w1'], beta: ['w1', 'w2'], gamma: [] });
  });

  it('drops a worker whose heartbeat expired, without anyone removing it', async () => {
    await liveness.heartbeat('alive', ['alpha'], 60_000);
    // A TTL of 0 expires at the heartbeat's own instant: the worker that stopped heartbeating.
    await liveness.heartbeat('dead', ['alpha'], 0);
    expect((await liveness.workers(['alpha'])).get('alpha')).toEqual(['alive']);
    // The next membership refresh (a worker's first heartbeat is one) trims the expired member,
    // so the set does not grow with dead workers.
    await new AgentLiveness(redis, keys).heartbeat('alive', ['alpha'], 60_000);
    expect(await redis.zrange(keys.agentWorkers('alpha'), '0', '-1')).toEqual(['alive']);
    // And the set itself expires once nobody heartbeats it any more.
    expect(await redis.pttl(keys.agentWorkers('alpha'))).toBeGreaterThan(60_000);
  });

  it('a worker that leaves is gone at once, from its agents only', async () => {
    await liveness.heartbeat('w1', ['alpha', 'beta'], 60_000);
    await liveness.heartbeat('w2', ['alpha'], 60_000);
    await liveness.leave('w1', ['alpha', 'beta']);
    expect(Object.fromEntries(await liveness.workers(['alpha', 'beta']))).toEqual({
      alpha: ['w2'],
      beta: [],
    });
  });
});
