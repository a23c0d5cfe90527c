import { runCommands } from '@baton/core';
import type { Checkpoint } from '@baton/protocol';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, beforeEach, describe, expect, inject, it } from 'vitest';
import { uniquePrefix } from '@baton/testing/redis';
import { createdRun, nextCheckpoint } from '@baton/testing/redis-runs';
import type { BatonQueues } from './queues.ts';
import { RedisRunStore } from './run-record/redis-run-store.ts';
import type { RedisThreadStore } from './redis/thread-store.ts';
import { RunCommitter } from './run-committer.ts';

const redis = new Redis(inject('redisUrl'), { maxRetriesPerRequest: 1 });
afterAll(async () => {
  await redis.quit();
});

let store: RedisRunStore;
let committer: RunCommitter;
beforeEach(() => {
  const prefix = uniquePrefix('committer');
  store = new RedisRunStore({ redis, prefix, now: () => 1_000, retentionSeconds: 60 });
  committer = new RunCommitter({
    store,
    // Only a finished run reaches the thread and the queues; these commands finish none.
    threads: {} as RedisThreadStore,
    queues: {} as BatonQueues,
    redis,
    keys: store.keys,
    now: () => 1_000,
    logger: pino({ level: 'silent' }),
    retentionSeconds: 60,
  });
});

const cancel = (cp: Checkpoint) =>
  cp.cancelRequested ? null : runCommands.requestCancel(cp, 2_000);

/** A started run: a cancel request marks it rather than finishing it on the spot. */
async function running() {
  const run = createdRun();
  const runId = run.checkpoint.identity.runId;
  await store.create(run.checkpoint, run.events);
  const started = nextCheckpoint(run.checkpoint, { status: 'running' });
  await store.commit(runId, 1, started, [], null, { base: run.checkpoint });
  const loaded = await store.load(runId);
  if (!loaded) throw new Error('not created');
  return loaded;
}

describe('RunCommitter.commitCommand: a command with nothing to do is a null, not an exception', () => {
  it('writes nothing and answers null when compute returns null', async () => {
    const loaded = await running();
    const runId = loaded.checkpoint.identity.runId;
    const before = await store.readEvents(runId, 0);
    await expect(committer.commitCommand(loaded, () => null)).resolves.toBeNull();
    expect((await store.load(runId))?.version).toBe(loaded.version);
    expect(await store.readEvents(runId, 0)).toEqual(before);
  });

  it('answers null when the run moved on meanwhile and the recomputed command is a no-op', async () => {
    const stale = await running();
    const runId = stale.checkpoint.identity.runId;
    // Someone else cancels first: the stale commit conflicts, is recomputed, and has nothing left.
    const first = await committer.commitCommand(stale, cancel);
    expect(first?.checkpoint.cancelRequested).toBe(true);
    const events = await store.readEvents(runId, 0);
    await expect(committer.commitCommand(stale, cancel)).resolves.toBeNull();
    expect((await store.load(runId))?.version).toBe(first?.version);
    expect(await store.readEvents(runId, 0)).toEqual(events);
  });

  it('commits the transition compute returns', async () => {
    const loaded = await running();
    const committed = await committer.commitCommand(loaded, cancel);
    expect(committed?.version).toBe(loaded.version + 1);
    expect((await store.load(loaded.checkpoint.identity.runId))?.checkpoint.cancelRequested).toBe(
      true,
    );
  });
});
