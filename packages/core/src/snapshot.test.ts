import type { EventBody, RunEvent, RunSnapshot, SuspendTicket, Usage } from '@baton/protocol';
import { RunSnapshotSchema } from '@baton/protocol';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { applyEvent, emptySnapshot, foldSnapshot } from './snapshot.ts';
import { agentWith, echoTool, flush, runnerFor } from './testing/fixtures.ts';
import { defineTool, toolResult } from './tools.ts';

const ENVELOPE = { runId: 'run-1', threadId: 'thread-1', turnId: 'turn-1' };

/** A log from bodies: seq 1.., at 1000 + 10 per event. */
function log(...bodies: EventBody[]): RunEvent[] {
  return bodies.map((body, i) => ({ ...ENVELOPE, seq: i + 1, at: 1000 + 10 * i, ...body }));
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

const usage = (input: number, output: number): Usage => ({
  inputTokens: input,
  outputTokens: output,
  totalTokens: input + output,
});
const ticket: SuspendTicket = {
  reason: 'approval',
  message: 'Deploy?',
  parameters: { env: 'prod' },
  resumeMode: 'replay_tool_call',
};
const assistant = (
  step: number,
  content: string,
  toolCalls: { id: string; name: string }[] = [],
): EventBody => ({
  type: 'message.assistant',
  step,
  message: {
    id: `run-1:step:${step}`,
    role: 'assistant',
    content,
    toolCalls: toolCalls.map((c) => ({ ...c, arguments: {} })),
  },
});
const created = (step: number, id: string, index = 0, name = 'deploy'): EventBody => ({
  type: 'tool_call.created',
  step,
  toolCallId: id,
  toolName: name,
  arguments: { env: 'prod' },
  index,
});
const status = (id: string, from: string, to: string, name = 'deploy'): EventBody =>
  ({ type: 'tool_call.status', toolCallId: id, toolName: name, from, to }) as EventBody;

const START: EventBody[] = [
  { type: 'run.created', agent: 'ops', executionMode: 'parallel_batch_approval' },
  { type: 'run.status', from: 'created', to: 'running' },
  { type: 'run.started', agent: 'ops', executionMode: 'parallel_batch_approval' },
  { type: 'message.input', message: { id: 'm1', role: 'user', content: 'deploy' } },
];

/** One step that suspends call c1 for approval and parks the run (times: index * 10 + 1000). */
const SUSPENDED: EventBody[] = [
  ...START,
  { type: 'step.started', step: 1 },
  assistant(1, 'Deploying now.', [{ id: 'c1', name: 'deploy' }]),
  created(1, 'c1'),
  status('c1', 'new', 'suspended'),
  { type: 'tool_call.suspended', toolCallId: 'c1', toolName: 'deploy', ticket },
  {
    type: 'run.finished',
    status: 'waiting',
    termination: { kind: 'suspended' },
    usage: usage(10, 5),
  },
];

interface Case {
  readonly name: string;
  readonly events: EventBody[];
  readonly expected: Partial<RunSnapshot>;
  readonly check?: (s: RunSnapshot) => void;
}

const cases: Case[] = [
  {
    name: 'run.created: status created, identity, agent and mode',
    events: START.slice(0, 1),
    expected: {
      ...ENVELOPE,
      agent: 'ops',
      executionMode: 'parallel_batch_approval',
      status: 'created',
      phase: 'run_start',
      phaseSource: 'inferred',
      createdAt: 1000,
      startedAt: null,
      lastSeq: 1,
      toolCalls: [],
      await: null,
    },
  },
  {
    name: 'run.started: running with startedAt',
    events: START,
    expected: {
      status: 'running',
      startedAt: 1020,
      updatedAt: 1030,
      lastSeq: 4,
      step: 0,
      phase: 'run_start',
    },
  },
  {
    name: 'natural end without tools',
    events: [
      ...START,
      { type: 'step.started', step: 1 },
      { type: 'text.delta', step: 1, messageId: 'run-1:step:1', delta: 'Hello ' },
      { type: 'text.delta', step: 1, messageId: 'run-1:step:1', delta: 'world' },
      assistant(1, 'Hello world'),
      { type: 'step.finished', step: 1, usage: usage(10, 3) },
      { type: 'run.status', from: 'running', to: 'done' },
      {
        type: 'run.finished',
        status: 'done',
        termination: { kind: 'natural_end' },
        usage: usage(10, 3),
      },
    ],
    expected: {
      status: 'done',
      phase: 'run_end',
      step: 1,
      termination: { kind: 'natural_end' },
      lastAssistantMessage: 'Hello world',
      streaming: null,
      usage: usage(10, 3),
      finishedAt: 1100,
      updatedAt: 1100,
    },
  },
  {
    name: 'text and reasoning deltas build the partial message; the committed one stays',
    events: [
      ...START,
      { type: 'step.started', step: 1 },
      assistant(1, 'first answer'),
      { type: 'step.finished', step: 1, usage: usage(1, 1) },
      { type: 'step.started', step: 2 },
      { type: 'reasoning.delta', step: 2, messageId: 'run-1:step:2', delta: 'think' },
      { type: 'text.delta', step: 2, messageId: 'run-1:step:2', delta: 'Hel' },
      { type: 'text.delta', step: 2, messageId: 'run-1:step:2', delta: 'lo' },
    ],
    expected: {
      step: 2,
      phase: 'before_inference',
      lastAssistantMessage: 'first answer',
      streaming: { step: 2, messageId: 'run-1:step:2', text: 'Hello', reasoning: 'think' },
    },
  },
  {
    name: 'inference.reset discards the partial text; a retry streams afresh',
    events: [
      ...START,
      { type: 'step.started', step: 1 },
      { type: 'text.delta', step: 1, messageId: 'run-1:step:1', delta: 'abandoned' },
      { type: 'inference.reset', step: 1, messageId: 'run-1:step:1' },
      { type: 'text.delta', step: 1, messageId: 'run-1:step:1', delta: 'retry' },
    ],
    expected: {
      streaming: { step: 1, messageId: 'run-1:step:1', text: 'retry', reasoning: '' },
      lastAssistantMessage: null,
    },
  },
  {
    name: 'inference.reset alone leaves no partial',
    events: [
      ...START,
      { type: 'step.started', step: 1 },
      { type: 'text.delta', step: 1, messageId: 'run-1:step:1', delta: 'abandoned' },
      { type: 'inference.reset', step: 1, messageId: 'run-1:step:1' },
    ],
    expected: { streaming: null, lastAssistantMessage: null },
  },
  {
    name: 'message.assistant replaces the partial text',
    events: [
      ...START,
      { type: 'step.started', step: 1 },
      { type: 'text.delta', step: 1, messageId: 'run-1:step:1', delta: 'Hel' },
      assistant(1, 'Hello'),
    ],
    expected: { streaming: null, lastAssistantMessage: 'Hello', phase: 'after_inference' },
  },
  {
    name: 'a tool call runs to success with timings from the events',
    events: [
      ...START,
      { type: 'step.started', step: 1 },
      assistant(1, '', [{ id: 'c1', name: 'echo' }]),
      created(1, 'c1', 0, 'echo'),
      status('c1', 'new', 'running', 'echo'),
      status('c1', 'running', 'succeeded', 'echo'),
      {
        type: 'tool_call.result',
        toolCallId: 'c1',
        toolName: 'echo',
        outcome: { status: 'succeeded', output: { ok: true } },
        durationMs: 10,
      },
    ],
    expected: {
      phase: 'after_tool_execute',
      lastAssistantMessage: null,
      toolCalls: [
        {
          toolCallId: 'c1',
          toolName: 'echo',
          step: 1,
          index: 0,
          arguments: { env: 'prod' },
          status: 'succeeded',
          attempt: 0,
          scheduledAt: 1060,
          startedAt: 1070,
          completedAt: 1080,
          durationMs: 10,
          outcome: { status: 'succeeded', output: { ok: true } },
        },
      ],
    },
  },
  {
    name: 'running call: phase before_tool_execute, no completion yet',
    events: [
      ...START,
      { type: 'step.started', step: 1 },
      created(1, 'c1'),
      status('c1', 'new', 'running'),
    ],
    expected: { phase: 'before_tool_execute' },
    check: (s) => {
      expect(s.toolCalls[0]).toMatchObject({ status: 'running', startedAt: 1060 });
      expect(s.toolCalls[0]?.completedAt).toBeUndefined();
    },
  },
  {
    name: 'suspension: await lists the call with its ticket; the run waits',
    events: SUSPENDED,
    expected: {
      status: 'waiting',
      termination: { kind: 'suspended' },
      phase: 'after_tool_execute',
      usage: usage(10, 5),
      finishedAt: null,
      lastAssistantMessage: 'Deploying now.',
      await: {
        kind: 'tool_calls',
        calls: [
          {
            toolCallId: 'c1',
            toolName: 'deploy',
            reason: 'approval',
            message: 'Deploy?',
            parameters: { env: 'prod' },
            resumeMode: 'replay_tool_call',
            since: 1080,
          },
        ],
      },
    },
    check: (s) => expect(s.toolCalls[0]).toMatchObject({ status: 'suspended', attempt: 0 }),
  },
  {
    name: 'resume: await cleared, attempt counted, suspension no longer the termination',
    events: [
      ...SUSPENDED,
      { type: 'run.status', from: 'waiting', to: 'running' },
      {
        type: 'decision.applied',
        decision: { decisionId: 'd1', toolCallId: 'c1', action: 'resume' },
      },
      status('c1', 'suspended', 'resuming'),
      status('c1', 'resuming', 'running'),
    ],
    expected: {
      status: 'running',
      termination: null,
      await: null,
      phase: 'before_tool_execute',
      decisions: [{ decisionId: 'd1', toolCallId: 'c1', action: 'resume', at: 1110 }],
    },
    check: (s) =>
      expect(s.toolCalls[0]).toMatchObject({ status: 'running', attempt: 1, startedAt: 1130 }),
  },
  {
    name: 'a pending result suspends a running call again; each replay counts',
    events: [
      ...START,
      { type: 'step.started', step: 1 },
      created(1, 'c1'),
      status('c1', 'new', 'running'),
      status('c1', 'running', 'suspended'),
      {
        type: 'tool_call.suspended',
        toolCallId: 'c1',
        toolName: 'deploy',
        ticket: { ...ticket, reason: 'input', message: 'more?' },
      },
      status('c1', 'suspended', 'resuming'),
      status('c1', 'resuming', 'running'),
      status('c1', 'running', 'suspended'),
      {
        type: 'tool_call.suspended',
        toolCallId: 'c1',
        toolName: 'deploy',
        ticket: { ...ticket, reason: 'input', message: 'still more?' },
      },
      status('c1', 'suspended', 'resuming'),
    ],
    expected: { await: null, phase: 'tool_gate' },
    check: (s) => expect(s.toolCalls[0]).toMatchObject({ status: 'resuming', attempt: 2 }),
  },
  {
    name: 'two suspended calls: cancelling one leaves the other awaited',
    events: [
      ...START,
      { type: 'step.started', step: 1 },
      created(1, 'c1', 0),
      created(1, 'c2', 1),
      status('c1', 'new', 'suspended'),
      { type: 'tool_call.suspended', toolCallId: 'c1', toolName: 'deploy', ticket },
      status('c2', 'new', 'suspended'),
      {
        type: 'tool_call.suspended',
        toolCallId: 'c2',
        toolName: 'deploy',
        ticket: { ...ticket, message: 'Second?' },
      },
      {
        type: 'decision.applied',
        decision: { decisionId: 'd1', toolCallId: 'c1', action: 'cancel' },
      },
      status('c1', 'suspended', 'cancelled'),
      {
        type: 'tool_call.result',
        toolCallId: 'c1',
        toolName: 'deploy',
        outcome: { status: 'cancelled', error: 'cancelled by decision' },
      },
    ],
    expected: {},
    check: (s) => {
      expect(s.await?.calls.map((c) => [c.toolCallId, c.message])).toEqual([['c2', 'Second?']]);
      expect(s.toolCalls.map((c) => [c.toolCallId, c.status, c.errorSummary])).toEqual([
        ['c1', 'cancelled', 'cancelled by decision'],
        ['c2', 'suspended', undefined],
      ]);
      expect(s.toolCalls[0]?.completedAt).toBe(1120);
    },
  },
  {
    name: 'failed call: errorSummary is the first line, shortened',
    events: [
      ...START,
      { type: 'step.started', step: 1 },
      created(1, 'c1'),
      status('c1', 'new', 'running'),
      status('c1', 'running', 'failed'),
      {
        type: 'tool_call.result',
        toolCallId: 'c1',
        toolName: 'deploy',
        outcome: { status: 'failed', error: `${'x'.repeat(300)}\nstack` },
      },
    ],
    expected: {},
    check: (s) => {
      const call = s.toolCalls[0]!;
      expect(call.status).toBe('failed');
      expect(call.errorSummary).toHaveLength(200);
      expect(call.errorSummary?.endsWith('…')).toBe(true);
      expect(call.durationMs).toBeUndefined();
    },
  },
  {
    name: 'tool calls of every step are kept, in creation order',
    events: [
      ...START,
      { type: 'step.started', step: 1 },
      created(1, 'a', 0, 'echo'),
      status('a', 'new', 'running', 'echo'),
      status('a', 'running', 'succeeded', 'echo'),
      { type: 'step.finished', step: 1, usage: usage(5, 5) },
      { type: 'step.started', step: 2 },
      created(2, 'b', 0, 'echo'),
      created(2, 'c', 1, 'echo'),
    ],
    expected: { step: 2, phase: 'tool_gate', usage: usage(5, 5) },
    check: (s) =>
      expect(s.toolCalls.map((c) => [c.toolCallId, c.step, c.index, c.status])).toEqual([
        ['a', 1, 0, 'succeeded'],
        ['b', 2, 0, 'new'],
        ['c', 2, 1, 'new'],
      ]),
  },
  {
    name: 'a status event for an unseen call creates a stub',
    events: [...START, { type: 'step.started', step: 3 }, status('zz', 'new', 'running', 'echo')],
    expected: {},
    check: (s) =>
      expect(s.toolCalls).toEqual([
        {
          toolCallId: 'zz',
          toolName: 'echo',
          step: 3,
          index: 0,
          arguments: {},
          status: 'running',
          attempt: 0,
          scheduledAt: 1050,
          startedAt: 1050,
        },
      ]),
  },
  {
    name: 'explicit phase events win over inference once seen',
    events: [
      ...START,
      { type: 'step.started', step: 1 },
      { type: 'phase', step: 1, phase: 'before_inference' },
      assistant(1, 'hi'),
      { type: 'step.finished', step: 1, usage: usage(1, 1) },
    ],
    expected: { phase: 'before_inference', phaseSource: 'event', lastAssistantMessage: 'hi' },
  },
  {
    name: 'decisions are listed once per decisionId',
    events: [
      ...START,
      {
        type: 'decision.applied',
        decision: { decisionId: 'd1', toolCallId: 'c1', action: 'resume' },
      },
      {
        type: 'decision.applied',
        decision: { decisionId: 'd1', toolCallId: 'c1', action: 'resume' },
      },
      {
        type: 'decision.applied',
        decision: { decisionId: 'd2', toolCallId: 'c2', action: 'cancel' },
      },
    ],
    expected: {
      decisions: [
        { decisionId: 'd1', toolCallId: 'c1', action: 'resume', at: 1040 },
        { decisionId: 'd2', toolCallId: 'c2', action: 'cancel', at: 1060 },
      ],
    },
  },
  {
    name: 'run.finished done clears await and partial text',
    events: [
      ...SUSPENDED,
      { type: 'run.status', from: 'waiting', to: 'running' },
      { type: 'text.delta', step: 1, messageId: 'x', delta: 'partial' },
      { type: 'run.status', from: 'running', to: 'done' },
      {
        type: 'run.finished',
        status: 'done',
        termination: { kind: 'cancelled' },
        usage: usage(10, 5),
      },
    ],
    expected: {
      status: 'done',
      termination: { kind: 'cancelled' },
      await: null,
      streaming: null,
      phase: 'run_end',
      finishedAt: 1130,
    },
  },
];

describe('foldSnapshot over hand-written logs', () => {
  it.each(cases)('$name', ({ events, expected, check }) => {
    const snapshot = foldSnapshot(deepFreeze(log(...events)));
    expect(snapshot).toMatchObject(expected);
    check?.(snapshot);
    expect(RunSnapshotSchema.parse(snapshot)).toEqual(snapshot);
  });
});

describe('folding is idempotent and pure', () => {
  const events = log(
    ...SUSPENDED,
    { type: 'run.status', from: 'waiting', to: 'running' },
    {
      type: 'decision.applied',
      decision: { decisionId: 'd1', toolCallId: 'c1', action: 'resume' },
    },
    status('c1', 'suspended', 'resuming'),
    status('c1', 'resuming', 'running'),
    status('c1', 'running', 'succeeded'),
    {
      type: 'tool_call.result',
      toolCallId: 'c1',
      toolName: 'deploy',
      outcome: { status: 'succeeded', output: 1 },
      durationMs: 3,
    },
  );

  it('folding the log twice gives the same snapshot', () => {
    const once = foldSnapshot(events);
    expect(foldSnapshot(events)).toEqual(once);
    expect(foldSnapshot(events, once)).toBe(once); // everything at or below lastSeq is ignored
    expect(foldSnapshot([...events, ...events])).toEqual(once);
  });

  it('duplicated and shuffled events give the same snapshot', () => {
    const once = foldSnapshot(events);
    const noisy = events.flatMap((e, i) => (i % 3 === 0 ? [e, { ...e }, e] : [e]));
    expect(foldSnapshot(noisy)).toEqual(once);
    expect(foldSnapshot([...noisy].reverse())).toEqual(once);
  });

  it('applyEvent folds incrementally to the same result and ignores stale or foreign events', () => {
    let s = emptySnapshot(events[0]!);
    for (const e of events) {
      const before = s;
      s = applyEvent(s, e);
      expect(applyEvent(s, e)).toBe(s);
      expect(applyEvent(s, before.lastSeq > 0 ? events[before.lastSeq - 1]! : e)).toBe(s);
    }
    expect(s).toEqual(foldSnapshot(events));
    const foreign = { ...events[0]!, runId: 'other', seq: 999 };
    expect(applyEvent(s, foreign)).toBe(s);
  });

  it('never mutates its inputs (frozen events and snapshots)', () => {
    const frozen = deepFreeze(structuredClone(events));
    let s = deepFreeze(emptySnapshot(frozen[0]!));
    for (const e of frozen) s = deepFreeze(applyEvent(s, e));
    expect(s).toEqual(foldSnapshot(events));
    expect(frozen).toEqual(events);
  });

  it('an empty log needs an initial snapshot', () => {
    expect(() => foldSnapshot([])).toThrow(RangeError);
    const initial = emptySnapshot({ ...ENVELOPE, at: 5 });
    expect(foldSnapshot([], initial)).toBe(initial);
  });
});

describe('foldSnapshot agrees with the runner', () => {
  it('at the waiting point and at the end of an approval-gated run', async () => {
    const deploy = defineTool({
      name: 'deploy',
      description: 'deploys',
      inputSchema: z.object({ env: z.string() }),
      approval: { message: 'Deploy?' },
      execute: (args) => Promise.resolve(toolResult.success({ deployed: args.env })),
    });
    const agent = agentWith(
      [
        {
          text: 'Deploying.',
          toolCalls: [
            { name: 'deploy', arguments: { env: 'prod' } },
            { name: 'echo', arguments: { value: 'x' } },
          ],
        },
        { text: 'All done.' },
      ],
      [deploy, echoTool()],
    );
    const { runner } = runnerFor(agent);
    let live: RunSnapshot | null = null;
    runner.onEvent((e) => {
      live = applyEvent(live ?? emptySnapshot(e), e);
    });
    const { runId, finished } = await runner.start({
      agent: 'test-agent',
      input: [{ role: 'user', content: 'deploy' }],
    });
    await flush();

    const waiting = (await runner.checkpoint(runId))!;
    expect(waiting.status).toBe('waiting');
    let snap = foldSnapshot(runner.events(runId));
    expect(snap).toMatchObject({
      runId,
      threadId: waiting.identity.threadId,
      turnId: waiting.identity.turnId,
      agent: 'test-agent',
      status: waiting.status,
      phase: waiting.phase,
      step: waiting.step,
      executionMode: waiting.executionMode,
      termination: waiting.termination,
      usage: waiting.usage,
      createdAt: waiting.createdAt,
      startedAt: waiting.startedAt,
      finishedAt: null,
      lastAssistantMessage: 'Deploying.',
    });
    const suspended = Object.values(waiting.calls).filter((c) => c.status === 'suspended');
    expect(suspended).toHaveLength(1);
    const deployCall = suspended[0]!;
    expect(snap.await).toEqual({
      kind: 'tool_calls',
      calls: [
        {
          toolCallId: deployCall.id,
          toolName: 'deploy',
          ...deployCall.ticket,
          since: expect.any(Number) as number,
        },
      ],
    });
    for (const call of Object.values(waiting.calls)) {
      expect(snap.toolCalls.find((c) => c.toolCallId === call.id)).toMatchObject({
        toolName: call.name,
        status: call.status,
        attempt: call.attempt,
        step: call.step,
        index: call.index,
        arguments: call.arguments,
      });
    }
    expect(live).toEqual(snap);

    await runner.submitDecisions(runId, [
      { decisionId: 'd1', toolCallId: deployCall.id, action: 'resume' },
    ]);
    const done = await finished;
    snap = foldSnapshot(runner.events(runId));
    expect(snap).toMatchObject({
      status: 'done',
      phase: 'run_end',
      step: done.step,
      termination: done.termination,
      usage: done.usage,
      finishedAt: done.finishedAt,
      await: null,
      streaming: null,
      lastAssistantMessage: 'All done.',
      decisions: [{ decisionId: 'd1', toolCallId: deployCall.id, action: 'resume' }],
      lastSeq: runner.events(runId).length,
    });
    expect(snap.termination).toEqual({ kind: 'natural_end' });
    expect(snap.toolCalls.map((c) => [c.toolName, c.status, c.attempt, c.outcome?.status])).toEqual(
      [
        ['deploy', 'succeeded', 1, 'succeeded'],
        ['echo', 'succeeded', 0, 'succeeded'],
      ],
    );
    expect(snap.toolCalls[0]?.outcome?.output).toEqual({ deployed: 'prod' });
    expect(RunSnapshotSchema.parse(snap)).toEqual(snap);
    expect(live).toEqual(snap);
    // Re-delivering the whole log to the live fold changes nothing.
    expect(foldSnapshot(runner.events(runId), live!)).toBe(live);
  });
});
