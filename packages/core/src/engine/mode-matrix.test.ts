import type { Checkpoint } from '@baton/protocol';
import { describe, expect, it } from 'vitest';
import { flush, runnerFor } from '../testing/fixtures.ts';
import {
  MATRIX_CASES,
  matrixAgentName,
  matrixAgents,
  payloadFor,
} from '../testing/scenario-agents.ts';

function statuses(cp: Checkpoint | null): string[] {
  return ['S1', 'E', 'S2'].map((id) => cp?.calls[id]?.status ?? '-');
}

describe.each(MATRIX_CASES)('mode %s × policy %s × resume %s', (mode, policy, resume) => {
  it('suspends, replays per policy and resumes per resume mode', async () => {
    const { runner } = runnerFor(...matrixAgents());
    const { runId, finished } = await runner.start({
      agent: matrixAgentName(mode, policy, resume),
      input: [{ role: 'user', content: 'go' }],
    });
    await flush();
    let cp = await runner.checkpoint(runId);
    expect(cp?.status).toBe('waiting');
    if (mode === 'sequential') {
      // Stops at the first suspension: echo and S2 never start.
      expect(statuses(cp)).toEqual(['suspended', 'new', 'new']);
    } else {
      // Suspensions and failures stop nothing: echo ran, both suspended.
      expect(statuses(cp)).toEqual(['suspended', 'succeeded', 'suspended']);
    }
    const payload = payloadFor(resume);
    const decide = (id: string) => ({
      decisionId: `d-${id}`,
      toolCallId: id,
      action: 'resume' as const,
      ...(payload === undefined ? {} : { payload }),
    });
    await runner.submitDecisions(runId, [decide('S1')]);
    await flush();
    cp = await runner.checkpoint(runId);
    if (mode === 'sequential') {
      // S1 resolved, echo executed, S2 now suspended: the next call is gated after S1 committed.
      expect(statuses(cp)).toEqual(['succeeded', 'succeeded', 'suspended']);
    } else if (policy === 'batch_all_suspended') {
      expect(statuses(cp)).toEqual(['suspended', 'succeeded', 'suspended']);
      expect(cp?.inbox).toHaveLength(1);
    } else {
      expect(statuses(cp)).toEqual(['succeeded', 'succeeded', 'suspended']);
    }
    expect(cp?.status).toBe('waiting');
    await runner.submitDecisions(runId, [decide('S2')]);
    const final = await finished;
    expect(final.termination).toEqual({ kind: 'natural_end' });

    const toolMessages = final.messages.filter((m) => m.role === 'tool');
    expect(toolMessages.map((m) => m.toolCallId)).toEqual(['S1', 'E', 'S2']);
    const s1 = toolMessages[0]?.content;
    if (resume === 'replay_tool_call') {
      expect(s1).toEqual({ tool: 's1', args: { value: 'one' }, attempt: 1, resumed: true });
    } else if (resume === 'use_decision_as_tool_result') {
      expect(s1).toEqual({ answer: 'yes' });
    } else {
      expect(s1).toEqual({ tool: 's1', args: { value: 'from-decision' }, attempt: 1 });
    }
    const seqs = runner.events(runId).map((e) => e.seq);
    expect(seqs).toEqual(seqs.map((_, i) => i + 1));
  });
});
