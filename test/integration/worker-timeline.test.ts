import { z } from 'zod';
import { Job } from 'bullmq';
import { ScriptedModel, defineTool, toolResult, type AgentDefinition } from '@baton/core';
import { systemClock } from '@baton/runtime';
import { toolJobId } from '@baton/runtime/internal';
import type { RunEvent } from '@baton/protocol';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { approvalTool } from '../../packages/core/src/testing/fixtures.ts';
import { startHarness, waitFor, waitForStatus, type Harness } from '@baton/testing/worker-harness';

const approval = approvalTool;

const slowC = defineTool({
  name: 'tool_C',
  description: 'slow normal tool',
  inputSchema: z.object({}),
  execute: async (_args, ctx) => {
    await systemClock.sleep(1500, ctx.signal);
    return toolResult.success({ tool: 'tool_C' });
  },
});

const agent: AgentDefinition = {
  name: 'timeline',
  model: new ScriptedModel([
    {
      toolCalls: [
        { id: 'A', name: 'tool_A' },
        { id: 'B', name: 'tool_B' },
        { id: 'C', name: 'tool_C' },
      ],
    },
    { text: 'done' },
  ]),
  tools: [approval('tool_A'), approval('tool_B'), slowC],
  executionMode: 'parallel_streaming',
};

function resultAt(events: RunEvent[], id: string): number {
  const e = events.find((x) => x.type === 'tool_call.result' && x.toolCallId === id);
  if (!e) throw new Error(`no result for ${id}`);
  return e.at;
}

describe('seed t0–t7 in ParallelStreaming over real queues', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness(inject('redisUrl'), [agent], { workers: 2 });
  });
  afterAll(async () => {
    await h.stop();
  });

  it("replays tool_A at once while tool_C still runs; waits until tool_B's decision", async () => {
    const svc = h.client.service;
    const { runId } = await svc.createRun('t', {
      agent: 'timeline',
      input: { messages: [{ role: 'user', content: 'go' }] },
    });
    // t2: A and B intercepted, C executing -> Running
    let cp = await waitFor(async () => {
      const s = await h.client.store.load(runId);
      const c = s?.checkpoint;
      return c &&
        c.calls['A']?.status === 'suspended' &&
        c.calls['B']?.status === 'suspended' &&
        c.calls['C']?.status === 'running'
        ? c
        : null;
    });
    expect(cp.status).toBe('running');
    const decidedAt = Date.now();
    await svc.submitDecisions('t', runId, [
      { decisionId: 'dA', toolCallId: 'A', action: 'resume' },
    ]);
    // A's replay completes while C is still running.
    cp = await waitFor(async () => {
      const s = await h.client.store.load(runId);
      return s?.checkpoint.calls['A']?.status === 'succeeded' ? s.checkpoint : null;
    });
    expect(cp.calls['C']?.status).toBe('running');
    expect(cp.calls['B']?.status).toBe('suspended');
    expect(cp.status).toBe('running');
    // The replay joined the round's waiting step job as a new child.
    const queue = await h.client.queues.runQueue({ runId, agent: 'timeline' });
    const replayJob = await Job.fromId(queue, toolJobId(runId, 'A', 1));
    const firstChild = await Job.fromId(queue, toolJobId(runId, 'C', 0));
    expect(replayJob?.parentKey).toBeDefined();
    expect(replayJob?.parentKey).toBe(firstChild?.parentKey);

    // t3/t5: C finishes -> Waiting for B.
    cp = await waitForStatus(h, runId, ['waiting']);
    expect(cp.calls['C']?.status).toBe('succeeded');
    expect(cp.calls['B']?.status).toBe('suspended');
    const events = await h.client.store.readEvents(runId);
    expect(resultAt(events, 'A')).toBeLessThan(resultAt(events, 'C'));
    expect(resultAt(events, 'A') - decidedAt).toBeLessThan(resultAt(events, 'C') - decidedAt);

    // t6/t7: B's decision -> all terminal -> next step -> done.
    await svc.submitDecisions('t', runId, [
      { decisionId: 'dB', toolCallId: 'B', action: 'resume' },
    ]);
    cp = await waitForStatus(h, runId, ['done']);
    expect(cp.termination).toEqual({ kind: 'natural_end' });
    const all = await h.client.store.readEvents(runId);
    const runStatuses = all
      .filter((e) => e.type === 'run.status')
      .map((e) => (e.type === 'run.status' ? e.to : ''));
    expect(runStatuses).toEqual(['running', 'waiting', 'running', 'done']);
    expect(all.map((e) => e.seq)).toEqual(all.map((_, i) => i + 1));
  });
});
