import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool, toolResult } from '../tools.ts';
import { agentWith, runnerFor } from '../testing/fixtures.ts';

const writer = defineTool({
  name: 'write_owner',
  description: 'claims the exclusive "owner" key',
  inputSchema: z.object({ who: z.string() }),
  execute: async ({ who }) => ({
    result: toolResult.success({ claimed: who }),
    patches: [
      { op: 'set', key: 'owner', value: who },
      { op: 'reduce', key: 'claims', value: who },
    ],
  }),
});

function agent(mode: 'sequential' | 'parallel_batch_approval' | 'parallel_streaming') {
  return agentWith(
    [
      {
        toolCalls: [
          { id: 'first', name: 'write_owner', arguments: { who: 'first' } },
          { id: 'second', name: 'write_owner', arguments: { who: 'second' } },
        ],
      },
      { text: 'ok' },
    ],
    [writer],
    {
      executionMode: mode,
      stateKeys: [
        { key: 'owner', scope: 'thread', merge: 'exclusive', persistent: true },
        { key: 'claims', scope: 'run', merge: 'commutative', reducer: 'append', persistent: true },
      ],
    },
  );
}

describe('parallel state conflicts', () => {
  it.each(['parallel_batch_approval', 'parallel_streaming'] as const)(
    '%s: two writers of one exclusive key -> the earlier call wins, the later call is told',
    async (mode) => {
      const { runner } = runnerFor(agent(mode));
      const { runId, finished } = await runner.start({
        agent: 'test-agent',
        input: [{ role: 'user', content: 'go' }],
      });
      const cp = await finished;
      expect(cp.state.thread['owner']).toBe('first');
      // The loser's patches are discarded as a unit, commutative contribution included.
      expect(cp.state.run['claims']).toEqual(['first']);
      const conflict = runner.events(runId).find((e) => e.type === 'state.conflict');
      expect(conflict).toMatchObject({ key: 'owner', winner: 'first', rejected: ['second'] });
      const second = cp.messages.find((m) => m.role === 'tool' && m.toolCallId === 'second');
      expect(second).toMatchObject({ isError: false, content: { output: { claimed: 'second' } } });
      expect(JSON.stringify(second)).toContain('state changes discarded');
      // Persistent thread state reaches the thread.
      expect(runner.threads.get(cp.identity.threadId).state).toEqual({ owner: 'first' });
    },
  );

  it('sequential mode has no conflicts: the last writer wins', async () => {
    const { runner } = runnerFor(agent('sequential'));
    const { runId, finished } = await runner.start({
      agent: 'test-agent',
      input: [{ role: 'user', content: 'go' }],
    });
    const cp = await finished;
    expect(cp.state.thread['owner']).toBe('second');
    expect(cp.state.run['claims']).toEqual(['first', 'second']);
    expect(runner.events(runId).some((e) => e.type === 'state.conflict')).toBe(false);
  });
});
