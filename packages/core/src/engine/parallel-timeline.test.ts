import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool, toolResult, type ToolDefinition } from '../tools.ts';
import { agentWith, flush, runnerFor, ToolGates } from '../testing/fixtures.ts';
import { callTimeline } from '../testing/timeline.ts';
import type { ExecutionMode } from '@baton/protocol';

function timelineAgent(mode: ExecutionMode, gates: ToolGates) {
  const approvalTool = (name: string): ToolDefinition =>
    defineTool({
      name,
      description: `${name} needs approval`,
      inputSchema: z.object({}),
      approval: {},
      execute: async (_args, ctx) => {
        gates.started.push(name);
        await gates.gate(name).promise;
        return toolResult.success({ tool: name, attempt: ctx.attempt });
      },
    });
  const toolC = defineTool({
    name: 'tool_C',
    description: 'normal tool',
    inputSchema: z.object({}),
    execute: async () => {
      gates.started.push('tool_C');
      await gates.gate('tool_C').promise;
      return toolResult.success({ tool: 'tool_C' });
    },
  });
  return agentWith(
    [
      {
        toolCalls: [
          { name: 'tool_A', id: 'A' },
          { name: 'tool_B', id: 'B' },
          { name: 'tool_C', id: 'C' },
        ],
      },
      { text: 'all done' },
    ],
    [approvalTool('tool_A'), approvalTool('tool_B'), toolC],
    { executionMode: mode },
  );
}

describe('seed t0–t7: tool_A and tool_B need approval, tool_C is normal', () => {
  it('ParallelStreaming follows the seed timeline, status re-derived at every commit', async () => {
    const gates = new ToolGates();
    gates.release('tool_A');
    gates.release('tool_B');
    const { runner } = runnerFor(timelineAgent('parallel_streaming', gates));
    const { runId, finished } = await runner.start({
      agent: 'test-agent',
      input: [{ role: 'user', content: 'go' }],
    });
    await flush();
    expect((await runner.checkpoint(runId))?.status).toBe('running'); // t2: C still running
    gates.release('tool_C');
    await flush();
    expect((await runner.checkpoint(runId))?.status).toBe('waiting'); // t3
    await runner.submitDecisions(runId, [{ decisionId: 'dA', toolCallId: 'A', action: 'resume' }]);
    await flush();
    expect((await runner.checkpoint(runId))?.status).toBe('waiting'); // t5: B still suspended
    await runner.submitDecisions(runId, [{ decisionId: 'dB', toolCallId: 'B', action: 'resume' }]);
    const cp = await finished;
    expect(cp.termination).toEqual({ kind: 'natural_end' });

    const rows = callTimeline(
      runner.store.commits.filter((c) => c.runId === runId),
      ['A', 'B', 'C'],
    );
    expect(rows.map((r) => [...r.calls, r.derived])).toEqual([
      ['new', 'new', 'new', 'done'], // t0: calls observed, nothing started
      ['suspended', 'suspended', 'running', 'running'], // t1–t2: A, B intercepted, C executing
      ['suspended', 'suspended', 'succeeded', 'waiting'], // t3
      ['resuming', 'suspended', 'succeeded', 'running'], // t4: A's decision
      ['running', 'suspended', 'succeeded', 'running'], // A replays
      ['succeeded', 'suspended', 'succeeded', 'waiting'], // t5
      ['succeeded', 'resuming', 'succeeded', 'running'], // t6
      ['succeeded', 'running', 'succeeded', 'running'],
      ['succeeded', 'succeeded', 'succeeded', 'done'], // t7: all terminal -> next step
    ]);
    // The run's own status is Waiting exactly on the waiting rows (t3, t5).
    expect(rows.filter((r) => r.run === 'waiting').map((r) => r.derived)).toEqual([
      'waiting',
      'waiting',
    ]);
    const toolMessages = cp.messages.filter((m) => m.role === 'tool').map((m) => m.content);
    expect(toolMessages).toEqual([
      { tool: 'tool_A', attempt: 1 },
      { tool: 'tool_B', attempt: 1 },
      { tool: 'tool_C' },
    ]);
  });

  it('ParallelStreaming replays tool_A immediately while tool_C is still running (concurrent model)', async () => {
    const gates = new ToolGates();
    gates.release('tool_A');
    gates.release('tool_B');
    const { runner } = runnerFor(timelineAgent('parallel_streaming', gates));
    const { runId, finished } = await runner.start({
      agent: 'test-agent',
      input: [{ role: 'user', content: 'go' }],
    });
    await flush();
    await runner.submitDecisions(runId, [{ decisionId: 'dA', toolCallId: 'A', action: 'resume' }]);
    await flush();
    let cp = await runner.checkpoint(runId);
    expect(cp?.calls['A']?.status).toBe('succeeded');
    expect(cp?.calls['C']?.status).toBe('running');
    expect(cp?.status).toBe('running');
    gates.release('tool_C');
    await flush();
    cp = await runner.checkpoint(runId);
    expect(cp?.status).toBe('waiting');
    expect(cp?.calls['B']?.status).toBe('suspended');
    await runner.submitDecisions(runId, [{ decisionId: 'dB', toolCallId: 'B', action: 'resume' }]);
    expect((await finished).termination).toEqual({ kind: 'natural_end' });
  });

  it('ParallelBatchApproval replays nothing until every suspended call has a decision', async () => {
    const gates = new ToolGates();
    gates.release('tool_A');
    gates.release('tool_B');
    gates.release('tool_C');
    const { runner } = runnerFor(timelineAgent('parallel_batch_approval', gates));
    const { runId, finished } = await runner.start({
      agent: 'test-agent',
      input: [{ role: 'user', content: 'go' }],
    });
    await flush();
    expect((await runner.checkpoint(runId))?.status).toBe('waiting');
    await runner.submitDecisions(runId, [{ decisionId: 'dA', toolCallId: 'A', action: 'resume' }]);
    await flush();
    let cp = await runner.checkpoint(runId);
    expect(cp?.status).toBe('waiting');
    expect(cp?.calls['A']?.status).toBe('suspended');
    expect(cp?.inbox.map((d) => d.decisionId)).toEqual(['dA']);
    expect(gates.started.filter((n) => n === 'tool_A')).toHaveLength(0);
    await runner.submitDecisions(runId, [{ decisionId: 'dB', toolCallId: 'B', action: 'resume' }]);
    cp = await finished;
    expect(cp.termination).toEqual({ kind: 'natural_end' });
    expect(gates.started.filter((n) => n !== 'tool_C')).toEqual(['tool_A', 'tool_B']);
    const applied = runner.events(runId).filter((e) => e.type === 'decision.applied');
    // Both decisions applied in one RESUME gate pass, in one commit.
    expect(new Set(applied.map((e) => e.seq - applied[0]!.seq)).size).toBe(2);
  });
});
