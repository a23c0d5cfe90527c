/**
 * A rolling deploy: producers of the version before per-agent routing put every job in the shared
 * `steps` / `tools` queues. New workers drain those and forward each job to its run's queue
 * (a shard of its agent's task queue), so such a run finishes, even when the worker that drains it does not run its agent.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { JOB_PAYLOAD_VERSION, type StepJob } from '@baton/protocol';
import { ScriptedModel, type AgentDefinition } from '@baton/core';
import { toolJobId } from '@baton/runtime/internal';
import { startHarness, waitFor, waitForStatus, type Harness } from '@baton/testing/worker-harness';
import { auditRun } from '@baton/testing/worker-process';

const TENANT = 't-rolling';

const answer = (name: string): AgentDefinition => ({
  name,
  model: new ScriptedModel([{ text: `${name} answered` }]),
  tools: [],
});

describe('rolling deploy: jobs in the legacy shared queues', () => {
  const redisUrl = inject('redisUrl');
  let h: Harness;

  beforeAll(async () => {
    // Both agents advertised (known), but no worker runs yet: runs are created and wait.
    h = await startHarness(redisUrl, [answer('old-style'), answer('other')], { workers: 1 });
    await h.workers.splice(0)[0]!.stop(500);
  });

  afterAll(async () => {
    await h?.stop();
  });

  /** A created run whose only job is in the legacy step queue, as an old API would leave it. */
  const legacyRun = async (agent: string): Promise<string> => {
    const created = await h.client.service.createRun(TENANT, {
      agent,
      input: { messages: [{ role: 'user', content: 'hello' }] },
    });
    // The new layout's start job goes: only the legacy one is left to start the run. A worker
    // of another agent may hold it for a moment (it puts it back delayed).
    const queue = await h.client.queues.runQueue({ runId: created.runId, agent });
    await waitFor(
      async () => {
        const jobs = (
          await queue.getJobs(['active', 'waiting', 'delayed', 'prioritized'], 0, -1)
        ).filter((j) => (j.data as { runId?: string }).runId === created.runId);
        for (const job of jobs) await job.remove().catch(() => undefined);
        return jobs.length === 0 ? true : null;
      },
      10_000,
      'the start job to be removed',
    );
    const meta = (await h.client.store.meta(created.runId))!;
    const data: StepJob = {
      v: JOB_PAYLOAD_VERSION,
      kind: 'step',
      runId: created.runId,
      tenantId: TENANT,
      reason: 'start',
      expectedVersion: meta.version,
    };
    await h.client.queues.legacySteps.add('start', data, { jobId: `step.legacy.${created.runId}` });
    return created.runId;
  };

  it('a run whose step job sits in the legacy queue is finished by a new worker of its agent', async () => {
    const runId = await legacyRun('old-style');
    await h.addWorker([answer('old-style')]);
    const cp = await waitForStatus(h, runId, ['done']);
    expect(cp.termination).toEqual({ kind: 'natural_end' });
    expect((await auditRun(h.client, runId)).problems).toEqual([]);
  });

  it("a worker without the run's agent forwards the legacy job to the agent's queue instead of failing the run", async () => {
    const runId = await legacyRun('other');
    // Only a worker of another agent drains the legacy queue at first.
    const bystander = h.workers[0]!;
    expect(bystander.registry.engine('other')).toBeUndefined();
    // Where 'other' is served now (its worker may serve it on a task queue of its own: the
    // worker of 'old-style' holds `default`), read afresh.
    await h.client.queues.taskQueues.advertised('other');
    const queue = await h.client.queues.runQueue({ runId, agent: 'other' });
    await waitFor(
      async () => {
        const jobs = await queue.getJobs(['active', 'waiting', 'delayed', 'prioritized'], 0, -1);
        return jobs.some((j) => (j.data as { runId?: string }).runId === runId) ? true : null;
      },
      10_000,
      "the legacy job to be forwarded to the run's queue",
    );
    expect((await h.client.store.load(runId))!.checkpoint.status).toBe('created');

    await h.addWorker([answer('other')]);
    const cp = await waitForStatus(h, runId, ['done']);
    expect(cp.termination).toEqual({ kind: 'natural_end' });
  });

  it("a legacy tool job moves to its run's queue under the same id", async () => {
    const { runId } = await h.client.service.createRun(TENANT, {
      agent: 'other',
      input: { messages: [{ role: 'user', content: 'hi' }] },
    });
    await waitForStatus(h, runId, ['done']);
    const jobId = toolJobId(runId, 'call-1', 0);
    await h.client.queues.legacyTools.add(
      'tool:call-1',
      {
        v: JOB_PAYLOAD_VERSION,
        kind: 'tool',
        runId,
        tenantId: TENANT,
        step: 0,
        toolCallId: 'call-1',
        attempt: 0,
      },
      { jobId },
    );
    // Where 'other' is served now (its worker may serve it on a task queue of its own: the
    // worker of 'old-style' holds `default`), read afresh.
    await h.client.queues.taskQueues.advertised('other');
    const queue = await h.client.queues.runQueue({ runId, agent: 'other' });
    const moved = await waitFor(
      () => queue.getJob(jobId),
      10_000,
      "the legacy tool job to move to the run's queue",
    );
    expect(moved.data).toMatchObject({ runId, toolCallId: 'call-1', attempt: 0 });
  });
});
