import { Redis } from 'ioredis';
import { afterAll, beforeEach, describe, expect, inject, it } from 'vitest';
import { RunDoneError, VersionConflictError } from '@baton/core';
import { uniquePrefix } from '@baton/testing/redis';
import { createdRun, nextCheckpoint, textDelta } from '@baton/testing/redis-runs';
import { waitFor } from '@baton/testing/worker-harness';
import { RunLeases } from './run-lease.ts';
import { LeaseLostError, RedisRunStore } from './redis-run-store.ts';

const redis = new Redis(inject('redisUrl'), { maxRetriesPerRequest: 1 });
afterAll(async () => {
  await redis.quit();
});

let store: RedisRunStore;
let leases: RunLeases;
beforeEach(() => {
  const prefix = uniquePrefix('fence');
  store = new RedisRunStore({ redis, prefix, now: () => 1_000, retentionSeconds: 60 });
  leases = new RunLeases(redis, store.keys, 300);
});

const attempt = (step: number, nonce: string, index = 0) => ({
  step,
  nonce,
  reset: { type: 'inference.reset' as const, step, messageId: `m${step}` },
  index,
});

async function freshRun() {
  const run = createdRun();
  await store.create(run.checkpoint, run.events);
  return { run, runId: run.checkpoint.identity.runId };
}

describe('fenced writes', () => {
  it('a commit or delta carrying a stale lease token is refused and changes nothing', async () => {
    const { run, runId } = await freshRun();
    const first = await leases.acquire(runId);
    expect(first).not.toBeNull();
    // The first holder's lease runs out (a pause) and another worker takes the run.
    await redis.del(store.keys.run(runId).lease);
    const second = await leases.acquire(runId);
    expect(second).not.toBeNull();
    const before = await store.readEvents(runId);
    const cp2 = nextCheckpoint(run.checkpoint, { status: 'running' });
    await expect(
      store.commit(runId, 1, cp2, [], null, { fence: first!.token }),
    ).rejects.toBeInstanceOf(LeaseLostError);
    await expect(
      store.appendDeltas(runId, first!.token, attempt(1, 'a'), [textDelta(1, 'late')]),
    ).rejects.toBeInstanceOf(LeaseLostError);
    expect(await store.readEvents(runId)).toEqual(before);
    expect((await store.load(runId))?.version).toBe(1);
    // The current holder writes.
    await store.commit(runId, 1, cp2, [], null, { fence: second!.token });
    await second!.release();
    await first!.release();
  });

  it('a run that is done accepts no commit and no event, fenced or not', async () => {
    const { run, runId } = await freshRun();
    const lease = (await leases.acquire(runId))!;
    await store.commit(runId, 1, nextCheckpoint(run.checkpoint, { status: 'done' }), [], null, {
      fence: lease.token,
    });
    const before = await store.readEvents(runId);
    await expect(
      store.appendDeltas(runId, lease.token, attempt(2, 'a'), [textDelta(2, 'after the end')]),
    ).rejects.toBeInstanceOf(RunDoneError);
    await expect(
      store.commit(runId, 2, nextCheckpoint(run.checkpoint, { status: 'running' }), [], null),
    ).rejects.toBeInstanceOf(RunDoneError);
    expect(await store.readEvents(runId)).toEqual(before);
    await lease.release();
  });

  it('a new inference attempt of a step that streamed announces inference.reset first', async () => {
    const { runId } = await freshRun();
    const lease = (await leases.acquire(runId))!;
    await store.appendDeltas(runId, lease.token, attempt(1, 'a'), [textDelta(1, 'par')]);
    await store.appendDeltas(runId, lease.token, attempt(1, 'a', 1), [textDelta(1, 'tial')]);
    const retry = await store.appendDeltas(runId, lease.token, attempt(1, 'b'), [
      textDelta(1, 'again'),
    ]);
    expect(retry.map((e) => e.type)).toEqual(['inference.reset', 'text.delta']);
    // the next step's first attempt is no reset
    const next = await store.appendDeltas(runId, lease.token, attempt(2, 'c'), [textDelta(2, 'x')]);
    expect(next.map((e) => e.type)).toEqual(['text.delta']);
    await lease.release();
  });

  it('a version conflict is not a fence problem: it is reported as such', async () => {
    const { run, runId } = await freshRun();
    const lease = (await leases.acquire(runId))!;
    // a control-plane write (no token) moves the version
    await store.commit(runId, 1, nextCheckpoint(run.checkpoint, { status: 'running' }), [], null);
    await expect(
      store.commit(runId, 1, nextCheckpoint(run.checkpoint), [], null, { fence: lease.token }),
    ).rejects.toBeInstanceOf(VersionConflictError);
    await lease.release();
  });
});

describe('lease loss', () => {
  it('a refused renewal aborts the holder at once', async () => {
    const { runId } = await freshRun();
    const lease = (await leases.acquire(runId))!;
    expect(lease.lost).toBe(false);
    await redis.set(store.keys.run(runId).lease, 'someone-else');
    await waitFor(async () => (lease.signal.aborted ? true : null), 5_000, 'the lease to be lost');
    expect(lease.signal.reason).toBeInstanceOf(LeaseLostError);
    expect(() => lease.check()).toThrow(LeaseLostError);
    await expect(lease.releaseIfIdle()).rejects.toBeInstanceOf(LeaseLostError);
    // the other holder's lease is untouched
    expect(await redis.get(store.keys.run(runId).lease)).toBe('someone-else');
  });
});
