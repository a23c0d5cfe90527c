/**
 * A tool's own failure and a crash of the worker running it are different things (the crash side
 * is worker-crash.test.ts (e)): a tool that throws or times out is reported to the model with its
 * own reason, once, without BullMQ retries and without a failed job.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { ScriptedModel, defineTool, toolResult, type AgentDefinition } from '@baton/core';
import { systemClock } from '@baton/runtime';
import { startHarness, waitForStatus, type Harness } from '@baton/testing/worker-harness';
import { auditRun } from '@baton/testing/worker-process';

let executions = 0;
const flaky = defineTool({
  name: 'flaky',
  description: 'always throws',
  inputSchema: z.object({}),
  execute: async () => {
    executions += 1;
    throw new Error('upstream said no');
  },
});
const slow = defineTool({
  name: 'slow',
  description: 'takes longer than it may',
  inputSchema: z.object({}),
  timeoutMs: 200,
  execute: async (_args, ctx) => {
    await systemClock.sleep(10_000, ctx.signal);
    return toolResult.success('too late');
  },
});

function agent(name: string, tool: string): AgentDefinition {
  return {
    name,
    model: new ScriptedModel([{ toolCalls: [{ name: tool, arguments: {} }] }, { text: 'ok' }]),
    tools: [flaky, slow],
    executionMode: 'parallel_streaming',
  };
}

let h: Harness;
beforeAll(async () => {
  h = await startHarness(inject('redisUrl'), [agent('thrower', 'flaky'), agent('sleeper', 'slow')]);
});
afterAll(async () => {
  await h.stop();
});

async function runOf(name: string) {
  const created = await h.client.service.createRun('t-tools', {
    agent: name,
    input: { messages: [{ role: 'user', content: 'go' }] },
  });
  const cp = await waitForStatus(h, created.runId, ['done']);
  const audit = await auditRun(h.client, created.runId);
  expect(audit.problems).toEqual([]);
  const result = audit.events.find((e) => e.type === 'tool_call.result');
  const queue = await h.client.queues.runQueue({ runId: created.runId, agent: name });
  const jobs = await queue.getJobCounts('failed', 'completed');
  return { cp, outcome: result?.['outcome'] as { status: string; error: string }, jobs };
}

describe('tool failures in tool jobs', () => {
  it('a tool that throws: its message reaches the model once, the job completes', async () => {
    const { cp, outcome, jobs } = await runOf('thrower');
    expect(cp.termination).toEqual({ kind: 'natural_end' });
    expect(outcome).toEqual({ status: 'failed', error: 'upstream said no' });
    expect(executions).toBe(1);
    expect(jobs.failed).toBe(0);
  });

  it("a tool past its timeoutMs: 'did not finish within its timeout', the job completes", async () => {
    const { outcome, jobs } = await runOf('sleeper');
    expect(outcome.status).toBe('failed');
    expect(outcome.error).toMatch(/did not finish within its timeout of 200 ms/);
    expect(jobs.failed).toBe(0);
  });
});
