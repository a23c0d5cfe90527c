import { uiMessageChunkSchema as schemaV7 } from 'ai';
import { uiMessageChunkSchema as schemaV6 } from 'ai-v6';
import type { RunEvent } from '@baton/protocol';
import { describe, expect, it } from 'vitest';
import {
  Log,
  approvalTurn,
  approvedTurn,
  cancelledRun,
  clientOutputTurn,
  clientToolTurn,
  deadlineDeniedTurn,
  deniedTurn,
  errorRun,
  failedToolRun,
  resetRun,
  started,
  unstreamedRun,
} from '@baton/testing/api-scenarios';
import {
  CHUNK_FIELDS,
  SUPPORTED_AI_SDK_MAJORS,
  downgradeChunk,
  type AiSdkMajor,
  type UiChunk,
} from './chunks.ts';
import { createUiStreamMapper, finishReasonFor } from './mapper.ts';

type Schema = {
  validate?: (value: unknown) => PromiseLike<{ success: boolean }> | { success: boolean };
};
const SCHEMAS: Record<AiSdkMajor, () => Schema> = { 6: schemaV6, 7: schemaV7 };

async function valid(major: AiSdkMajor, value: unknown): Promise<boolean> {
  return (await SCHEMAS[major]().validate!(value)).success;
}

/** Fields whose schema is z.unknown(): presence and type cannot be probed. */
const OPAQUE = new Set([
  'input',
  'output',
  'messageMetadata',
  'approvalDescriptor',
  'inputSchemaInput',
  'data',
]);

/**
 * Fields of `chunk` that `major`'s schema does not define. Both schemas are loose objects, so an
 * undefined field passes validation; a field IS defined when removing it or giving it a value of
 * the wrong type fails validation.
 */
async function unknownFields(major: AiSdkMajor, chunk: Record<string, unknown>): Promise<string[]> {
  const unknown: string[] = [];
  for (const key of Object.keys(chunk)) {
    if (key === 'type' || OPAQUE.has(key)) continue;
    const without = { ...chunk };
    delete without[key];
    if (!(await valid(major, without))) continue;
    if (!(await valid(major, { ...chunk, [key]: Symbol('probe') }))) continue;
    unknown.push(key);
  }
  return unknown;
}

async function expectKnownByMajor(major: AiSdkMajor, chunks: readonly UiChunk[]): Promise<void> {
  for (const chunk of chunks) {
    expect(await valid(major, chunk), `${JSON.stringify(chunk)} is a valid v${major} chunk`).toBe(
      true,
    );
    expect(
      await unknownFields(major, chunk as Record<string, unknown>),
      `fields of ${chunk.type} known to v${major}`,
    ).toEqual([]);
  }
}

const T1 = 'text:r1:step:1';
const R1 = 'reasoning:r1:step:1';
const T2 = 'text:r1:step:2';

interface Row {
  readonly name: string;
  readonly history?: readonly RunEvent[];
  /** A resumed stream: earlier suspensions up to this seq are replayed into the message. */
  readonly replayedThroughSeq?: number;
  readonly events: readonly RunEvent[];
  /** Call end() after the events (a stream that stops without run.finished). */
  readonly end?: boolean;
  readonly v7: UiChunk[];
  /** Expected for v6 when it differs from v7. */
  readonly v6?: UiChunk[];
}

function rows(): Row[] {
  const approval = new Log();
  const approvalEvents = approvalTurn(approval);
  const approved = approvedTurn(approval);
  const denial = new Log();
  const denialHistory = approvalTurn(denial);
  const denied = deniedTurn(denial);
  const timedOut = new Log();
  const timedOutHistory = approvalTurn(timedOut);
  const timedOutDenied = deadlineDeniedTurn(timedOut);
  const client = new Log();
  const clientHistory = clientToolTurn(client);
  const clientOutput = clientOutputTurn(client);
  const clientCancel = new Log();
  const clientCancelHistory = clientToolTurn(clientCancel);
  const clientCancelled = clientCancel.add(
    { type: 'run.status', from: 'waiting', to: 'running' },
    {
      type: 'decision.applied',
      decision: {
        decisionId: 'd1',
        toolCallId: 'call_q',
        action: 'cancel',
        payload: { error: 'no camera' },
      },
    },
    {
      type: 'tool_call.result',
      toolCallId: 'call_q',
      toolName: 'ask',
      outcome: { status: 'cancelled', error: 'cancelled by decision' },
    },
  );
  const partial = new Log();
  const partialEvents = [
    ...started(partial),
    ...partial.add({ type: 'text.delta', step: 1, messageId: 'r1:step:1', delta: 'Hi' }),
  ];

  const approvalRequest = {
    type: 'tool-approval-request',
    approvalId: 'call_1',
    toolCallId: 'call_1',
  } as const;
  const turn1Head: UiChunk[] = [
    { type: 'start', messageId: 'r1' },
    { type: 'start-step' },
    { type: 'reasoning-start', id: R1 },
    { type: 'reasoning-delta', id: R1, delta: 'needs approval' },
    { type: 'text-start', id: T1 },
    { type: 'text-delta', id: T1, delta: 'Deploying' },
    { type: 'text-delta', id: T1, delta: ' now' },
    { type: 'reasoning-end', id: R1 },
    { type: 'text-end', id: T1 },
    { type: 'tool-input-start', toolCallId: 'call_1', toolName: 'deploy' },
    {
      type: 'tool-input-available',
      toolCallId: 'call_1',
      toolName: 'deploy',
      input: { env: 'prod' },
    },
  ];
  const turn1Tail: UiChunk[] = [
    { type: 'finish-step' },
    { type: 'finish', finishReason: 'tool-calls' },
  ];
  const finalText = (text: string): UiChunk[] => [
    { type: 'start-step' },
    { type: 'text-start', id: T2 },
    { type: 'text-delta', id: T2, delta: text },
    { type: 'text-end', id: T2 },
    { type: 'finish-step' },
    { type: 'finish', finishReason: 'stop' },
  ];

  return [
    {
      name: 'approval suspension -> tool-approval-request, finish tool-calls',
      events: approvalEvents,
      v7: [...turn1Head, { ...approvalRequest, reason: 'Deploy to prod?' }, ...turn1Tail],
      v6: [...turn1Head, approvalRequest, ...turn1Tail],
    },
    {
      name: 'approved resume -> tool-output-available on the original call, finish stop',
      history: approvalEvents,
      events: approved,
      v7: [
        { type: 'start', messageId: 'r1' },
        { type: 'tool-output-available', toolCallId: 'call_1', output: { deployed: 'prod' } },
        ...finalText('Done.'),
      ],
    },
    {
      name: 'resumed stream: the earlier turn and its suspension replayed into one message',
      replayedThroughSeq: approvalEvents.at(-1)!.seq,
      events: [...approvalEvents, ...approved],
      v7: [
        ...turn1Head,
        { ...approvalRequest, reason: 'Deploy to prod?' },
        { type: 'finish-step' },
        { type: 'tool-output-available', toolCallId: 'call_1', output: { deployed: 'prod' } },
        ...finalText('Done.'),
      ],
      v6: [
        ...turn1Head,
        approvalRequest,
        { type: 'finish-step' },
        { type: 'tool-output-available', toolCallId: 'call_1', output: { deployed: 'prod' } },
        ...finalText('Done.'),
      ],
    },
    {
      name: 'denial -> tool-output-denied',
      history: denialHistory,
      events: denied,
      v7: [
        { type: 'start', messageId: 'r1' },
        { type: 'tool-output-denied', toolCallId: 'call_1' },
        ...finalText('Not deploying.'),
      ],
    },
    {
      name: 'an approval its deadline denied -> tool-output-denied, as a human denial',
      history: timedOutHistory,
      events: timedOutDenied,
      v7: [
        { type: 'start', messageId: 'r1' },
        { type: 'tool-output-denied', toolCallId: 'call_1' },
        ...finalText('Not deploying.'),
      ],
    },
    {
      name: 'denial without history still reads a cancel decision as a denial',
      events: denied,
      v7: [
        { type: 'start', messageId: 'r1' },
        { type: 'tool-output-denied', toolCallId: 'call_1' },
        ...finalText('Not deploying.'),
      ],
    },
    {
      name: 'client tool suspension -> input-available only, finish tool-calls',
      events: clientHistory,
      v7: [
        { type: 'start', messageId: 'r1' },
        { type: 'start-step' },
        { type: 'tool-input-start', toolCallId: 'call_q', toolName: 'ask' },
        {
          type: 'tool-input-available',
          toolCallId: 'call_q',
          toolName: 'ask',
          input: { question: 'yes or no?' },
        },
        { type: 'finish-step' },
        { type: 'finish', finishReason: 'tool-calls' },
      ],
    },
    {
      name: 'client tool output decision -> tool-output-available with the payload',
      history: clientHistory,
      events: clientOutput,
      v7: [
        { type: 'start', messageId: 'r1' },
        { type: 'tool-output-available', toolCallId: 'call_q', output: { answer: 'yes' } },
        ...finalText('You said yes.'),
      ],
    },
    {
      name: 'client tool cancelled by the client -> tool-output-error, not denied',
      history: clientCancelHistory,
      events: clientCancelled,
      end: true,
      v7: [
        { type: 'start', messageId: 'r1' },
        { type: 'tool-output-error', toolCallId: 'call_q', errorText: 'cancelled by decision' },
        { type: 'finish', finishReason: 'interrupted' },
      ],
      v6: [
        { type: 'start', messageId: 'r1' },
        { type: 'tool-output-error', toolCallId: 'call_q', errorText: 'cancelled by decision' },
        { type: 'finish', finishReason: 'other' },
      ],
    },
    {
      name: 'run error -> open text closed, error chunk, finish error',
      events: errorRun(),
      v7: [
        { type: 'start', messageId: 'r1' },
        { type: 'start-step' },
        { type: 'text-start', id: T1 },
        { type: 'text-delta', id: T1, delta: 'Let me' },
        { type: 'text-end', id: T1 },
        { type: 'finish-step' },
        { type: 'error', errorText: 'model exploded' },
        { type: 'finish', finishReason: 'error' },
      ],
    },
    {
      name: 'cancelled run -> abort',
      events: cancelledRun(),
      v7: [
        { type: 'start', messageId: 'r1' },
        { type: 'start-step' },
        { type: 'text-start', id: T1 },
        { type: 'text-delta', id: T1, delta: 'Hel' },
        { type: 'text-end', id: T1 },
        { type: 'finish-step' },
        { type: 'abort', reason: 'run cancelled' },
      ],
    },
    {
      name: 'inference.reset -> close, reset-step (v7), retry in a fresh part',
      events: resetRun(),
      v7: [
        { type: 'start', messageId: 'r1' },
        { type: 'start-step' },
        { type: 'text-start', id: T1 },
        { type: 'text-delta', id: T1, delta: 'Hel' },
        { type: 'text-end', id: T1 },
        { type: 'reset-step' },
        { type: 'text-start', id: `${T1}:1` },
        { type: 'text-delta', id: `${T1}:1`, delta: 'Hello!' },
        { type: 'text-end', id: `${T1}:1` },
        { type: 'finish-step' },
        { type: 'finish', finishReason: 'stop' },
      ],
      v6: [
        { type: 'start', messageId: 'r1' },
        { type: 'start-step' },
        { type: 'text-start', id: T1 },
        { type: 'text-delta', id: T1, delta: 'Hel' },
        { type: 'text-end', id: T1 },
        { type: 'text-start', id: `${T1}:1` },
        { type: 'text-delta', id: `${T1}:1`, delta: 'Hello!' },
        { type: 'text-end', id: `${T1}:1` },
        { type: 'finish-step' },
        { type: 'finish', finishReason: 'stop' },
      ],
    },
    {
      name: 'failed tool -> tool-output-error; token_budget stop -> finish length',
      events: failedToolRun(),
      v7: [
        { type: 'start', messageId: 'r1' },
        { type: 'start-step' },
        { type: 'tool-input-start', toolCallId: 'call_s', toolName: 'search' },
        {
          type: 'tool-input-available',
          toolCallId: 'call_s',
          toolName: 'search',
          input: { q: 'x' },
        },
        { type: 'tool-output-error', toolCallId: 'call_s', errorText: 'search timed out' },
        { type: 'finish-step' },
        { type: 'finish', finishReason: 'length' },
      ],
    },
    {
      name: 'unstreamed assistant message -> whole reasoning and text parts',
      events: unstreamedRun(),
      v7: [
        { type: 'start', messageId: 'r1' },
        { type: 'start-step' },
        { type: 'reasoning-start', id: R1 },
        { type: 'reasoning-delta', id: R1, delta: 'greet' },
        { type: 'reasoning-end', id: R1 },
        { type: 'text-start', id: T1 },
        { type: 'text-delta', id: T1, delta: 'Hi there' },
        { type: 'text-end', id: T1 },
        { type: 'finish-step' },
        { type: 'finish', finishReason: 'stop' },
      ],
    },
    {
      name: 'stream ends without run.finished -> end() closes and finishes interrupted (v6: other)',
      events: partialEvents,
      end: true,
      v7: [
        { type: 'start', messageId: 'r1' },
        { type: 'start-step' },
        { type: 'text-start', id: T1 },
        { type: 'text-delta', id: T1, delta: 'Hi' },
        { type: 'text-end', id: T1 },
        { type: 'finish-step' },
        { type: 'finish', finishReason: 'interrupted' },
      ],
      v6: [
        { type: 'start', messageId: 'r1' },
        { type: 'start-step' },
        { type: 'text-start', id: T1 },
        { type: 'text-delta', id: T1, delta: 'Hi' },
        { type: 'text-end', id: T1 },
        { type: 'finish-step' },
        { type: 'finish', finishReason: 'other' },
      ],
    },
  ];
}

describe('createUiStreamMapper', () => {
  for (const major of SUPPORTED_AI_SDK_MAJORS) {
    describe(`ai v${major}`, () => {
      it.each(rows().map((r) => [r.name, r] as const))('%s', async (_name, row) => {
        const mapper = createUiStreamMapper({
          major,
          messageId: 'r1',
          ...(row.history ? { history: row.history } : {}),
          ...(row.replayedThroughSeq === undefined
            ? {}
            : { replayedThroughSeq: row.replayedThroughSeq }),
        });
        const chunks = [
          ...row.events.flatMap((e) => mapper.map(e)),
          ...(row.end ? mapper.end() : []),
        ];
        expect(chunks).toEqual(major === 6 ? (row.v6 ?? row.v7) : row.v7);
        await expectKnownByMajor(major, chunks);
        expect(mapper.done).toBe(true);
        expect(mapper.end()).toEqual([]);
        expect(mapper.map(row.events[0]!)).toEqual([]);
      });
    });
  }

  it('omits messageId from start when none is given', () => {
    const mapper = createUiStreamMapper({ major: 7 });
    expect(mapper.map(approvalTurn()[0]!)).toEqual([{ type: 'start' }]);
  });
});

describe('finishReasonFor', () => {
  it.each([
    [{ kind: 'suspended' }, 'tool-calls'],
    [{ kind: 'natural_end' }, 'stop'],
    [{ kind: 'behavior_requested' }, 'stop'],
    [{ kind: 'stopped', code: 'token_budget' }, 'length'],
    [{ kind: 'stopped', code: 'max_rounds' }, 'length'],
    [{ kind: 'stopped', code: 'loop_detection' }, 'other'],
    [{ kind: 'blocked', reason: 'policy' }, 'other'],
    [{ kind: 'error', message: 'x' }, 'error'],
  ] as const)('%j -> %s', (termination, reason) => {
    expect(finishReasonFor(termination)).toBe(reason);
  });
});

describe('version switch', () => {
  it('the probe detects fields a major does not define', async () => {
    const chunk = {
      type: 'tool-approval-request',
      approvalId: 'a',
      toolCallId: 'c',
      reason: 'why',
    };
    expect(await unknownFields(6, chunk)).toEqual(['reason']);
    expect(await unknownFields(7, chunk)).toEqual([]);
  });

  it.each(['reset-step', 'tool-approval-response', 'custom', 'reasoning-file', 'steering-message'])(
    '%s exists only in v7: v6 rejects it and the table drops it',
    async (type) => {
      expect(CHUNK_FIELDS[7][type]).toBeDefined();
      expect(CHUNK_FIELDS[6][type]).toBeUndefined();
      expect(await valid(6, { type })).toBe(false);
      expect(downgradeChunk(6, { type } as UiChunk)).toBeNull();
    },
  );

  it('maps finish reasons v6 lacks to other and strips v7-only fields', () => {
    expect(downgradeChunk(6, { type: 'finish', finishReason: 'interrupted' })).toEqual({
      type: 'finish',
      finishReason: 'other',
    });
    expect(downgradeChunk(7, { type: 'finish', finishReason: 'interrupted' })).toEqual({
      type: 'finish',
      finishReason: 'interrupted',
    });
    expect(downgradeChunk(6, { type: 'text-end', id: 'x', citations: [] })).toEqual({
      type: 'text-end',
      id: 'x',
    });
  });

  it('every chunk type of the table is a type the major validates', async () => {
    for (const major of SUPPORTED_AI_SDK_MAJORS) {
      for (const type of Object.keys(CHUNK_FIELDS[major])) {
        // A chunk with only `type` fails for types with required fields; the union error must then
        // name one of that type's fields rather than reject the type itself.
        const ok = await valid(major, { type });
        const withFields = await valid(major, sample(type));
        expect(ok || withFields, `v${major} knows ${type}`).toBe(true);
      }
    }
  });
});

/** Minimal valid-looking chunk of a type (required fields filled with strings). */
function sample(type: string): Record<string, unknown> {
  const base: Record<string, unknown> = {
    type,
    id: 'x',
    delta: 'd',
    errorText: 'e',
    toolCallId: 'c',
    toolName: 'n',
    input: {},
    output: {},
  };
  const extra: Record<string, Record<string, unknown>> = {
    'tool-input-delta': { inputTextDelta: 'x' },
    'tool-approval-request': { approvalId: 'a' },
    'tool-approval-response': { approvalId: 'a', approved: true },
    'source-url': { sourceId: 's', url: 'https://x' },
    'source-document': { sourceId: 's', mediaType: 'text/plain', title: 't' },
    file: { url: 'https://x', mediaType: 'text/plain' },
    'reasoning-file': { url: 'https://x', mediaType: 'text/plain' },
    custom: { kind: 'a.b' },
    'steering-message': { parts: [] },
    'message-metadata': { messageMetadata: {} },
  };
  return { ...base, ...(extra[type] ?? {}) };
}
