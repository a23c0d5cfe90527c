import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createDemoAgents, matrixAgents } from '@baton/core/testing';
import { systemClock } from '@baton/runtime';
import { startHarness, waitForStatus, type Harness } from '@baton/testing/worker-harness';

describe('distributed worker basics', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness(inject('redisUrl'), [
      ...createDemoAgents(systemClock),
      ...matrixAgents(),
    ]);
  });
  afterAll(async () => {
    await h.stop();
  });

  it('runs the demo assistant through approval to the end', async () => {
    const svc = h.client.service;
    const created = await svc.createRun('t1', {
      agent: 'assistant',
      input: { messages: [{ role: 'user', content: 'deploy please' }] },
    });
    let cp = await waitForStatus(h, created.runId, ['waiting']);
    const suspended = Object.values(cp.calls).find((c) => c.status === 'suspended');
    expect(suspended?.name).toBe('deploy_service');
    await svc.submitDecisions('t1', created.runId, [
      { toolCallId: suspended!.id, action: 'resume' },
    ]);
    cp = await waitForStatus(h, created.runId, ['done']);
    expect(cp.termination).toEqual({ kind: 'natural_end' });
    const events = await h.client.store.readEvents(created.runId);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    expect(events.at(-1)?.type).toBe('run.finished');
    const thread = await svc.thread('t1', created.threadId);
    expect(thread.activeRunId).toBeNull();
    expect(thread.messages.length).toBe(cp.messages.length);
  });

  it('runs a parallel_streaming run with child tool jobs', async () => {
    const svc = h.client.service;
    const created = await svc.createRun('t1', {
      agent: 'parallel-assistant',
      input: { messages: [{ role: 'user', content: 'deploy please' }] },
    });
    let cp = await waitForStatus(h, created.runId, ['waiting']);
    const suspended = Object.values(cp.calls).find((c) => c.status === 'suspended');
    expect(Object.values(cp.calls).find((c) => c.name === 'get_weather')?.status).toBe('succeeded');
    await svc.submitDecisions('t1', created.runId, [
      { toolCallId: suspended!.id, action: 'resume' },
    ]);
    cp = await waitForStatus(h, created.runId, ['done']);
    expect(cp.termination).toEqual({ kind: 'natural_end' });
  });
});
