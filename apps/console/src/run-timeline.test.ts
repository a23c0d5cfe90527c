import type { RunEvent } from '@baton/protocol';
import { describe, expect, it } from 'vitest';
import { EMPTY_VIEW, foldEvent, type RunView } from './run-timeline.ts';

const envelope = { runId: 'r', threadId: 't', turnId: 'u', at: 0 };
let seq = 0;
const ev = (body: object): RunEvent => ({ ...envelope, seq: ++seq, ...body }) as RunEvent;
const fold = (events: RunEvent[]): RunView => events.reduce(foldEvent, EMPTY_VIEW);

describe('foldEvent', () => {
  it('streams text per message, drops a reset inference, keeps the committed message', () => {
    seq = 0;
    const view = fold([
      ev({ type: 'run.created', agent: 'a', executionMode: 'sequential' }),
      ev({ type: 'text.delta', step: 1, messageId: 'm1', delta: 'Hel' }),
      ev({ type: 'inference.reset', step: 1, messageId: 'm1' }),
      ev({ type: 'text.delta', step: 1, messageId: 'm2', delta: 'Hello ' }),
      ev({ type: 'text.delta', step: 1, messageId: 'm2', delta: 'there' }),
    ]);
    expect(view.texts).toEqual([
      { step: 1, messageId: 'm2', text: 'Hello there', streaming: true },
    ]);
    const done = foldEvent(
      view,
      ev({
        type: 'message.assistant',
        step: 1,
        message: { id: 'm2', role: 'assistant', content: 'Hello there', toolCalls: [] },
      }),
    );
    expect(done.texts).toEqual([
      { step: 1, messageId: 'm2', text: 'Hello there', streaming: false },
    ]);
    // deltas do not clutter the timeline
    expect(done.timeline.map((e) => e.type)).toEqual([
      'run.created',
      'inference.reset',
      'message.assistant',
    ]);
  });

  it('records every status a tool call went through, and its outcome', () => {
    seq = 0;
    const view = fold([
      ev({
        type: 'tool_call.created',
        step: 1,
        toolCallId: 'c',
        toolName: 'deploy',
        arguments: {},
        index: 0,
      }),
      ev({
        type: 'tool_call.status',
        toolCallId: 'c',
        toolName: 'deploy',
        from: 'new',
        to: 'suspended',
      }),
      ev({ type: 'run.status', from: 'running', to: 'waiting' }),
      ev({
        type: 'tool_call.status',
        toolCallId: 'c',
        toolName: 'deploy',
        from: 'suspended',
        to: 'cancelled',
      }),
      ev({
        type: 'tool_call.result',
        toolCallId: 'c',
        toolName: 'deploy',
        outcome: { status: 'cancelled' },
      }),
    ]);
    expect(view.toolCalls[0]).toMatchObject({
      statuses: ['new', 'suspended', 'cancelled'],
      outcome: { status: 'cancelled' },
    });
    expect(view.status).toBe('waiting');
  });

  it('ignores an event it has already folded (a replay after a reconnect)', () => {
    seq = 0;
    const first = ev({ type: 'text.delta', step: 1, messageId: 'm', delta: 'x' });
    const view = fold([first, first]);
    expect(view.texts[0]!.text).toBe('x');
    expect(view.lastSeq).toBe(1);
  });
});

describe('timeline lines', () => {
  it("a decision shows the approver's comment, other payloads as JSON", () => {
    seq = 0;
    const decided = (payload: unknown) =>
      fold([
        ev({
          type: 'decision.applied',
          decision: {
            decisionId: 'd',
            toolCallId: 'c1',
            action: 'resume',
            ...(payload === undefined ? {} : { payload }),
          },
        }),
      ]).timeline[0]?.summary;
    expect(decided({ comment: 'ship it' })).toBe('decision approve (c1): “ship it”');
    seq = 0;
    expect(decided('fine')).toBe('decision approve (c1): “fine”');
    seq = 0;
    expect(decided({ env: 'prod', n: 2 })).toBe('decision approve (c1) with {"env":"prod","n":2}');
    seq = 0;
    expect(decided(undefined)).toBe('decision approve (c1)');
  });

  it('a decision made by a waitpoint, an event or a timeout says so', () => {
    const by = (source: 'waitpoint' | 'event' | 'timeout' | 'api') => {
      seq = 0;
      return fold([
        ev({
          type: 'decision.applied',
          decision: { decisionId: 'd', toolCallId: 'c1', action: 'resume', source },
        }),
      ]).timeline[0]?.summary;
    };
    expect(by('waitpoint')).toBe('decision approve (c1) by waitpoint');
    expect(by('timeout')).toBe('decision approve (c1) by timeout');
    expect(by('api')).toBe('decision approve (c1)');
  });

  it('a child run line names the agent only when the tool is named otherwise', () => {
    seq = 0;
    const linked = (toolName: string, childAgentId: string) =>
      fold([ev({ type: 'child_run.linked', link: { toolName, childAgentId, childRunId: 'k' } })])
        .timeline[0]?.summary;
    expect(linked('researcher', 'researcher')).toBe('researcher runs as child run k');
    seq = 0;
    expect(linked('ask_expert', 'researcher')).toBe(
      'ask_expert runs as child run k (agent researcher)',
    );
  });
});

describe('deadlines on the timeline', () => {
  it('shows a deadline that passed, an escalation and the decision the deadline took', () => {
    seq = 0;
    const view = fold([
      ev({
        type: 'tool_call.deadline_escalated',
        toolCallId: 'c1',
        toolName: 'deploy',
        deadlineAt: Date.UTC(2026, 0, 1, 10),
        outcome: { action: 'deny' },
      }),
      ev({
        type: 'tool_call.deadline_expired',
        toolCallId: 'c1',
        toolName: 'deploy',
        deadlineAt: Date.UTC(2026, 0, 1, 10),
        outcome: { action: 'deny' },
      }),
      ev({
        type: 'decision.applied',
        decision: { decisionId: 'd', toolCallId: 'c1', action: 'cancel', source: 'deadline' },
      }),
    ]);
    expect(view.timeline.map((e) => e.summary)).toEqual([
      'deploy: escalated, deadline moved to 2026-01-01T10:00:00.000Z',
      'deploy: deadline passed (2026-01-01T10:00:00.000Z), deny',
      'decision deny (c1) by deadline',
    ]);
  });
});
