import type { AwaitSnapshot, EventBody, RunEvent, Usage } from '@baton/protocol';
// The adapters' own type: @baton/api does not export it, and only their tests need these runs.
import type { PendingRun } from '../../../apps/api/src/adapters/shared.ts';

/**
 * Baton event logs for adapter tests, shaped like the engine's (see the in-process runner):
 * a run that suspends ends its first "turn" with run.finished(waiting) while step 1 is still
 * open; the resumed turn continues the same log with higher seq.
 */

const RUN = 'r1';
const THREAD = 't1';
const USAGE: Usage = { inputTokens: 10, outputTokens: 5, totalTokens: 15 };
const USAGE2: Usage = { inputTokens: 25, outputTokens: 9, totalTokens: 34 };

/** A log under construction: `add` stamps envelopes with increasing seq (at = 1000 + seq). */
export class Log {
  readonly events: RunEvent[] = [];
  private seq = 0;
  private readonly runId: string;
  constructor(runId = RUN) {
    this.runId = runId;
  }

  add(...bodies: EventBody[]): RunEvent[] {
    const added = bodies.map((body) => {
      this.seq += 1;
      return {
        seq: this.seq,
        runId: this.runId,
        threadId: THREAD,
        turnId: 'turn-1',
        at: 1000 + this.seq,
        ...body,
      };
    });
    this.events.push(...added);
    return added;
  }
}

export function started(log: Log, user = 'deploy prod'): RunEvent[] {
  return log.add(
    { type: 'run.created', agent: 'ops', executionMode: 'sequential' },
    { type: 'run.status', from: 'created', to: 'running' },
    { type: 'run.started', agent: 'ops', executionMode: 'sequential' },
    { type: 'message.input', message: { id: 'u1', role: 'user', content: user } },
    { type: 'step.started', step: 1 },
    { type: 'phase', step: 1, phase: 'before_inference' },
  );
}

const msg1 = `${RUN}:step:1`;
const msg2 = `${RUN}:step:2`;

/** Turn 1 of an approval: reasoning + text stream, a deploy call, suspended for approval. */
export function approvalTurn(log = new Log()): RunEvent[] {
  return [
    ...started(log),
    ...log.add(
      { type: 'reasoning.delta', step: 1, messageId: msg1, delta: 'needs approval' },
      { type: 'text.delta', step: 1, messageId: msg1, delta: 'Deploying' },
      { type: 'text.delta', step: 1, messageId: msg1, delta: ' now' },
      {
        type: 'message.assistant',
        step: 1,
        message: {
          id: msg1,
          role: 'assistant',
          content: 'Deploying now',
          reasoning: 'needs approval',
          toolCalls: [{ id: 'call_1', name: 'deploy', arguments: { env: 'prod' } }],
        },
      },
      {
        type: 'tool_call.created',
        step: 1,
        toolCallId: 'call_1',
        toolName: 'deploy',
        arguments: { env: 'prod' },
        index: 0,
      },
      {
        type: 'tool_call.status',
        toolCallId: 'call_1',
        toolName: 'deploy',
        from: 'new',
        to: 'suspended',
      },
      {
        type: 'tool_call.suspended',
        toolCallId: 'call_1',
        toolName: 'deploy',
        ticket: {
          reason: 'approval',
          message: 'Deploy to prod?',
          parameters: { env: 'prod' },
          resumeMode: 'replay_tool_call',
        },
      },
      { type: 'run.status', from: 'running', to: 'waiting' },
      { type: 'run.finished', status: 'waiting', termination: { kind: 'suspended' }, usage: USAGE },
    ),
  ];
}

function finalStep(log: Log, text: string): RunEvent[] {
  return log.add(
    { type: 'step.finished', step: 1, usage: USAGE },
    { type: 'step.started', step: 2 },
    { type: 'text.delta', step: 2, messageId: msg2, delta: text },
    {
      type: 'message.assistant',
      step: 2,
      message: { id: msg2, role: 'assistant', content: text, toolCalls: [] },
    },
    { type: 'step.finished', step: 2, usage: USAGE2 },
    { type: 'run.status', from: 'running', to: 'done' },
    { type: 'run.finished', status: 'done', termination: { kind: 'natural_end' }, usage: USAGE2 },
  );
}

/** Turn 2 after approval: the call replays, succeeds, the model answers, natural end. */
export function approvedTurn(log: Log, decisionId = 'd1'): RunEvent[] {
  return [
    ...log.add(
      { type: 'run.status', from: 'waiting', to: 'running' },
      {
        type: 'decision.applied',
        decision: { decisionId, toolCallId: 'call_1', action: 'resume' },
      },
      {
        type: 'tool_call.status',
        toolCallId: 'call_1',
        toolName: 'deploy',
        from: 'suspended',
        to: 'resuming',
      },
      {
        type: 'tool_call.status',
        toolCallId: 'call_1',
        toolName: 'deploy',
        from: 'resuming',
        to: 'running',
      },
      {
        type: 'tool_call.status',
        toolCallId: 'call_1',
        toolName: 'deploy',
        from: 'running',
        to: 'succeeded',
      },
      {
        type: 'tool_call.result',
        toolCallId: 'call_1',
        toolName: 'deploy',
        outcome: { status: 'succeeded', output: { deployed: 'prod' } },
        durationMs: 3,
      },
    ),
    ...finalStep(log, 'Done.'),
  ];
}

/** Turn 2 after a denial: the cancel decision settles the call; the model acknowledges. */
/** The approval of approvalTurn timed out: its deadline denied it (issue 36). */
export function deadlineDeniedTurn(log: Log): RunEvent[] {
  return [
    ...log.add(
      {
        type: 'tool_call.deadline_expired',
        toolCallId: 'call_1',
        toolName: 'deploy',
        deadlineAt: 1_000,
        outcome: { action: 'deny', reason: 'nobody approved' },
      },
      { type: 'run.status', from: 'waiting', to: 'running' },
      {
        type: 'decision.applied',
        decision: {
          decisionId: 'deadline:call_1:1000',
          toolCallId: 'call_1',
          action: 'cancel',
          source: 'deadline',
          reason: 'nobody approved',
        },
      },
      {
        type: 'tool_call.status',
        toolCallId: 'call_1',
        toolName: 'deploy',
        from: 'suspended',
        to: 'cancelled',
      },
      {
        type: 'tool_call.result',
        toolCallId: 'call_1',
        toolName: 'deploy',
        outcome: { status: 'cancelled', error: 'deadline passed: nobody approved' },
      },
    ),
    ...finalStep(log, 'Not deploying.'),
  ];
}

export function deniedTurn(log: Log, decisionId = 'd1'): RunEvent[] {
  return [
    ...log.add(
      { type: 'run.status', from: 'waiting', to: 'running' },
      {
        type: 'decision.applied',
        decision: {
          decisionId,
          toolCallId: 'call_1',
          action: 'cancel',
          payload: { reason: 'not today' },
        },
      },
      {
        type: 'tool_call.status',
        toolCallId: 'call_1',
        toolName: 'deploy',
        from: 'suspended',
        to: 'cancelled',
      },
      {
        type: 'tool_call.result',
        toolCallId: 'call_1',
        toolName: 'deploy',
        outcome: { status: 'cancelled', error: 'cancelled by decision' },
      },
    ),
    ...finalStep(log, 'Not deploying.'),
  ];
}

/** Turn 1 of a client-side tool: the call suspends with reason client_tool (no text). */
export function clientToolTurn(log = new Log()): RunEvent[] {
  return [
    ...started(log, 'ask me'),
    ...log.add(
      {
        type: 'message.assistant',
        step: 1,
        message: {
          id: msg1,
          role: 'assistant',
          content: '',
          toolCalls: [{ id: 'call_q', name: 'ask', arguments: { question: 'yes or no?' } }],
        },
      },
      {
        type: 'tool_call.created',
        step: 1,
        toolCallId: 'call_q',
        toolName: 'ask',
        arguments: { question: 'yes or no?' },
        index: 0,
      },
      {
        type: 'tool_call.status',
        toolCallId: 'call_q',
        toolName: 'ask',
        from: 'new',
        to: 'suspended',
      },
      {
        type: 'tool_call.suspended',
        toolCallId: 'call_q',
        toolName: 'ask',
        ticket: {
          reason: 'client_tool',
          message: 'Answer in the browser',
          parameters: { question: 'yes or no?' },
          responseSchema: {
            type: 'object',
            properties: { answer: { type: 'string' } },
            required: ['answer'],
          },
          resumeMode: 'use_decision_as_tool_result',
        },
      },
      { type: 'run.status', from: 'running', to: 'waiting' },
      { type: 'run.finished', status: 'waiting', termination: { kind: 'suspended' }, usage: USAGE },
    ),
  ];
}

/** Turn 2 of a client tool: the decision payload IS the result (UseDecisionAsToolResult). */
export function clientOutputTurn(log: Log, decisionId = 'd1'): RunEvent[] {
  return [
    ...log.add(
      { type: 'run.status', from: 'waiting', to: 'running' },
      {
        type: 'decision.applied',
        decision: {
          decisionId,
          toolCallId: 'call_q',
          action: 'resume',
          payload: { answer: 'yes' },
        },
      },
      {
        type: 'tool_call.status',
        toolCallId: 'call_q',
        toolName: 'ask',
        from: 'suspended',
        to: 'resuming',
      },
      {
        type: 'tool_call.status',
        toolCallId: 'call_q',
        toolName: 'ask',
        from: 'resuming',
        to: 'succeeded',
      },
      {
        type: 'tool_call.result',
        toolCallId: 'call_q',
        toolName: 'ask',
        outcome: { status: 'succeeded', output: { answer: 'yes' } },
      },
    ),
    ...finalStep(log, 'You said yes.'),
  ];
}

/** A run whose model fails after streaming some text. */
export function errorRun(log = new Log()): RunEvent[] {
  return [
    ...started(log),
    ...log.add(
      { type: 'text.delta', step: 1, messageId: msg1, delta: 'Let me' },
      { type: 'run.status', from: 'running', to: 'done' },
      {
        type: 'run.finished',
        status: 'done',
        termination: { kind: 'error', message: 'model exploded' },
        usage: USAGE,
      },
    ),
  ];
}

/** A run cancelled while the model streams. */
export function cancelledRun(log = new Log()): RunEvent[] {
  return [
    ...started(log),
    ...log.add(
      { type: 'text.delta', step: 1, messageId: msg1, delta: 'Hel' },
      { type: 'run.status', from: 'running', to: 'done' },
      { type: 'run.finished', status: 'done', termination: { kind: 'cancelled' }, usage: USAGE },
    ),
  ];
}

/** An inference abandoned mid-stream and retried in the same step. */
export function resetRun(log = new Log()): RunEvent[] {
  return [
    ...started(log, 'hi'),
    ...log.add(
      { type: 'text.delta', step: 1, messageId: msg1, delta: 'Hel' },
      { type: 'inference.reset', step: 1, messageId: msg1 },
      { type: 'text.delta', step: 1, messageId: msg1, delta: 'Hello!' },
      {
        type: 'message.assistant',
        step: 1,
        message: { id: msg1, role: 'assistant', content: 'Hello!', toolCalls: [] },
      },
      { type: 'step.finished', step: 1, usage: USAGE },
      { type: 'run.status', from: 'running', to: 'done' },
      { type: 'run.finished', status: 'done', termination: { kind: 'natural_end' }, usage: USAGE },
    ),
  ];
}

/** A tool that fails, then a stop condition ends the run. */
export function failedToolRun(log = new Log(), code = 'token_budget'): RunEvent[] {
  return [
    ...started(log, 'search'),
    ...log.add(
      {
        type: 'message.assistant',
        step: 1,
        message: {
          id: msg1,
          role: 'assistant',
          content: '',
          toolCalls: [{ id: 'call_s', name: 'search', arguments: { q: 'x' } }],
        },
      },
      {
        type: 'tool_call.created',
        step: 1,
        toolCallId: 'call_s',
        toolName: 'search',
        arguments: { q: 'x' },
        index: 0,
      },
      {
        type: 'tool_call.status',
        toolCallId: 'call_s',
        toolName: 'search',
        from: 'new',
        to: 'running',
      },
      {
        type: 'tool_call.status',
        toolCallId: 'call_s',
        toolName: 'search',
        from: 'running',
        to: 'failed',
      },
      {
        type: 'tool_call.result',
        toolCallId: 'call_s',
        toolName: 'search',
        outcome: { status: 'failed', error: 'search timed out' },
      },
      { type: 'step.finished', step: 1, usage: USAGE },
      { type: 'run.status', from: 'running', to: 'done' },
      {
        type: 'run.finished',
        status: 'done',
        termination: { kind: 'stopped', code, detail: 'budget spent' },
        usage: USAGE,
      },
    ),
  ];
}

/** A model that does not stream: the committed message carries the whole answer. */
export function unstreamedRun(log = new Log()): RunEvent[] {
  return [
    ...started(log, 'hi'),
    ...log.add(
      {
        type: 'message.assistant',
        step: 1,
        message: {
          id: msg1,
          role: 'assistant',
          content: 'Hi there',
          reasoning: 'greet',
          toolCalls: [],
        },
      },
      { type: 'step.finished', step: 1, usage: USAGE },
      { type: 'run.status', from: 'running', to: 'done' },
      { type: 'run.finished', status: 'done', termination: { kind: 'natural_end' }, usage: USAGE },
    ),
  ];
}

/** The pending view of a waiting run, as the route would take it from the run's snapshot. */
export function pendingOf(events: readonly RunEvent[], runId = RUN): PendingRun {
  const calls: AwaitSnapshot['calls'] = [];
  for (const e of events) {
    if (e.type === 'tool_call.suspended')
      calls.push({
        toolCallId: e.toolCallId,
        toolName: e.toolName,
        reason: e.ticket.reason,
        message: e.ticket.message,
        ...(e.ticket.parameters !== undefined ? { parameters: e.ticket.parameters } : {}),
        ...(e.ticket.responseSchema !== undefined
          ? { responseSchema: e.ticket.responseSchema }
          : {}),
        resumeMode: e.ticket.resumeMode,
        since: e.at,
      });
  }
  return { runId, await: calls.length > 0 ? { kind: 'tool_calls', calls } : null };
}
