import { HttpAgent, verifyEvents } from '@ag-ui/client';
import { RunAgentInputSchema } from '@ag-ui/core/schemas';
import type { RunEvent } from '@baton/protocol';
import { from, lastValueFrom, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { decisionIdFor, type PendingRun } from '../shared.ts';
import {
  Log,
  approvalTurn,
  approvedTurn,
  clientOutputTurn,
  clientToolTurn,
  deniedTurn,
  pendingOf,
} from '@baton/testing/api-scenarios';
import { inputToCommands, runErrorFor, type AgUiCommand } from './input.ts';
import { createAgUiMapper } from './mapper.ts';
import { AG_UI_SSE_HEADERS, agUiFrame } from './sse.ts';

const input = (extra: Record<string, unknown> = {}) => ({
  threadId: 't1',
  runId: 'ag-1',
  messages: [{ id: 'u1', role: 'user', content: 'deploy prod' }],
  tools: [],
  context: [],
  state: {},
  forwardedProps: { agent: 'ops' },
  ...extra,
});
const approvalPending = pendingOf(approvalTurn());
const clientPending = pendingOf(clientToolTurn());
const twoPending: PendingRun = {
  runId: 'r1',
  await: {
    kind: 'tool_calls',
    calls: [...approvalPending.await!.calls, ...clientPending.await!.calls],
  },
};
const ids = { threadId: 't1', protocolRunId: 'ag-1' };
/** Typed wrappers of vitest's asymmetric matchers (they are typed `any`). */
const matcher = (m: unknown): string => m as string;
const anyText = (): string => matcher(expect.any(String));
const textMatching = (re: RegExp): string => matcher(expect.stringMatching(re));
const textContaining = (part: string): string => matcher(expect.stringContaining(part));

describe('inputToCommands', () => {
  it.each([
    {
      name: 'a user message on a thread with nothing pending starts a run',
      input: input(),
      pending: null,
      expected: {
        kind: 'start',
        threadId: 't1',
        agent: 'ops',
        input: [{ id: 'u1', role: 'user', content: 'deploy prod' }],
        protocolRunId: 'ag-1',
      },
    },
    {
      name: 'text parts of a multimodal user message are joined',
      input: input({
        messages: [
          {
            id: 'u9',
            role: 'user',
            content: [
              { type: 'text', text: 'a' },
              { type: 'text', text: 'b' },
            ],
          },
        ],
      }),
      pending: null,
      expected: {
        kind: 'start',
        threadId: 't1',
        agent: 'ops',
        input: [{ id: 'u9', role: 'user', content: 'a\nb' }],
        protocolRunId: 'ag-1',
      },
    },
    {
      name: 'resolved resume entry -> resume decision with its payload',
      input: input({
        resume: [{ interruptId: 'call_q', status: 'resolved', payload: { answer: 'yes' } }],
      }),
      pending: clientPending,
      expected: {
        kind: 'decide',
        threadId: 't1',
        runId: 'r1',
        protocolRunId: 'ag-1',
        decisions: [
          {
            decisionId: decisionIdFor('ag-ui', clientPending.await!.calls[0]!),
            toolCallId: 'call_q',
            action: 'resume',
            payload: { answer: 'yes' },
          },
        ],
      },
    },
    {
      name: 'resolved without payload (plain approval) and cancelled entries',
      input: input({
        resume: [
          { interruptId: 'call_1', status: 'resolved' },
          { interruptId: 'call_q', status: 'cancelled' },
        ],
      }),
      pending: twoPending,
      expected: {
        kind: 'decide',
        threadId: 't1',
        runId: 'r1',
        protocolRunId: 'ag-1',
        decisions: [
          {
            decisionId: decisionIdFor('ag-ui', twoPending.await!.calls[0]!),
            toolCallId: 'call_1',
            action: 'resume',
          },
          {
            decisionId: decisionIdFor('ag-ui', twoPending.await!.calls[1]!),
            toolCallId: 'call_q',
            action: 'cancel',
          },
        ],
      },
    },
    {
      name: 'input without resume while interrupts are pending is an error',
      input: input(),
      pending: twoPending,
      expected: {
        kind: 'error',
        code: 'interrupts_pending',
        message: textMatching(/2 pending interrupt\(s\) \(call_1, call_q\)/),
        ...ids,
      },
    },
    {
      name: 'a resume entry for an unknown interrupt is an error',
      input: input({ resume: [{ interruptId: 'nope', status: 'resolved' }] }),
      pending: approvalPending,
      expected: {
        kind: 'error',
        code: 'unknown_interrupt',
        message: textContaining('nope'),
        ...ids,
      },
    },
    {
      name: 'the same interrupt answered twice is an error',
      input: input({
        resume: [
          { interruptId: 'call_1', status: 'resolved' },
          { interruptId: 'call_1', status: 'cancelled' },
        ],
      }),
      pending: approvalPending,
      expected: { kind: 'error', code: 'bad_request', message: textContaining('twice'), ...ids },
    },
    {
      name: 'resume entries with nothing pending are an error',
      input: input({ resume: [{ interruptId: 'call_1', status: 'resolved' }] }),
      pending: null,
      expected: { kind: 'error', code: 'no_pending_interrupts', message: anyText(), ...ids },
    },
    {
      name: 'a last message that is not from the user is an error',
      input: input({ messages: [{ id: 'a', role: 'assistant', content: 'hi' }] }),
      pending: null,
      expected: { kind: 'error', code: 'no_user_message', message: anyText(), ...ids },
    },
    {
      name: 'no agent is an error',
      input: input({ forwardedProps: {} }),
      pending: null,
      expected: { kind: 'error', code: 'unknown_agent', message: anyText(), ...ids },
    },
    {
      name: 'media parts are refused',
      input: input({
        messages: [
          {
            id: 'u',
            role: 'user',
            content: [{ type: 'image', source: { type: 'url', value: 'https://x' } }],
          },
        ],
      }),
      pending: null,
      expected: {
        kind: 'error',
        code: 'bad_request',
        message: textContaining('image part'),
        ...ids,
      },
    },
    {
      name: 'a thread id Baton cannot use is an error',
      input: input({ threadId: 'has space' }),
      pending: null,
      expected: {
        kind: 'error',
        code: 'bad_request',
        message: textContaining('threadId'),
        threadId: 'has space',
        protocolRunId: 'ag-1',
      },
    },
    {
      name: 'a malformed input is an error',
      input: { threadId: 't1' },
      pending: null,
      expected: {
        kind: 'error',
        code: 'bad_request',
        message: textContaining('invalid RunAgentInput'),
      },
    },
  ])('$name', ({ input: i, pending, expected }) => {
    if ('runId' in i) expect(RunAgentInputSchema.safeParse(i).success).toBe(true);
    expect(inputToCommands(i, pending)).toEqual(expected);
  });

  it('the route may name the agent', () => {
    expect(
      inputToCommands(input({ forwardedProps: undefined }), null, { agent: 'x' }),
    ).toMatchObject({ kind: 'start', agent: 'x' });
  });

  it('an error command becomes a RUN_ERROR that the client accepts as the only event', async () => {
    const command = inputToCommands(input(), approvalPending);
    expect(command.kind).toBe('error');
    const event = runErrorFor(command as Extract<AgUiCommand, { kind: 'error' }>);
    expect(event).toEqual({ type: 'RUN_ERROR', code: 'interrupts_pending', message: anyText() });
    await expect(
      lastValueFrom(from([event] as never[]).pipe(verifyEvents(false), toArray())),
    ).resolves.toHaveLength(1);
  });

  it('the client verifier is live: it rejects content before its start', async () => {
    const bad = [
      { type: 'RUN_STARTED', threadId: 't', runId: 'r' },
      { type: 'TEXT_MESSAGE_CONTENT', messageId: 'm', delta: 'x' },
    ];
    await expect(
      lastValueFrom(from(bad as never[]).pipe(verifyEvents(false), toArray())),
    ).rejects.toThrow(/TEXT_MESSAGE_START/);
  });
});

/**
 * The real AG-UI client (HttpAgent) against Baton's frames: it builds RunAgentInput (mapped by
 * inputToCommands), parses the SSE, verifies the protocol and applies the events to its
 * messages, state and pending interrupts.
 */
describe('HttpAgent against Baton frames', () => {
  function server(
    turns: { events: RunEvent[]; history: RunEvent[] }[],
    pending: () => PendingRun | null,
  ) {
    const commands: AgUiCommand[] = [];
    const inputs: unknown[] = [];
    const fetchImpl = async (_url: unknown, init?: RequestInit): Promise<Response> => {
      const body: unknown = JSON.parse(init?.body as string);
      inputs.push(body);
      const command = inputToCommands(body, pending());
      commands.push(command);
      if (command.kind === 'error')
        return new Response(agUiFrame(runErrorFor(command)), { headers: AG_UI_SSE_HEADERS });
      const turn = turns[commands.filter((c) => c.kind !== 'error').length - 1]!;
      const mapper = createAgUiMapper({
        threadId: command.threadId,
        runId: command.protocolRunId,
        history: turn.history,
      });
      const frames = [...turn.events.flatMap((e) => mapper.map(e)), ...mapper.end()]
        .map(agUiFrame)
        .join('');
      return new Response(frames, { headers: AG_UI_SSE_HEADERS });
    };
    return { fetch: fetchImpl as typeof fetch, commands, inputs };
  }

  it.each([
    {
      name: 'approval resolved',
      resume: { status: 'resolved' },
      turn2: approvedTurn,
      result: '{"deployed":"prod"}',
      text: 'Done.',
    },
    {
      name: 'approval cancelled',
      resume: { status: 'cancelled' },
      turn2: deniedTurn,
      result: '{"error":"cancelled by decision"}',
      text: 'Not deploying.',
    },
  ] as const)(
    '$name: interrupt, then resume continues the same Baton run',
    async ({ resume, turn2, result, text }) => {
      const log = new Log();
      const turn1 = approvalTurn(log);
      const events2 = turn2(log);
      let waiting: PendingRun | null = null;
      const srv = server(
        [
          { events: turn1, history: [] },
          { events: events2, history: turn1 },
        ],
        () => waiting,
      );
      const agent = new HttpAgent({
        url: 'http://baton.test/v1/ag-ui',
        fetch: srv.fetch,
        threadId: 't1',
        initialMessages: [{ id: 'u1', role: 'user', content: 'deploy prod' }],
      });

      await agent.runAgent({ runId: 'ag-1', forwardedProps: { agent: 'ops' } });
      expect(srv.commands[0]).toMatchObject({ kind: 'start', agent: 'ops', protocolRunId: 'ag-1' });
      expect(agent.pendingInterrupts).toMatchObject([
        { id: 'call_1', reason: 'tool_call', toolCallId: 'call_1', message: 'Deploy to prod?' },
      ]);
      expect(agent.messages.map((m) => `${m.role}:${m.id}`)).toEqual([
        'user:u1',
        'reasoning:r1:step:1:reasoning',
        'assistant:r1:step:1',
      ]);

      // The client refuses to run on without answering; the server would too.
      await expect(agent.runAgent({ runId: 'ag-x' })).rejects.toThrow(/pending interrupt/);
      waiting = pendingOf(turn1);
      expect(
        inputToCommands({ ...(srv.inputs[0] as object), runId: 'ag-x' }, waiting),
      ).toMatchObject({ kind: 'error', code: 'interrupts_pending' });

      await agent.runAgent({ runId: 'ag-2', resume: [{ interruptId: 'call_1', ...resume }] });
      expect(srv.commands.at(-1)).toMatchObject({
        kind: 'decide',
        runId: 'r1',
        protocolRunId: 'ag-2',
        decisions: [
          { toolCallId: 'call_1', action: resume.status === 'resolved' ? 'resume' : 'cancel' },
        ],
      });
      expect(agent.pendingInterrupts).toEqual([]);
      const tool = agent.messages.find((m) => m.role === 'tool');
      expect(tool).toMatchObject({ toolCallId: 'call_1', content: result });
      expect(agent.messages.at(-1)).toMatchObject({
        role: 'assistant',
        id: 'r1:step:2',
        content: text,
      });
    },
  );

  it('client tool: the resume payload becomes the tool result', async () => {
    const log = new Log();
    const turn1 = clientToolTurn(log);
    const events2 = clientOutputTurn(log);
    let waiting: PendingRun | null = null;
    const srv = server(
      [
        { events: turn1, history: [] },
        { events: events2, history: turn1 },
      ],
      () => waiting,
    );
    const agent = new HttpAgent({
      url: 'http://baton.test/v1/ag-ui',
      fetch: srv.fetch,
      threadId: 't1',
      initialMessages: [{ id: 'u1', role: 'user', content: 'ask me' }],
    });
    await agent.runAgent({ runId: 'ag-1', forwardedProps: { agent: 'ops' } });
    expect(agent.pendingInterrupts).toMatchObject([
      { id: 'call_q', responseSchema: { required: ['answer'] } },
    ]);
    waiting = pendingOf(turn1);
    await agent.runAgent({
      runId: 'ag-2',
      resume: [{ interruptId: 'call_q', status: 'resolved', payload: { answer: 'yes' } }],
    });
    expect(srv.commands.at(-1)).toMatchObject({
      kind: 'decide',
      decisions: [{ action: 'resume', payload: { answer: 'yes' } }],
    });
    expect(agent.messages.find((m) => m.role === 'tool')).toMatchObject({
      toolCallId: 'call_q',
      content: '{"answer":"yes"}',
    });
  });
});
