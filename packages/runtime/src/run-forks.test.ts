import type { RunEvent } from '@baton/protocol';
import { describe, expect, it } from 'vitest';
import { replayPoint } from './run-forks.ts';

const env = { runId: 'r', threadId: 't', turnId: 'turn-1', at: 1 };
function log(...bodies: object[]): RunEvent[] {
  return bodies.map((b, i) => ({ ...env, seq: i + 1, ...b }) as RunEvent);
}
const start = [
  { type: 'run.created', agent: 'a', executionMode: 'parallel_streaming' },
  { type: 'run.status', from: 'created', to: 'running' },
  { type: 'run.started', agent: 'a', executionMode: 'parallel_streaming' },
  { type: 'message.input', message: { id: 'm', role: 'user', content: 'go' } },
];
const cancelledOutcome = {
  status: 'cancelled',
  error: 'run ended (cancelled) before the call completed',
};

describe('replayPoint', () => {
  it('keeps what was committed before the cancel request, not the ending', () => {
    const events = log(
      ...start,
      { type: 'step.started', step: 1 },
      {
        type: 'tool_call.created',
        step: 1,
        toolCallId: 'A',
        toolName: 'a',
        arguments: {},
        index: 0,
      },
      { type: 'tool_call.status', toolCallId: 'A', toolName: 'a', from: 'new', to: 'running' },
      {
        type: 'tool_call.result',
        toolCallId: 'A',
        toolName: 'a',
        outcome: { status: 'succeeded' },
      },
      { type: 'run.cancel_requested' },
      {
        type: 'tool_call.status',
        toolCallId: 'A',
        toolName: 'a',
        from: 'running',
        to: 'cancelled',
      },
      { type: 'run.status', from: 'running', to: 'done' },
    );
    expect(replayPoint(events)).toBe(8);
  });

  it('drops the ending of a failure and the deltas of an inference never committed', () => {
    const events = log(
      ...start,
      { type: 'step.started', step: 1 },
      { type: 'text.delta', step: 1, messageId: 'x', delta: 'par' },
      { type: 'model.retry', step: 1, attempt: 1, delayMs: 1, reason: 'r', message: 'm' },
      { type: 'tool_call.result', toolCallId: 'Z', toolName: 'z', outcome: cancelledOutcome },
      { type: 'run.status', from: 'running', to: 'done' },
      {
        type: 'run.finished',
        status: 'done',
        termination: { kind: 'error', message: 'x' },
        usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 },
      },
    );
    expect(replayPoint(events)).toBe(5);
  });

  it('never goes before the end of the start, and has no point for a run that never started', () => {
    const events = log(...start, { type: 'run.cancel_requested' });
    expect(replayPoint(events)).toBe(4);
    expect(replayPoint(log(start[0]!))).toBeNull();
  });
});
