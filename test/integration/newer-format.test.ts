/**
 * Issue 34 item 4: a worker meets a job, or a run's checkpoint, in a format of a newer release
 * (readFormat's `defer`, packages/protocol/src/formats.ts): the job goes back to its queue,
 * delayed, for a worker of that release; it is not failed, and the run is not touched. Once a
 * value it reads is there (here: put back by the test, as a newer worker would leave it), the
 * run finishes.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { FORMATS, type StepJob } from '@baton/protocol';
import { ScriptedModel, type AgentDefinition } from '@baton/core';
import { startHarness, waitFor, waitForStatus, type Harness } from '@baton/testing/worker-harness';

const TENANT = 't-formats';
const NEWER = FORMATS.job.newest + 1;

const answer: AgentDefinition = {
  name: 'formats',
  model: new ScriptedModel([{ text: 'answered' }]),
  tools: [],
};

describe('values in a newer format than this release reads', () => {
  const redisUrl = inject('redisUrl');
  let h: Harness;

  beforeAll(async () => {
    // The agent advertised, no worker running yet: runs are created and wait.
    h = await startHarness(redisUrl, [answer], { workers: 1 });
    await h.workers.splice(0)[0]!.stop(500);
  });

  afterAll(async () => {
    await h?.stop();
  });

  const createWaiting = async (): Promise<string> => {
    const { runId } = await h.client.service.createRun(TENANT, {
      agent: 'formats',
      input: { messages: [{ role: 'user', content: 'hello' }] },
    });
    return runId;
  };

  const jobsOf = async (runId: string) => {
    const queue = await h.client.queues.runQueue({ runId, agent: 'formats' });
    const jobs = await queue.getJobs(
      ['active', 'waiting', 'delayed', 'prioritized', 'failed'],
      0,
      -1,
    );
    return jobs.filter((j) => (j.data as { runId?: string }).runId === runId);
  };

  it('a step job of a newer format waits in its queue, unfailed, and the run stays as it was', async () => {
    const runId = await createWaiting();
    const queue = await h.client.queues.runQueue({ runId, agent: 'formats' });
    for (const job of await jobsOf(runId)) await job.remove();
    const meta = (await h.client.store.meta(runId))!;
    const data = {
      v: NEWER,
      kind: 'step',
      runId,
      tenantId: TENANT,
      reason: 'start',
      expectedVersion: meta.version,
      aFieldOfTheNewerRelease: { shape: 'unknown here' },
    };
    await queue.add('start', data, { jobId: `step.newer.${runId}` });
    await h.addWorker([answer]);
    await waitFor(
      async () => {
        const job = await queue.getJob(`step.newer.${runId}`);
        // Offered and put back, not failed: a failed attempt would count and leave a reason.
        return job &&
          (await job.getState()) === 'delayed' &&
          job.attemptsStarted > 0 &&
          job.attemptsMade === 0 &&
          !job.failedReason
          ? true
          : null;
      },
      10_000,
      'the newer job to be put back, delayed',
    );
    const jobs = await jobsOf(runId);
    expect(await Promise.all(jobs.map((j) => j.getState()))).not.toContain('failed');
    expect((await h.client.store.load(runId))!.checkpoint.status).toBe('created');

    // A newer worker would take it; here the job this release writes replaces it.
    await (await queue.getJob(`step.newer.${runId}`))!.remove();
    const current: StepJob = { ...data, v: FORMATS.job.writes, reason: 'start' } as StepJob;
    await queue.add('start', current, { jobId: `step.current.${runId}` });
    const cp = await waitForStatus(h, runId, ['done']);
    expect(cp.termination).toEqual({ kind: 'natural_end' });
  });

  it('a run whose checkpoint is in a newer format is left alone: its job waits, unfailed', async () => {
    await h.workers.splice(0)[0]!.stop(500);
    const runId = await createWaiting();
    const cpKey = h.client.keys.run(runId).cp;
    const stored = JSON.parse((await h.client.redis.hget(cpKey, 'data'))!) as { v: number };
    await h.client.redis.hset(
      cpKey,
      'data',
      JSON.stringify({ ...stored, v: FORMATS.checkpoint.newest + 1 }),
    );
    await h.addWorker([answer]);
    await waitFor(
      async () => {
        const jobs = await jobsOf(runId);
        const states = await Promise.all(jobs.map((j) => j.getState()));
        const putBack = jobs.some(
          (j, i) =>
            states[i] === 'delayed' &&
            j.attemptsStarted > 0 &&
            j.attemptsMade === 0 &&
            !j.failedReason,
        );
        return putBack ? true : null;
      },
      10_000,
      'the start job to be put back, delayed',
    );
    const states = await Promise.all((await jobsOf(runId)).map((j) => j.getState()));
    expect(states).not.toContain('failed');
    expect(JSON.parse((await h.client.redis.hget(cpKey, 'data'))!)).toMatchObject({
      v: FORMATS.checkpoint.newest + 1,
      status: 'created',
    });

    // What a worker of the newer release would have done with it, in the format this one reads.
    await h.client.redis.hset(cpKey, 'data', JSON.stringify(stored));
    const cp = await waitForStatus(h, runId, ['done']);
    expect(cp.termination).toEqual({ kind: 'natural_end' });
  });
  it('the reconciler passes over a run in a newer format and reschedules the stuck run behind it', async () => {
    // A finished run, its checkpoint rewritten by a newer release, first in the active index.
    const newer = await createWaiting();
    await waitForStatus(h, newer, ['done']);
    const cpKey = h.client.keys.run(newer).cp;
    const stored = JSON.parse((await h.client.redis.hget(cpKey, 'data'))!) as { v: number };
    await h.client.redis.hset(
      cpKey,
      'data',
      JSON.stringify({ ...stored, v: FORMATS.checkpoint.newest + 1 }),
    );
    // Behind it, a run whose job is gone: only the reconciler's scan gives it one.
    await h.workers.splice(0)[0]!.stop(500);
    const stuck = await createWaiting();
    for (const job of await jobsOf(stuck)) await job.remove();
    await h.client.redis.zadd(h.client.keys.activeRuns, 1, newer, 2, stuck);
    await h.addWorker([answer]);
    const cp = await waitForStatus(h, stuck, ['done']);
    expect(cp.termination).toEqual({ kind: 'natural_end' });
  });
});
