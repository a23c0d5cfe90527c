import { ScriptedModel, type AgentDefinition } from '@baton/core';
import { createDemoAgents } from '@baton/core/testing';
import { systemClock } from '@baton/runtime';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startHarness, waitFor, waitForStatus, type Harness } from '@baton/testing/worker-harness';

const [assistant, parallel] = createDemoAgents(systemClock);
const streaming: AgentDefinition = {
  name: 'slow-talker',
  model: new ScriptedModel([{ text: 'word '.repeat(400), chunkDelayMs: 20 }], {
    clock: systemClock,
  }),
  tools: [],
};

describe('cancellation over real queues', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness(inject('redisUrl'), [assistant!, parallel!, streaming], { workers: 2 });
  });
  afterAll(async () => {
    await h.stop();
  });

  async function cancelAndMeasure(tenant: string, runId: string): Promise<number> {
    const started = Date.now();
    await h.client.service.cancel(tenant, runId);
    const cp = await waitForStatus(h, runId, ['done'], 5_000);
    expect(cp.termination).toEqual({ kind: 'cancelled' });
    return Date.now() - started;
  }

  it('while the model streams', async () => {
    const { runId } = await h.client.service.createRun('c', {
      agent: 'slow-talker',
      input: { messages: [{ role: 'user', content: 'talk' }] },
    });
    await waitFor(async () =>
      (await h.client.store.readEvents(runId)).some((e) => e.type === 'text.delta'),
    );
    const ms = await cancelAndMeasure('c', runId);
    expect(ms).toBeLessThan(2_000);
    const events = await h.client.store.readEvents(runId);
    expect(events.some((e) => e.type === 'message.assistant')).toBe(false);
    const deltasAfterFinish = events
      .slice(events.findIndex((e) => e.type === 'run.finished'))
      .filter((e) => e.type === 'text.delta');
    expect(deltasAfterFinish).toHaveLength(0);
  });

  it.each([
    ['sequential (inline tool)', 'assistant'],
    ['parallel (child tool job)', 'parallel-assistant'],
  ])('while a slow tool runs: %s', async (_label, agent) => {
    const { runId } = await h.client.service.createRun('c', {
      agent,
      input: { messages: [{ role: 'user', content: 'write a report' }] },
    });
    await waitFor(async () => {
      const s = await h.client.store.load(runId);
      return Object.values(s?.checkpoint.calls ?? {}).some(
        (c) => c.name === 'slow_report' && c.status === 'running',
      );
    });
    const ms = await cancelAndMeasure('c', runId);
    expect(ms).toBeLessThan(1_400); // the tool sleeps 1.5 s: it was aborted, not awaited
    const cp = (await h.client.store.load(runId))!.checkpoint;
    expect(cp.messages.find((m) => m.role === 'tool')).toMatchObject({
      toolName: 'slow_report',
      isError: true,
    });
  });

  it('while waiting: suspended calls become Cancelled, no job remains', async () => {
    const { runId } = await h.client.service.createRun('c', {
      agent: 'assistant',
      input: { messages: [{ role: 'user', content: 'deploy' }] },
    });
    await waitForStatus(h, runId, ['waiting']);
    // Nothing of this run stays queued, running or delayed anywhere: a waiting run holds no
    // worker. (The job that committed Waiting may still be finishing when the status shows.)
    const liveJobs = async (): Promise<number> => {
      let n = 0;
      for (const queue of await h.client.queues.listQueues(['assistant'])) {
        const live = await queue.getJobs([
          'waiting',
          'active',
          'delayed',
          'waiting-children',
          'prioritized',
        ]);
        n += live.filter((j) => (j.data as { runId?: string }).runId === runId).length;
      }
      return n;
    };
    await waitFor(async () => (await liveJobs()) === 0, 3_000, 'no live job for the waiting run');
    await new Promise((r) => setTimeout(r, 200));
    expect(await liveJobs()).toBe(0);
    await cancelAndMeasure('c', runId);
    const cp = (await h.client.store.load(runId))!.checkpoint;
    expect(Object.values(cp.calls).find((c) => c.name === 'deploy_service')?.status).toBe(
      'cancelled',
    );
    // Idempotent.
    await expect(h.client.service.cancel('c', runId)).resolves.toEqual({ status: 'done' });
  });

  it('a created run that no worker has started ends Cancelled at once', async () => {
    await Promise.all(h.workers.map((w) => w.stop(200)));
    h.workers.length = 0;
    const { runId } = await h.client.service.createRun('c', {
      agent: 'assistant',
      input: { messages: [{ role: 'user', content: 'hi' }] },
    });
    const before = await h.client.store.load(runId);
    expect(before?.checkpoint.status).toBe('created');
    await cancelAndMeasure('c', runId);
    await h.addWorker();
    // The queued start job becomes a no-op.
    await new Promise((r) => setTimeout(r, 300));
    const after = await h.client.store.load(runId);
    expect(after?.checkpoint.status).toBe('done');
    expect(after?.checkpoint.step).toBe(0);
  });
});
