import { describe, expect, it } from 'vitest';
import { agentWith, flush, runnerFor } from '../testing/fixtures.ts';
import { ManualClock } from '../clock.ts';
import { ScriptedModel } from '../model/scripted-model.ts';
import { InProcessRunner } from '../runner/in-process-runner.ts';
import { demoTools } from '../demo/demo-agents.ts';
import { suspendingTool } from '../testing/scenario-agents.ts';

const start = { agent: 'test-agent', input: [{ role: 'user' as const, content: 'go' }] };

function clockRunner(turns: ConstructorParameters<typeof ScriptedModel>[0]) {
  const clock = new ManualClock(0);
  const agent = agentWith(new ScriptedModel(turns, { clock }), demoTools(clock));
  return { clock, runner: new InProcessRunner({ agents: [agent], clock }) };
}

describe('cancellation', () => {
  it('while the model streams: the stream is aborted and the run ends Cancelled', async () => {
    const { clock, runner } = clockRunner([
      { text: 'a very long answer that streams slowly', chunkDelayMs: 100 },
    ]);
    const { runId, finished } = await runner.start(start);
    await flush();
    await clock.advance(250);
    const deltasBefore = runner.events(runId).filter((e) => e.type === 'text.delta').length;
    expect(deltasBefore).toBeGreaterThan(0);
    await runner.cancel(runId);
    const cp = await finished;
    expect(cp.termination).toEqual({ kind: 'cancelled' });
    expect(clock.pendingSleepers()).toBe(0);
    expect(runner.events(runId).filter((e) => e.type === 'text.delta').length).toBe(deltasBefore);
    expect(cp.messages.filter((m) => m.role === 'assistant')).toHaveLength(0);
  });

  it('while a slow tool runs: the tool sees the abort and the call ends Cancelled', async () => {
    const { clock, runner } = clockRunner([
      { toolCalls: [{ id: 'slow', name: 'slow_report', arguments: { topic: 't', ms: 5000 } }] },
    ]);
    const { runId, finished } = await runner.start(start);
    await flush();
    expect((await runner.checkpoint(runId))?.calls['slow']?.status).toBe('running');
    await runner.cancel(runId);
    const cp = await finished;
    expect(cp.termination).toEqual({ kind: 'cancelled' });
    expect(clock.pendingSleepers()).toBe(0);
    const tool = cp.messages.find((m) => m.role === 'tool');
    expect(tool).toMatchObject({ toolCallId: 'slow', isError: true });
    const statuses = runner
      .events(runId)
      .filter((e) => e.type === 'tool_call.status')
      .map((e) => (e.type === 'tool_call.status' ? e.to : ''));
    expect(statuses).toEqual(['running', 'cancelled']);
  });

  it('while waiting: suspended calls become Cancelled and the run finishes', async () => {
    const { runner } = runnerFor(
      agentWith(
        [{ toolCalls: [{ id: 'a', name: 'ask' }] }],
        [suspendingTool('ask', 'replay_tool_call')],
      ),
    );
    const { runId, finished } = await runner.start(start);
    await flush();
    expect((await runner.checkpoint(runId))?.status).toBe('waiting');
    await runner.cancel(runId);
    const cp = await finished;
    expect(cp.status).toBe('done');
    expect(cp.termination).toEqual({ kind: 'cancelled' });
    expect(cp.calls['a']?.status).toBe('cancelled');
    const last = runner.events(runId).at(-1);
    expect(last).toMatchObject({
      type: 'run.finished',
      status: 'done',
      termination: { kind: 'cancelled' },
    });
    // Cancelling again is a no-op.
    await runner.cancel(runId);
    expect(runner.events(runId).at(-1)?.seq).toBe(last?.seq);
  });

  it('decisions after the end are rejected with run_done', async () => {
    const { runner } = runnerFor(agentWith([{ text: 'bye' }], []));
    const { runId, finished } = await runner.start(start);
    await finished;
    await expect(
      runner.submitDecisions(runId, [{ decisionId: 'x', toolCallId: 'y', action: 'resume' }]),
    ).rejects.toMatchObject({
      code: 'run_done',
    });
  });
});
