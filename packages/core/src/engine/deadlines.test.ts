import type { DeadlinePolicy, EventType } from '@baton/protocol';
import { describe, expect, it } from 'vitest';
import { foldSnapshot } from '../snapshot.ts';
import { agentWith, approvalTool, flush, runnerFor } from '../testing/fixtures.ts';
import { runCommands, type Transition } from './engine.ts';

const agent = agentWith(
  [{ toolCalls: [{ name: 'A', id: 'a' }] }, { text: 'done' }],
  [approvalTool('A')],
);

/** A run waiting on call `a`, created with `options.deadline`. */
async function waitingRun(options: { deadline: DeadlinePolicy }) {
  const { runner } = runnerFor(agent);
  const { runId } = await runner.start({
    agent: 'test-agent',
    input: [{ role: 'user', content: 'x' }],
    options,
  });
  await flush();
  const cp = (await runner.checkpoint(runId))!;
  expect(cp.status).toBe('waiting');
  const events = runner.events(runId);
  const suspended = events.find((e) => e.type === 'tool_call.suspended');
  return { cp, callId: 'a', suspendedAt: suspended?.at ?? -1, events };
}

function expectTransitionEvents(t: Transition, types: EventType[]): void {
  expect(
    t.events.map((e) => e.type).filter((type) => type.startsWith('tool_call.deadline')),
  ).toEqual(types);
}

const deny: DeadlinePolicy = { timeout: 1_000, outcome: { action: 'deny', reason: 'too slow' } };

describe('deadlines (pure)', () => {
  it('a suspended call takes the run option deadline, resolved to an instant', async () => {
    const { cp, callId, suspendedAt } = await waitingRun({ deadline: deny });
    expect(cp.calls[callId]?.ticket?.deadline).toEqual({
      at: suspendedAt + 1_000,
      outcome: { action: 'deny', reason: 'too slow' },
    });
  });

  it('does nothing before the deadline, fires deny once after it, then is moot', async () => {
    const { cp, callId, suspendedAt } = await waitingRun({ deadline: deny });
    const early = runCommands.expireDeadline(cp, callId, suspendedAt + 999);
    expect(early.expiry).toEqual({ kind: 'not_due', at: suspendedAt + 1_000 });
    const t = runCommands.expireDeadline(cp, callId, suspendedAt + 1_000);
    expect(t.expiry.kind).toBe('fired');
    expectTransitionEvents(t, ['tool_call.deadline_expired']);
    expect(t.checkpoint.inbox).toEqual([
      expect.objectContaining({ action: 'cancel', source: 'deadline', reason: 'too slow' }),
    ]);
    const again = runCommands.expireDeadline(t.checkpoint, callId, suspendedAt + 2_000);
    expect(again.expiry.kind).toBe('moot');
    // A client's decision after it: refused, naming the deadline.
    expect(() =>
      runCommands.receiveDecisions(
        t.checkpoint,
        [{ decisionId: 'human', toolCallId: callId, action: 'resume' }],
        suspendedAt + 2_000,
      ),
    ).toThrow(/deadline passed first and denied it/);
  });

  it('is moot when a decision came first', async () => {
    const { cp, callId, suspendedAt } = await waitingRun({ deadline: deny });
    const decided = runCommands.receiveDecisions(
      cp,
      [{ decisionId: 'human', toolCallId: callId, action: 'resume' }],
      suspendedAt + 10,
    );
    const t = runCommands.expireDeadline(decided.checkpoint, callId, suspendedAt + 5_000);
    expect(t.expiry).toEqual({ kind: 'moot', why: 'a decision for the call arrived first' });
    expect(t.events).toEqual([]);
  });

  it('escalates once, moving the deadline, then applies `then`', async () => {
    const { cp, callId, suspendedAt } = await waitingRun({
      deadline: {
        timeout: 1_000,
        outcome: { action: 'escalate', extendBy: 'PT1S', then: { action: 'resume', payload: {} } },
      },
    });
    const t = runCommands.expireDeadline(cp, callId, suspendedAt + 1_000);
    expectTransitionEvents(t, ['tool_call.deadline_expired', 'tool_call.deadline_escalated']);
    expect(t.checkpoint.calls[callId]?.ticket?.deadline).toEqual({
      at: suspendedAt + 2_000,
      outcome: { action: 'resume', payload: {} },
      escalated: true,
    });
    expect(t.checkpoint.inbox).toEqual([]);
    const second = runCommands.expireDeadline(t.checkpoint, callId, suspendedAt + 2_000);
    expect(second.checkpoint.inbox).toEqual([
      expect.objectContaining({ action: 'resume', source: 'deadline', payload: {} }),
    ]);
  });

  it('cancel asks for the run cancel', async () => {
    const cancel = await waitingRun({ deadline: { timeout: 10, outcome: { action: 'cancel' } } });
    const t = runCommands.expireDeadline(cancel.cp, cancel.callId, cancel.suspendedAt + 10);
    expect(t.checkpoint.cancelRequested).toBe(true);
  });

  it('the snapshot shows the deadline on the awaited call and the escalation', async () => {
    const { events, cp, callId, suspendedAt } = await waitingRun({
      deadline: { timeout: 1_000, outcome: { action: 'escalate', extendBy: 500 } },
    });
    const before = foldSnapshot(events);
    expect(before.await?.calls[0]?.deadline).toEqual({
      at: suspendedAt + 1_000,
      action: 'escalate',
    });
    const t = runCommands.expireDeadline(cp, callId, suspendedAt + 1_000);
    const seq = before.lastSeq;
    const after = foldSnapshot(
      t.events.map((e, i) => ({
        ...e,
        seq: seq + i + 1,
        runId: before.runId,
        threadId: before.threadId,
        turnId: before.turnId,
        at: suspendedAt + 1_000,
      })),
      before,
    );
    expect(after.await?.calls[0]?.deadline).toEqual({
      at: suspendedAt + 1_500,
      action: 'deny',
      escalated: true,
    });
  });
});
