/**
 * No stuck run at any scale: 2,000 runs parked on an approval sit in the waiting index, where the
 * reconciler's active scan never looks; runs whose jobs were lost (created ones, and waiting ones
 * whose decision's job vanished) are rescued within a few lease periods all the same.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createDemoAgents } from '@baton/core/testing';
import { systemClock } from '@baton/runtime';
import { type BatonWorker } from '@baton/worker';
import { startHarness, waitFor, type Harness } from '@baton/testing/worker-harness';
import { auditRun } from '@baton/testing/worker-process';

const TENANT = 't-scale';
const WAITING = 2_000;
const LOST = 10;

let h: Harness;

beforeAll(async () => {
  h = await startHarness(inject('redisUrl'), createDemoAgents(systemClock), {
    workers: 1,
    overrides: { WORKER_CONCURRENCY: '64', RECONCILE_BATCH: '200' },
  });
});

afterAll(async () => {
  await h.stop();
});

const deploy = { messages: [{ role: 'user' as const, content: 'deploy please' }] };

async function createMany(n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i += 100) {
    const batch = await Promise.all(
      Array.from({ length: Math.min(100, n - i) }, () =>
        h.client.service.createRun(TENANT, { agent: 'assistant', input: deploy }),
      ),
    );
    ids.push(...batch.map((r) => r.runId));
  }
  return ids;
}

async function waitingCount(): Promise<number> {
  return h.client.redis.zcard(h.client.keys.waitingRuns);
}

describe('the reconciler with thousands of waiting runs', () => {
  it(`rescues runs whose jobs were lost while ${WAITING} others wait for approval`, async () => {
    const parked = await createMany(WAITING);
    await waitFor(
      async () => (await waitingCount()) === WAITING,
      120_000,
      `${WAITING} runs to wait for their approval`,
    );
    // Waiting runs hold no job and leave the reconciler's work list (the active index is updated
    // just after the waiting one: wait for it too).
    await waitFor(
      async () => (await h.client.redis.zcard(h.client.keys.activeRuns)) === 0,
      10_000,
      'the active index to empty',
    );
    // A step job finishes in BullMQ just after its commit parked the run (the processor returns,
    // then BullMQ moves the job to completed): on a loaded machine the last few are still
    // active when the indexes are already right.
    const jobCounts = () =>
      h.client.queues
        .shardQueues('default')[0]!
        .getJobCounts('waiting', 'active', 'delayed', 'prioritized');
    await waitFor(
      async () => Object.values(await jobCounts()).every((n) => n === 0),
      10_000,
      'the parked runs to hold no step job',
    );
    expect(await jobCounts()).toEqual({ waiting: 0, active: 0, delayed: 0, prioritized: 0 });

    // Every worker goes away; meanwhile decisions arrive and new runs are created, and then
    // every queued job is lost (a failover that dropped them, a flushed queue).
    await Promise.all(h.workers.map((w: BatonWorker) => w.stop(500)));
    h.workers.length = 0;
    const decided = parked.slice(0, LOST);
    for (const runId of decided) {
      const cp = (await h.client.store.load(runId))!.checkpoint;
      const call = Object.values(cp.calls).find((c) => c.status === 'suspended')!;
      await h.client.service.submitDecisions(TENANT, runId, [
        { toolCallId: call.id, action: 'resume' },
      ]);
    }
    const fresh = await createMany(LOST);
    await h.client.queues.shardQueues('default')[0]!.obliterate({ force: true });

    const started = Date.now();
    await h.addWorker();
    const lost = [...decided, ...fresh];
    await waitFor(
      async () => {
        const statuses = await Promise.all(
          lost.map(async (id) => (await h.client.store.meta(id))?.status),
        );
        // fresh runs wait for their own approval; decided ones finish
        return statuses.every((s, i) => (i < LOST ? s === 'done' : s === 'waiting')) ? true : null;
      },
      30_000,
      'every run whose job was lost to move again',
    );
    const rescueMs = Date.now() - started;
    console.info(`[reconciler-scale] ${2 * LOST} lost runs rescued in ${rescueMs} ms`);
    // A few lease periods (lease 2 s, stale after 4 s, one scan a second), not minutes.
    expect(rescueMs).toBeLessThan(4 * h.config.LEASE_TTL_MS + 5_000);
    for (const runId of decided) expect((await auditRun(h.client, runId)).problems).toEqual([]);
    // The other waiting runs were left alone: still waiting, still holding no job.
    expect(await waitingCount()).toBe(WAITING - decided.length + fresh.length);
    expect(
      await h.client.queues.shardQueues('default')[0]!.getJobCounts('waiting', 'delayed'),
    ).toEqual({
      waiting: 0,
      delayed: 0,
    });
  });
});
