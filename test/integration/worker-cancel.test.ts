import { ScriptedModel, type AgentDefinition } from '@baton/core';
import { createDemoAgents } from '@baton/core/testing';
import { systemClock } from '@baton/runtime';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startHarness, waitFor, waitForStatus, type Harness } from '@baton/testing/worker-harness';

const [assistant, parallel] = createDemoAgents(systemClock);

/**
 * Cancellation must interrupt work, not wait for it. Measuring how long a cancel took fails on a
 * loaded machine; instead the work here is far longer (a minute) than the generous wait for the
 * cancelled run, so a cancel that awaited the work cannot pass, however busy the machine is.
 */
const WORK_MS = 60_000;
const CANCELLED_WITHIN_MS = 40_000;
const SPOKEN = 'word '.repeat(3_000); // 3,000 chunks of 20 ms: a minute of streaming

const streaming: AgentDefinition = {
  name: 'slow-talker',
  model: new ScriptedModel([{ text: SPOKEN, chunkDelayMs: WORK_MS / 3_000 }], {
    clock: systemClock,
  }),
  tools: [],
};

/** The demo's tools, with a model that asks slow_report for a minute's work. */
function slowReporter(base: AgentDefinition, name: string): AgentDefinition {
  return {
    ...base,
    name,
    model: new ScriptedModel(
      (request) =>
        request.messages.at(-1)?.role === 'tool'
          ? { text: 'report done' }
          : { toolCalls: [{ name: 'slow_report', arguments: { topic: 'q3', ms: WORK_MS } }] },
      { clock: systemClock },
    ),
  };
}
const slowSequential = slowReporter(assistant!, 'slow-reporter');
const slowParallel = slowReporter(parallel!, 'slow-parallel-reporter');

describe('cancellation over real queues', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness(
      inject('redisUrl'),
      [assistant!, parallel!, streaming, slowSequential, slowParallel],
      { workers: 2 },
    );
  });
  afterAll(async () => {
    await h.stop();
  });

  async function cancelAndWait(tenant: string, runId: string): Promise<void> {
    await h.client.service.cancel(tenant, runId);
    const cp = await waitForStatus(h, runId, ['done'], CANCELLED_WITHIN_MS);
    expect(cp.termination).toEqual({ kind: 'cancelled' });
  }

  it('while the model streams', { timeout: 2 * CANCELLED_WITHIN_MS }, async () => {
    const { runId } = await h.client.service.createRun('c', {
      agent: 'slow-talker',
      input: { messages: [{ role: 'user', content: 'talk' }] },
    });
    await waitFor(async () =>
      (await h.client.store.readEvents(runId)).some((e) => e.type === 'text.delta'),
    );
    await cancelAndWait('c', runId);
    const events = await h.client.store.readEvents(runId);
    expect(events.some((e) => e.type === 'message.assistant')).toBe(false);
    // The stream was cut: less than the whole text went out.
    const streamed = events.flatMap((e) => (e.type === 'text.delta' ? [e.delta] : [])).join('');
    expect(streamed.length).toBeGreaterThan(0);
    expect(streamed.length).toBeLessThan(SPOKEN.length);
    const deltasAfterFinish = events
      .slice(events.findIndex((e) => e.type === 'run.finished'))
      .filter((e) => e.type === 'text.delta');
    expect(deltasAfterFinish).toHaveLength(0);
  });

  it.each([
    ['sequential (inline tool)', slowSequential.name],
    ['parallel (child tool job)', slowParallel.name],
  ])('while a slow tool runs: %s', { timeout: 2 * CANCELLED_WITHIN_MS }, async (_label, agent) => {
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
    // The tool works for a minute: the run ending within CANCELLED_WITHIN_MS means it was aborted.
    await cancelAndWait('c', runId);
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
    await waitFor(async () => (await liveJobs()) === 0, 15_000, 'no live job for the waiting run');
    await new Promise((r) => setTimeout(r, 200));
    expect(await liveJobs()).toBe(0);
    await cancelAndWait('c', runId);
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
    await cancelAndWait('c', runId);
    await h.addWorker();
    // The queued start job becomes a no-op.
    await new Promise((r) => setTimeout(r, 300));
    const after = await h.client.store.load(runId);
    expect(after?.checkpoint.status).toBe('done');
    expect(after?.checkpoint.step).toBe(0);
  });
});
