import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool, toolResult } from '../tools.ts';
import { agentWith, flush, runnerFor } from '../testing/fixtures.ts';
import { echo, failing } from '../testing/scenario-agents.ts';

describe('Sequential mode', () => {
  it('tool call 2 of 4 suspends -> calls 3 and 4 never execute until it is resolved', async () => {
    const executed: string[] = [];
    const tracked = (name: string, approval = false) =>
      defineTool({
        name,
        description: name,
        inputSchema: z.object({}),
        ...(approval ? { approval: {} } : {}),
        execute: async () => {
          executed.push(name);
          return toolResult.success(name);
        },
      });
    const agent = agentWith(
      [
        {
          toolCalls: [
            { id: 'c1', name: 't1' },
            { id: 'c2', name: 't2' },
            { id: 'c3', name: 't3' },
            { id: 'c4', name: 't4' },
          ],
        },
        { text: 'ok' },
      ],
      [tracked('t1'), tracked('t2', true), tracked('t3'), tracked('t4')],
    );
    const { runner } = runnerFor(agent);
    const { runId, finished } = await runner.start({
      agent: 'test-agent',
      input: [{ role: 'user', content: 'go' }],
    });
    await flush();
    const cp = await runner.checkpoint(runId);
    expect(cp?.status).toBe('waiting');
    expect(executed).toEqual(['t1']);
    expect(['c1', 'c2', 'c3', 'c4'].map((id) => cp?.calls[id]?.status)).toEqual([
      'succeeded',
      'suspended',
      'new',
      'new',
    ]);
    await runner.submitDecisions(runId, [{ decisionId: 'd', toolCallId: 'c2', action: 'resume' }]);
    await finished;
    expect(executed).toEqual(['t1', 't2', 't3', 't4']);
  });

  it('failures do not stop execution in any mode', async () => {
    for (const mode of ['sequential', 'parallel_batch_approval', 'parallel_streaming'] as const) {
      const agent = agentWith(
        [
          {
            toolCalls: [
              { id: 'f', name: 'failing' },
              { id: 'e', name: 'echo', arguments: { value: 'x' } },
            ],
          },
          { text: 'ok' },
        ],
        [failing, echo],
        { executionMode: mode },
      );
      const { runner } = runnerFor(agent);
      const { finished } = await runner.start({
        agent: 'test-agent',
        input: [{ role: 'user', content: 'go' }],
      });
      const cp = await finished;
      expect(cp.termination).toEqual({ kind: 'natural_end' });
      const tools = cp.messages.filter((m) => m.role === 'tool');
      expect(tools.map((m) => [m.toolCallId, m.isError])).toEqual([
        ['f', true],
        ['e', false],
      ]);
      expect(tools[0]?.content).toEqual({ error: 'this tool always fails' });
    }
  });

  it('refreshes state between calls, while parallel calls share a frozen snapshot', async () => {
    const counterTool = defineTool({
      name: 'bump',
      description: 'reads and increments the counter',
      inputSchema: z.object({}),
      execute: async (_args, ctx) => {
        const seen = (ctx.state.run['counter'] as number | undefined) ?? 0;
        return {
          result: toolResult.success({ seen }),
          patches: [{ op: 'reduce', key: 'counter', value: 1 }],
        };
      },
    });
    const seen: Record<string, unknown> = {};
    for (const mode of ['sequential', 'parallel_streaming'] as const) {
      const agent = agentWith(
        [
          {
            toolCalls: [
              { id: 'a', name: 'bump' },
              { id: 'b', name: 'bump' },
            ],
          },
          { text: 'ok' },
        ],
        [counterTool],
        {
          executionMode: mode,
          stateKeys: [
            {
              key: 'counter',
              scope: 'run',
              merge: 'commutative',
              reducer: 'sum',
              persistent: true,
            },
          ],
        },
      );
      const { runner } = runnerFor(agent);
      const { finished } = await runner.start({
        agent: 'test-agent',
        input: [{ role: 'user', content: 'go' }],
      });
      const cp = await finished;
      seen[mode] = cp.messages.filter((m) => m.role === 'tool').map((m) => m.content);
      expect(cp.state.run['counter']).toBe(2);
    }
    expect(seen['sequential']).toEqual([{ seen: 0 }, { seen: 1 }]);
    expect(seen['parallel_streaming']).toEqual([{ seen: 0 }, { seen: 0 }]);
  });
});
