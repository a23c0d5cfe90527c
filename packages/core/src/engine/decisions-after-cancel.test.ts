import { describe, expect, it } from 'vitest';
import { BatonError } from '../errors.ts';
import { agentWith, approvalTool, flush, runnerFor } from '../testing/fixtures.ts';
import { Engine } from './engine.ts';

const agent = agentWith(
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
  { executionMode: 'parallel_batch_approval', replayPolicy: 'batch_all_suspended' },
);

async function waitingRun() {
  const { runner } = runnerFor(agent);
  const { runId } = await runner.start({
    agent: 'test-agent',
    input: [{ role: 'user', content: 'x' }],
  });
  await flush();
  const cp = (await runner.checkpoint(runId))!;
  expect(cp.status).toBe('waiting');
  return { cp, engine: new Engine(agent) };
}

function codeOf(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(BatonError);
    return (error as BatonError).code;
  }
  throw new Error('expected a throw');
}

describe('decisions around a cancel', () => {
  it('a cancel request is an event, and a new decision after it is refused (run_cancelled)', async () => {
    const { cp, engine } = await waitingRun();
    const requested = engine.requestCancel(cp, 10);
    expect(requested.events).toEqual([{ type: 'run.cancel_requested' }]);
    expect(requested.checkpoint.cancelRequested).toBe(true);
    // asking twice records it once
    expect(engine.requestCancel(requested.checkpoint, 11).events).toEqual([]);
    expect(
      codeOf(() =>
        engine.receiveDecisions(
          requested.checkpoint,
          [{ decisionId: 'd1', toolCallId: 'a', action: 'resume' }],
          12,
        ),
      ),
    ).toBe('run_cancelled');
  });

  it('a decision accepted before the cancel is recorded as discarded when the run ends', async () => {
    const { cp, engine } = await waitingRun();
    const decision = { decisionId: 'd1', toolCallId: 'a', action: 'resume' as const };
    const received = engine.receiveDecisions(cp, [decision], 10).checkpoint;
    expect(received.inbox).toEqual([decision]); // batch_all_suspended: waits for b's decision
    const cancelled = engine.cancel(engine.requestCancel(received, 11).checkpoint, 12);
    expect(cancelled.checkpoint.inbox).toEqual([]);
    expect(cancelled.events).toContainEqual({
      type: 'decision.discarded',
      decision,
      reason: 'run ended (cancelled) before the decision could be applied',
    });
  });

  it('resending an accepted decision gets its original answer even after the run ended', async () => {
    const { cp, engine } = await waitingRun();
    const decision = { decisionId: 'd1', toolCallId: 'a', action: 'resume' as const };
    const received = engine.receiveDecisions(cp, [decision], 10).checkpoint;
    const done = engine.cancel(received, 11).checkpoint;
    expect(done.status).toBe('done');
    const again = engine.receiveDecisions(done, [decision], 12);
    expect(again.accepted).toEqual([]);
    expect(again.duplicates).toEqual(['d1']);
    expect(again.events).toEqual([]);
    // the same id with another body is still a conflict, and a new decision is run_done
    expect(
      codeOf(() => engine.receiveDecisions(done, [{ ...decision, action: 'cancel' }], 13)),
    ).toBe('decision_conflict');
    expect(
      codeOf(() =>
        engine.receiveDecisions(
          done,
          [{ decisionId: 'd2', toolCallId: 'b', action: 'resume' }],
          13,
        ),
      ),
    ).toBe('run_done');
  });

  it('a tool call id that names an Object.prototype member is an unknown call', async () => {
    const { cp, engine } = await waitingRun();
    for (const id of ['__proto__', 'constructor', 'toString', 'hasOwnProperty'])
      expect(
        codeOf(() =>
          engine.receiveDecisions(
            cp,
            [{ decisionId: `d-${id}`, toolCallId: id, action: 'resume' }],
            10,
          ),
        ),
      ).toBe('call_unknown');
  });
});
