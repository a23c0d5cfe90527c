import { RunChildFinishedDataSchema, type RunEvent } from '@baton/protocol';
import { describe, expect, it } from 'vitest';
import { childOutcomeOf, mayProduceMessages, messagesFor } from './webhook-messages.ts';

const envelope = { runId: 'p', threadId: 'th', turnId: 'turn-0' };
const child = {
  runId: 'p.s1c0',
  agent: 'researcher',
  status: 'done' as const,
  termination: { kind: 'cancelled' as const },
  toolCallId: 'call_1_1',
};

describe('webhooks for child runs (agent-as-tool)', () => {
  it("a child_run.finished in the parent's log is a run.child_finished message", () => {
    const log: RunEvent[] = [
      {
        ...envelope,
        seq: 1,
        at: 1,
        type: 'run.created',
        agent: 'lead',
        executionMode: 'sequential',
      },
      { ...envelope, seq: 2, at: 2, type: 'child_run.finished', child },
    ];
    expect(childOutcomeOf(log[1]!)).toEqual(child);
    expect(childOutcomeOf(log[0]!)).toBeNull();
    expect(mayProduceMessages([log[1]!])).toBe(true);
    const [draft, ...rest] = messagesFor(log, 0, { tenantId: 't', metadata: {} });
    expect(rest).toEqual([]);
    expect(draft?.type).toBe('run.child_finished');
    expect(draft?.seq).toBe(2);
    expect(RunChildFinishedDataSchema.parse(draft?.message.data)).toMatchObject({
      runId: 'p',
      agent: 'lead',
      seq: 2,
      child,
    });
  });
});
