import { Redis } from 'ioredis';
import { afterAll, beforeEach, describe, expect, inject, it } from 'vitest';
import { uniquePrefix } from '@baton/testing/redis';
import { createdRun, nextCheckpoint } from '@baton/testing/redis-runs';
import { RunLeases } from './run-lease.ts';
import { RedisRunStore } from './redis-run-store.ts';

const redis = new Redis(inject('redisUrl'), { maxRetriesPerRequest: 1 });
afterAll(async () => {
  await redis.quit();
});

let store: RedisRunStore;
let leases: RunLeases;
beforeEach(() => {
  store = new RedisRunStore({
    redis,
    prefix: uniquePrefix('finlease'),
    now: () => 1_000,
    retentionSeconds: 3_600,
  });
  // Long enough that no renewal or expiry happens during a test.
  leases = new RunLeases(redis, store.keys, 60_000);
});

async function freshRun() {
  const run = createdRun();
  await store.create(run.checkpoint, run.events);
  return { run, runId: run.checkpoint.identity.runId };
}

/** PTTL of the run's lease and pending mark: -2 = the key does not exist. */
async function leftBehind(runId: string): Promise<[number, number]> {
  const k = store.keys.run(runId);
  return [await redis.pttl(k.lease), await redis.pttl(k.pending)];
}

// A finished run holds no lease, whoever held it and whatever dies after the final commit: the
// holder killed before its release, or a holder that never learns that the run ended under it.
describe('the commit that finishes a run', () => {
  it('drops the lease and the mark when someone asked for the run meanwhile', async () => {
    const { run, runId } = await freshRun();
    const lease = (await leases.acquire(runId))!;
    expect(await leases.acquire(runId)).toBeNull(); // leaves the pending mark
    const done = nextCheckpoint(run.checkpoint, { status: 'done' });
    const committed = await store.commit(runId, 1, done, [], null, {
      fence: lease.token,
      releaseTtlMs: lease.ttlMs,
    });
    // Released: nobody needs another pass over a finished run.
    expect(committed.released).toBe(true);
    expect(await leftBehind(runId)).toEqual([-2, -2]);
    await lease.release();
  });

  it('drops the lease of a holder that did not ask for the release (killed before it)', async () => {
    const { run, runId } = await freshRun();
    const lease = (await leases.acquire(runId))!;
    const done = nextCheckpoint(run.checkpoint, { status: 'done' });
    await store.commit(runId, 1, done, [], null, { fence: lease.token });
    expect(await leftBehind(runId)).toEqual([-2, -2]);
    expect(await lease.release()).toBe(false);
  });

  it('drops the lease of another holder when the run is ended by an unfenced write', async () => {
    const { run, runId } = await freshRun();
    const holder = (await leases.acquire(runId))!;
    expect(await leases.acquire(runId)).toBeNull();
    await store.commit(runId, 1, nextCheckpoint(run.checkpoint, { status: 'done' }), [], null);
    expect(await leftBehind(runId)).toEqual([-2, -2]);
    // The holder's own release finds nothing of its own to release.
    expect(await holder.release()).toBe(false);
    // The run's data keeps its retention.
    expect(await redis.ttl(store.keys.run(runId).cp)).toBeGreaterThan(3_000);
  });
});
