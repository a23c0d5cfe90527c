import { Redis } from 'ioredis';
import { afterAll, describe, expect, inject, it } from 'vitest';
import type { EventBody } from '@baton/protocol';
import { uniquePrefix } from '@baton/testing/redis';
import { createdRun, nextCheckpoint } from '@baton/testing/redis-runs';
import { decodeEventMetrics } from './event-metrics.ts';
import { RedisRunStore } from '../run-record/redis-run-store.ts';

const redis = new Redis(inject('redisUrl'), { maxRetriesPerRequest: 1 });
afterAll(async () => {
  await redis.quit();
});

const usage = { inputTokens: 1, outputTokens: 1 };

describe('event metrics counted where events are committed', () => {
  it('a flush adds the step, tool and finished-run counts of the commits to the hash; a refused commit counts nothing', async () => {
    let clock = 10_000;
    const store = new RedisRunStore({ redis, prefix: uniquePrefix('em'), now: () => clock });
    const run = createdRun();
    const runId = run.checkpoint.identity.runId;
    await store.create(run.checkpoint, run.events);
    let cp = run.checkpoint;
    let version = 1;
    const commit = async (bodies: unknown[]): Promise<void> => {
      cp = nextCheckpoint(cp, { status: 'running' });
      version = (await store.commit(runId, version, cp, bodies as EventBody[], null)).version;
    };
    await commit([{ type: 'step.started', step: 1 }]);
    clock += 300;
    await commit([
      {
        type: 'tool_call.result',
        toolCallId: 'c1',
        toolName: 'search|web',
        outcome: { kind: 'ok', value: 1 },
        durationMs: 40,
      },
      { type: 'step.finished', step: 1, usage },
    ]);
    // A stale version: refused, so nothing of it is counted.
    await expect(
      store.commit(
        runId,
        1,
        nextCheckpoint(cp),
        [
          { type: 'run.finished', status: 'done', termination: { kind: 'cancelled' } },
        ] as unknown as EventBody[],
        null,
      ),
    ).rejects.toMatchObject({ name: 'VersionConflictError' });
    await commit([{ type: 'run.finished', status: 'done', termination: { kind: 'completed' } }]);
    await store.metrics.flush();
    await store.metrics.flush(); // nothing new: adds nothing

    const stored = decodeEventMetrics(await redis.hgetall(store.keys.eventMetrics));
    expect(stored.step.count).toBe(1);
    expect(stored.step.sum).toBeCloseTo(0.3);
    expect(stored.step.buckets.reduce((a, b) => a + b, 0)).toBe(1);
    expect(stored.tools.get('search|web')).toMatchObject({ count: 1 });
    expect(stored.tools.get('search|web')?.sum).toBeCloseTo(0.04);
    expect(Object.fromEntries(stored.finished)).toEqual({ completed: 1 });
    await store.metrics.close();
  });
});
