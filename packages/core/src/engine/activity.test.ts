import { describe, expect, it } from 'vitest';
import { agentWith, approvalTool, flush, runnerFor } from '../testing/fixtures.ts';
import { activityOf } from './activity.ts';
import type { DecisionReplayPolicy, ExecutionMode } from '@baton/protocol';

function twoApprovals(executionMode: ExecutionMode, replayPolicy: DecisionReplayPolicy) {
  return agentWith(
    [
      {
        toolCalls: [
          { name: 'A', id: 'a' },
          { name: 'B', id: 'b' },
        ],
      },
      { text: 'done' },
    ],
    [approvalTool('A'), approvalTool('B')],
    { executionMode, replayPolicy },
  );
}

describe('activityOf', () => {
  it('created and running runs are active, finished ones done', async () => {
    const { runner } = runnerFor(agentWith([{ text: 'hi' }], []));
    const { runId, finished } = await runner.start({
      agent: 'test-agent',
      input: [{ role: 'user', content: 'x' }],
    });
    const cp = await finished;
    expect(activityOf(cp)).toBe('done');
    const created = runner.store.commits.find((c) => c.runId === runId)?.checkpoint;
    expect(created && activityOf(created)).toBe('active');
  });

  it('batch_all_suspended with only some calls decided is still waiting (nothing to do)', async () => {
    const { runner } = runnerFor(twoApprovals('parallel_batch_approval', 'batch_all_suspended'));
    const { runId } = await runner.start({
      agent: 'test-agent',
      input: [{ role: 'user', content: 'x' }],
    });
    await flush();
    expect(activityOf((await runner.checkpoint(runId))!)).toBe('waiting');
    await runner.submitDecisions(runId, [{ decisionId: 'd1', toolCallId: 'a', action: 'resume' }]);
    await flush();
    const partly = (await runner.checkpoint(runId))!;
    expect(partly.inbox).toHaveLength(1);
    expect(activityOf(partly)).toBe('waiting');
  });

  it('an applicable decision or a cancel request makes a waiting run active', async () => {
    const { runner } = runnerFor(twoApprovals('parallel_streaming', 'immediate'));
    const { runId } = await runner.start({
      agent: 'test-agent',
      input: [{ role: 'user', content: 'x' }],
    });
    await flush();
    const waiting = (await runner.checkpoint(runId))!;
    expect(activityOf(waiting)).toBe('waiting');
    const decided = {
      ...waiting,
      inbox: [{ decisionId: 'd1', toolCallId: 'a', action: 'resume' as const }],
    };
    expect(activityOf(decided)).toBe('active');
    expect(activityOf({ ...waiting, cancelRequested: true })).toBe('active');
  });
});
