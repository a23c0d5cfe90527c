import { EventSchema } from '@ag-ui/core/schemas';
import { verifyEvents } from '@ag-ui/client';
import type { RunEvent } from '@baton/protocol';
import { from, lastValueFrom, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import {
  Log,
  approvalTurn,
  approvedTurn,
  cancelledRun,
  clientToolTurn,
  deniedTurn,
  errorRun,
  failedToolRun,
  resetRun,
  started,
  unstreamedRun,
} from '@baton/testing/api-scenarios';
import { createAgUiMapper, type AgUiMapperOptions } from './mapper.ts';
import { agUiFrame } from './sse.ts';
import type { AgUiEvent } from './types.ts';

/** One line per event: its type and the field that identifies it. */
function summary(e: AgUiEvent): string {
  switch (e.type) {
    case 'TEXT_MESSAGE_CONTENT':
    case 'REASONING_MESSAGE_CONTENT':
      return `${e.type} ${e.messageId} ${JSON.stringify(e.delta)}`;
    case 'TEXT_MESSAGE_START':
    case 'TEXT_MESSAGE_END':
    case 'REASONING_START':
    case 'REASONING_MESSAGE_START':
    case 'REASONING_MESSAGE_END':
    case 'REASONING_END':
      return `${e.type} ${e.messageId}`;
    case 'TOOL_CALL_START':
      return `${e.type} ${e.toolCallId} ${e.toolCallName} parent=${e.parentMessageId}`;
    case 'TOOL_CALL_ARGS':
      return `${e.type} ${e.toolCallId} ${e.delta}`;
    case 'TOOL_CALL_END':
      return `${e.type} ${e.toolCallId}`;
    case 'TOOL_CALL_RESULT':
      return `${e.type} ${e.toolCallId} ${typeof e.content === 'string' ? e.content : JSON.stringify(e.content)}`;
    case 'STEP_STARTED':
    case 'STEP_FINISHED':
      return `${e.type} ${e.stepName}`;
    case 'RUN_STARTED':
      return `${e.type} ${e.threadId}/${e.runId}`;
    case 'RUN_FINISHED':
      return `${e.type} ${e.runId} ${e.outcome?.type ?? 'success'}`;
    case 'RUN_ERROR':
      return `${e.type} ${e.code} ${e.message}`;
    case 'MESSAGES_SNAPSHOT':
      return `${e.type} ${e.messages.map((m) => `${m.role}:${m.id}`).join(',')}`;
    case 'STATE_SNAPSHOT':
      return `${e.type} ${JSON.stringify(e.snapshot)}`;
    case 'STATE_DELTA':
      return `${e.type} ${JSON.stringify(e.delta)}`;
    default:
      return e.type;
  }
}

async function verified(events: AgUiEvent[]): Promise<void> {
  for (const e of events) {
    const parsed = EventSchema.safeParse(e);
    expect(parsed.success, `${summary(e)}: ${parsed.success ? '' : parsed.error.message}`).toBe(
      true,
    );
    expect(agUiFrame(e)).toMatch(/^data: [^\r\n]*\n\n$/);
  }
  // The client's own protocol verifier (ordering, open/close pairing, one run per stream).
  const seen = await lastValueFrom(from(events as never[]).pipe(verifyEvents(false), toArray()));
  expect(seen).toHaveLength(events.length);
}

const M1 = 'r1:step:1';
const M2 = 'r1:step:2';
const START = 'RUN_STARTED t1/ag-1';

interface Row {
  readonly name: string;
  readonly events: readonly RunEvent[];
  readonly opts?: Partial<AgUiMapperOptions>;
  readonly end?: boolean;
  readonly expected: string[];
}

function rows(): Row[] {
  const approval = new Log();
  const turn1 = approvalTurn(approval);
  const approved = approvedTurn(approval);
  const denial = new Log();
  const denialHistory = approvalTurn(denial);
  const denied = deniedTurn(denial);
  const partial = new Log();
  const partialEvents = [
    ...started(partial),
    ...partial.add({ type: 'text.delta', step: 1, messageId: M1, delta: 'Hi' }),
  ];
  const finalStep = (text: string) => [
    'STEP_STARTED step-2',
    `TEXT_MESSAGE_START ${M2}`,
    `TEXT_MESSAGE_CONTENT ${M2} ${JSON.stringify(text)}`,
    `TEXT_MESSAGE_END ${M2}`,
    'STEP_FINISHED step-2',
    'RUN_FINISHED ag-1 success',
  ];
  return [
    {
      name: 'approval suspension -> snapshots, then RUN_FINISHED interrupt',
      events: turn1,
      expected: [
        START,
        'STEP_STARTED step-1',
        `REASONING_START ${M1}:reasoning`,
        `REASONING_MESSAGE_START ${M1}:reasoning`,
        `REASONING_MESSAGE_CONTENT ${M1}:reasoning "needs approval"`,
        `TEXT_MESSAGE_START ${M1}`,
        `TEXT_MESSAGE_CONTENT ${M1} "Deploying"`,
        `TEXT_MESSAGE_CONTENT ${M1} " now"`,
        `REASONING_MESSAGE_END ${M1}:reasoning`,
        `REASONING_END ${M1}:reasoning`,
        `TEXT_MESSAGE_END ${M1}`,
        `TOOL_CALL_START call_1 deploy parent=${M1}`,
        'TOOL_CALL_ARGS call_1 {"env":"prod"}',
        'TOOL_CALL_END call_1',
        'STEP_FINISHED step-1',
        'STATE_SNAPSHOT {}',
        `MESSAGES_SNAPSHOT user:u1,reasoning:${M1}:reasoning,assistant:${M1}`,
        'RUN_FINISHED ag-1 interrupt',
      ],
    },
    {
      name: 'resumed (tool-bound) run emits only TOOL_CALL_RESULT for the original call',
      events: approved,
      opts: { history: turn1 },
      expected: [START, 'TOOL_CALL_RESULT call_1 {"deployed":"prod"}', ...finalStep('Done.')],
    },
    {
      name: 'denied resume -> TOOL_CALL_RESULT carrying the cancellation',
      events: denied,
      opts: { history: denialHistory },
      expected: [
        START,
        'TOOL_CALL_RESULT call_1 {"error":"cancelled by decision"}',
        ...finalStep('Not deploying.'),
      ],
    },
    {
      name: 'client tool suspension -> interrupt (no text)',
      events: clientToolTurn(),
      expected: [
        START,
        'STEP_STARTED step-1',
        `TOOL_CALL_START call_q ask parent=${M1}`,
        'TOOL_CALL_ARGS call_q {"question":"yes or no?"}',
        'TOOL_CALL_END call_q',
        'STEP_FINISHED step-1',
        'STATE_SNAPSHOT {}',
        `MESSAGES_SNAPSHOT user:u1,assistant:${M1}`,
        'RUN_FINISHED ag-1 interrupt',
      ],
    },
    {
      name: 'run error -> RUN_ERROR after closing what is open',
      events: errorRun(),
      expected: [
        START,
        'STEP_STARTED step-1',
        `TEXT_MESSAGE_START ${M1}`,
        `TEXT_MESSAGE_CONTENT ${M1} "Let me"`,
        `TEXT_MESSAGE_END ${M1}`,
        'STEP_FINISHED step-1',
        'RUN_ERROR run_error model exploded',
      ],
    },
    {
      name: 'cancelled run -> RUN_FINISHED cancelled',
      events: cancelledRun(),
      expected: [
        START,
        'STEP_STARTED step-1',
        `TEXT_MESSAGE_START ${M1}`,
        `TEXT_MESSAGE_CONTENT ${M1} "Hel"`,
        `TEXT_MESSAGE_END ${M1}`,
        'STEP_FINISHED step-1',
        'RUN_FINISHED ag-1 cancelled',
      ],
    },
    {
      name: 'inference.reset -> close and resynchronise with MESSAGES_SNAPSHOT',
      events: resetRun(),
      expected: [
        START,
        'STEP_STARTED step-1',
        `TEXT_MESSAGE_START ${M1}`,
        `TEXT_MESSAGE_CONTENT ${M1} "Hel"`,
        `TEXT_MESSAGE_END ${M1}`,
        'MESSAGES_SNAPSHOT user:u1',
        `TEXT_MESSAGE_START ${M1}`,
        `TEXT_MESSAGE_CONTENT ${M1} "Hello!"`,
        `TEXT_MESSAGE_END ${M1}`,
        'STEP_FINISHED step-1',
        'RUN_FINISHED ag-1 success',
      ],
    },
    {
      name: 'failed tool and a stop condition -> error result, success outcome',
      events: failedToolRun(),
      expected: [
        START,
        'STEP_STARTED step-1',
        `TOOL_CALL_START call_s search parent=${M1}`,
        'TOOL_CALL_ARGS call_s {"q":"x"}',
        'TOOL_CALL_END call_s',
        'TOOL_CALL_RESULT call_s {"error":"search timed out"}',
        'STEP_FINISHED step-1',
        'RUN_FINISHED ag-1 success',
      ],
    },
    {
      name: 'unstreamed assistant message -> whole reasoning and text messages',
      events: unstreamedRun(),
      expected: [
        START,
        'STEP_STARTED step-1',
        `REASONING_START ${M1}:reasoning`,
        `REASONING_MESSAGE_START ${M1}:reasoning`,
        `REASONING_MESSAGE_CONTENT ${M1}:reasoning "greet"`,
        `REASONING_MESSAGE_END ${M1}:reasoning`,
        `REASONING_END ${M1}:reasoning`,
        `TEXT_MESSAGE_START ${M1}`,
        `TEXT_MESSAGE_CONTENT ${M1} "Hi there"`,
        `TEXT_MESSAGE_END ${M1}`,
        'STEP_FINISHED step-1',
        'RUN_FINISHED ag-1 success',
      ],
    },
    {
      name: 'stream ends without run.finished -> end() closes and reports RUN_ERROR incomplete',
      events: partialEvents,
      end: true,
      expected: [
        START,
        'STEP_STARTED step-1',
        `TEXT_MESSAGE_START ${M1}`,
        `TEXT_MESSAGE_CONTENT ${M1} "Hi"`,
        `TEXT_MESSAGE_END ${M1}`,
        'STEP_FINISHED step-1',
        'RUN_ERROR incomplete the event stream ended before the run finished or suspended',
      ],
    },
  ];
}

describe('createAgUiMapper', () => {
  it.each(rows().map((r) => [r.name, r] as const))('%s', async (_name, row) => {
    const mapper = createAgUiMapper({ threadId: 't1', runId: 'ag-1', ...row.opts });
    const events = [...row.events.flatMap((e) => mapper.map(e)), ...(row.end ? mapper.end() : [])];
    expect(events.map(summary)).toEqual(row.expected);
    await verified(events);
    expect(mapper.done).toBe(true);
    expect(mapper.end()).toEqual([]);
  });

  it('an interrupting RUN_FINISHED carries one interrupt per suspended call', () => {
    const mapper = createAgUiMapper({ threadId: 't1', runId: 'ag-1' });
    const events = clientToolTurn().flatMap((e) => mapper.map(e));
    expect(events.at(-1)).toMatchObject({
      type: 'RUN_FINISHED',
      threadId: 't1',
      runId: 'ag-1',
      outcome: {
        type: 'interrupt',
        interrupts: [
          {
            id: 'call_q',
            reason: 'tool_call',
            toolCallId: 'call_q',
            message: 'Answer in the browser',
            responseSchema: {
              type: 'object',
              properties: { answer: { type: 'string' } },
              required: ['answer'],
            },
            metadata: {
              baton: {
                suspendReason: 'client_tool',
                toolName: 'ask',
                resumeMode: 'use_decision_as_tool_result',
              },
            },
          },
        ],
      },
      usage: [{ inputTokens: 10, outputTokens: 5, totalTokens: 15 }],
    });
  });

  it('MESSAGES_SNAPSHOT holds the thread history and the run, in AG-UI message format', () => {
    const mapper = createAgUiMapper({
      threadId: 't1',
      runId: 'ag-1',
      threadMessages: [
        { id: 'old-u', role: 'user', content: 'earlier' },
        {
          id: 'old-a',
          role: 'assistant',
          content: '',
          toolCalls: [{ id: 'c0', name: 'echo', arguments: { v: 1 } }],
        },
        {
          id: 'old-t',
          role: 'tool',
          toolCallId: 'c0',
          toolName: 'echo',
          content: { error: 'boom' },
          isError: true,
        },
      ],
    });
    const events = approvalTurn().flatMap((e) => mapper.map(e));
    const snapshot = events.find((e) => e.type === 'MESSAGES_SNAPSHOT');
    expect(snapshot).toMatchObject({
      messages: [
        { id: 'old-u', role: 'user', content: 'earlier' },
        {
          id: 'old-a',
          role: 'assistant',
          toolCalls: [
            { id: 'c0', type: 'function', function: { name: 'echo', arguments: '{"v":1}' } },
          ],
        },
        { id: 'old-t', role: 'tool', toolCallId: 'c0', content: '{"error":"boom"}', error: 'boom' },
        { id: 'u1', role: 'user', content: 'deploy prod' },
        { id: `${M1}:reasoning`, role: 'reasoning', content: 'needs approval' },
        {
          id: M1,
          role: 'assistant',
          content: 'Deploying now',
          toolCalls: [
            {
              id: 'call_1',
              type: 'function',
              function: { name: 'deploy', arguments: '{"env":"prod"}' },
            },
          ],
        },
      ],
    });
  });

  it('usage of a resumed run counts only what it added', () => {
    const log = new Log();
    const turn1 = approvalTurn(log);
    const mapper = createAgUiMapper({ threadId: 't1', runId: 'ag-2', history: turn1 });
    const events = approvedTurn(log).flatMap((e) => mapper.map(e));
    expect(events.at(-1)).toMatchObject({
      type: 'RUN_FINISHED',
      usage: [{ inputTokens: 15, outputTokens: 4, totalTokens: 19 }],
    });
    expect(mapper.messages().map((m) => m.id)).toEqual([
      'u1',
      `${M1}:reasoning`,
      M1,
      'r1:tool:call_1',
      M2,
    ]);
  });

  it('state: set/delete/reduce become JSON Patch; the snapshot precedes an interrupt', async () => {
    const log = new Log();
    const events = [
      ...started(log),
      ...log.add(
        {
          type: 'state.delta',
          scope: 'run',
          patches: [
            { op: 'set', key: 'plan/a', value: ['x'] },
            { op: 'delete', key: 'absent' },
          ],
        },
        {
          type: 'state.delta',
          scope: 'thread',
          patches: [
            { op: 'reduce', key: 'count', value: 2 },
            { op: 'reduce', key: 'count', value: 3 },
          ],
        },
        {
          type: 'state.delta',
          scope: 'thread',
          patches: [
            { op: 'reduce', key: 'unknown', value: 1 },
            { op: 'delete', key: 'seed' },
          ],
        },
        {
          type: 'message.assistant',
          step: 1,
          message: {
            id: M1,
            role: 'assistant',
            content: '',
            toolCalls: [{ id: 'call_1', name: 'deploy', arguments: {} }],
          },
        },
        {
          type: 'tool_call.created',
          step: 1,
          toolCallId: 'call_1',
          toolName: 'deploy',
          arguments: {},
          index: 0,
        },
        {
          type: 'tool_call.suspended',
          toolCallId: 'call_1',
          toolName: 'deploy',
          ticket: { reason: 'approval', message: 'ok?', resumeMode: 'replay_tool_call' },
        },
        {
          type: 'run.finished',
          status: 'waiting',
          termination: { kind: 'suspended' },
          usage: { inputTokens: 1, outputTokens: 1, totalTokens: 2 },
        },
      ),
    ];
    const mapper = createAgUiMapper({
      threadId: 't1',
      runId: 'ag-1',
      state: { seed: true, count: 1 },
      stateKeys: [{ key: 'count', reducer: 'sum' }],
    });
    const out = events.flatMap((e) => mapper.map(e));
    expect(out.filter((e) => e.type.startsWith('STATE')).map(summary)).toEqual([
      'STATE_DELTA [{"op":"add","path":"/plan~1a","value":["x"]}]',
      'STATE_DELTA [{"op":"add","path":"/count","value":3},{"op":"add","path":"/count","value":6}]',
      'STATE_DELTA [{"op":"remove","path":"/seed"}]',
      'STATE_SNAPSHOT {"count":6,"plan/a":["x"]}',
    ]);
    await verified(out);
  });
});
