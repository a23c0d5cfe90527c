import * as ai7 from 'ai';
import * as ai6 from 'ai-v6';
import type { RunEvent } from '@baton/protocol';
import { describe, expect, it } from 'vitest';
import {
  Log,
  approvalTurn,
  approvedTurn,
  clientOutputTurn,
  clientToolTurn,
  deniedTurn,
  pendingOf,
  resetRun,
} from '@baton/testing/api-scenarios';
import type { PendingRun } from '../shared.ts';
import type { AiSdkMajor } from './chunks.ts';
import { createUiStreamMapper } from './mapper.ts';
import { requestToCommands, type AiSdkCommand } from './request.ts';
import { AI_SDK_UI_STREAM_HEADERS, UI_STREAM_DONE_FRAME, uiChunkFrame } from './sse.ts';

/**
 * The real client side of each supported major: DefaultChatTransport builds the request body
 * (mapped by requestToCommands) and parses our SSE frames; readUIMessageStream folds the chunks
 * into the assistant UI message, exactly as useChat does.
 */
type Part = Record<string, unknown> & { type: string };
type Message = { id: string; role: string; parts: Part[] };
interface Client {
  DefaultChatTransport: new (opts: { api: string; body?: object; fetch: typeof fetch }) => {
    sendMessages(opts: {
      chatId: string;
      messages: Message[];
      trigger: 'submit-message';
      messageId: string | undefined;
      abortSignal: undefined;
    }): Promise<ReadableStream<unknown>>;
  };
  readUIMessageStream(opts: {
    message?: Message;
    stream: ReadableStream<unknown>;
    terminateOnError?: boolean;
  }): AsyncIterable<Message>;
  lastAssistantMessageIsCompleteWithApprovalResponses(opts: { messages: Message[] }): boolean;
  lastAssistantMessageIsCompleteWithToolCalls(opts: { messages: Message[] }): boolean;
}
const CLIENTS: Record<AiSdkMajor, Client> = {
  6: ai6 as unknown as Client,
  7: ai7 as unknown as Client,
};

it('the header constants are the SDK’s own', () => {
  expect(AI_SDK_UI_STREAM_HEADERS).toEqual(ai7.UI_MESSAGE_STREAM_HEADERS);
  expect(AI_SDK_UI_STREAM_HEADERS).toEqual(ai6.UI_MESSAGE_STREAM_HEADERS);
});

/** A fake Baton server: maps each request to a command, then streams the scripted turn's events. */
function server(
  major: AiSdkMajor,
  turns: { events: RunEvent[]; history: RunEvent[] }[],
  pending: () => PendingRun | null,
) {
  const commands: AiSdkCommand[] = [];
  const frames: string[][] = [];
  const fetchImpl = async (_url: unknown, init?: RequestInit): Promise<Response> => {
    const command = requestToCommands(JSON.parse(init?.body as string), pending());
    commands.push(command);
    const turn = turns[commands.length - 1]!;
    const mapper = createUiStreamMapper({
      major,
      messageId: command.kind === 'decide' ? command.messageId : 'r1',
      history: turn.history,
    });
    const out = [...turn.events.flatMap((e) => mapper.map(e)), ...mapper.end()].map(uiChunkFrame);
    out.push(UI_STREAM_DONE_FRAME);
    frames.push(out);
    return new Response(out.join(''), { headers: AI_SDK_UI_STREAM_HEADERS });
  };
  return { fetch: fetchImpl as typeof fetch, commands, frames };
}

async function send(
  client: Client,
  fetchImpl: typeof fetch,
  messages: Message[],
  continuing?: Message,
): Promise<Message> {
  const transport = new client.DefaultChatTransport({
    api: '/v1/ai-sdk/chat',
    body: { agent: 'ops' },
    fetch: fetchImpl,
  });
  const stream = await transport.sendMessages({
    chatId: 't1',
    messages,
    trigger: 'submit-message',
    messageId: continuing?.id,
    abortSignal: undefined,
  });
  let last: Message | undefined;
  for await (const m of client.readUIMessageStream({
    ...(continuing ? { message: continuing } : {}),
    stream,
    terminateOnError: true,
  }))
    last = m;
  return structuredClone(last!);
}

const toolPart = (m: Message, toolCallId: string): Part =>
  m.parts.find((p) => p['toolCallId'] === toolCallId)!;

describe.each([7, 6] as const)('ai v%i client against Baton frames', (major) => {
  const client = CLIENTS[major];
  const userMessage: Message = {
    id: 'u1',
    role: 'user',
    parts: [{ type: 'text', text: 'deploy prod' }],
  };

  it.each([
    { approved: true, state: 'output-available', text: 'Done.' },
    { approved: false, state: 'output-denied', text: 'Not deploying.' },
  ])('approval flow: approved=$approved ends $state', async ({ approved, state, text }) => {
    const log = new Log();
    const turn1 = approvalTurn(log);
    const turn2 = approved ? approvedTurn(log) : deniedTurn(log);
    let waiting: PendingRun | null = null;
    const srv = server(
      major,
      [
        { events: turn1, history: [] },
        { events: turn2, history: turn1 },
      ],
      () => waiting,
    );

    const a1 = await send(client, srv.fetch, [userMessage]);
    expect(srv.commands[0]).toMatchObject({
      kind: 'start',
      threadId: 't1',
      agent: 'ops',
      input: [{ role: 'user', content: 'deploy prod' }],
    });
    expect(srv.frames[0]!.every((f) => f.endsWith('\n\n') && f.startsWith('data: '))).toBe(true);
    expect(a1.id).toBe('r1');
    expect(a1.parts.filter((p) => p.type === 'text').map((p) => p['text'])).toEqual([
      'Deploying now',
    ]);
    expect(a1.parts.filter((p) => p.type === 'reasoning').map((p) => p['text'])).toEqual([
      'needs approval',
    ]);
    const requested = toolPart(a1, 'call_1');
    expect(requested).toMatchObject({
      type: 'tool-deploy',
      state: 'approval-requested',
      input: { env: 'prod' },
      approval: { id: 'call_1' },
    });
    if (major === 7)
      expect(requested['approval']).toMatchObject({ requestReason: 'Deploy to prod?' });

    // addToolApprovalResponse: the part becomes approval-responded; useChat then auto-sends.
    waiting = pendingOf(turn1);
    Object.assign(requested, {
      state: 'approval-responded',
      approval: { id: 'call_1', approved, ...(approved ? {} : { reason: 'not today' }) },
    });
    expect(
      client.lastAssistantMessageIsCompleteWithApprovalResponses({ messages: [userMessage, a1] }),
    ).toBe(true);

    const a2 = await send(client, srv.fetch, [userMessage, a1], a1);
    expect(srv.commands[1]).toMatchObject({
      kind: 'decide',
      runId: 'r1',
      messageId: 'r1',
      decisions: [{ toolCallId: 'call_1', action: approved ? 'resume' : 'cancel' }],
    });
    expect(a2.id).toBe('r1');
    expect(toolPart(a2, 'call_1')).toMatchObject({
      state,
      ...(approved ? { output: { deployed: 'prod' } } : {}),
    });
    expect(a2.parts.filter((p) => p.type === 'text').map((p) => p['text'])).toEqual([
      'Deploying now',
      text,
    ]);
    expect(a2.parts.filter((p) => p.type === 'step-start')).toHaveLength(2);
  });

  it('client tool flow: the client output becomes the decision and the tool result', async () => {
    const log = new Log();
    const turn1 = clientToolTurn(log);
    const turn2 = clientOutputTurn(log);
    let waiting: PendingRun | null = null;
    const srv = server(
      major,
      [
        { events: turn1, history: [] },
        { events: turn2, history: turn1 },
      ],
      () => waiting,
    );
    const ask: Message = { id: 'u1', role: 'user', parts: [{ type: 'text', text: 'ask me' }] };

    const a1 = await send(client, srv.fetch, [ask]);
    const part = toolPart(a1, 'call_q');
    expect(part).toMatchObject({
      type: 'tool-ask',
      state: 'input-available',
      input: { question: 'yes or no?' },
    });

    // onToolCall ran on the client; addToolOutput stores the output; useChat auto-sends.
    waiting = pendingOf(turn1);
    Object.assign(part, { state: 'output-available', output: { answer: 'yes' } });
    expect(client.lastAssistantMessageIsCompleteWithToolCalls({ messages: [ask, a1] })).toBe(true);

    const a2 = await send(client, srv.fetch, [ask, a1], a1);
    expect(srv.commands[1]).toMatchObject({
      kind: 'decide',
      decisions: [{ toolCallId: 'call_q', action: 'resume', payload: { answer: 'yes' } }],
    });
    expect(toolPart(a2, 'call_q')).toMatchObject({
      state: 'output-available',
      output: { answer: 'yes' },
    });
    expect(a2.parts.filter((p) => p.type === 'text').map((p) => p['text'])).toEqual([
      'You said yes.',
    ]);
  });
});

describe.each([7, 6] as const)('ai v%i reader on a reset inference', (major) => {
  it(
    major === 7
      ? 'reset-step retracts the abandoned text'
      : 'v6 keeps the abandoned text (no retraction chunk)',
    async () => {
      const mapper = createUiStreamMapper({ major, messageId: 'r1' });
      const frames =
        [...resetRun().flatMap((e) => mapper.map(e)), ...mapper.end()].map(uiChunkFrame).join('') +
        UI_STREAM_DONE_FRAME;
      const transport = new CLIENTS[major].DefaultChatTransport({
        api: '/x',
        fetch: async () => new Response(frames, { headers: AI_SDK_UI_STREAM_HEADERS }),
      });
      const stream = await transport.sendMessages({
        chatId: 't1',
        messages: [],
        trigger: 'submit-message',
        messageId: undefined,
        abortSignal: undefined,
      });
      let last: Message | undefined;
      for await (const m of CLIENTS[major].readUIMessageStream({ stream, terminateOnError: true }))
        last = m;
      const texts = last!.parts.filter((p) => p.type === 'text').map((p) => p['text']);
      expect(texts).toEqual(major === 7 ? ['Hello!'] : ['Hel', 'Hello!']);
    },
  );
});
