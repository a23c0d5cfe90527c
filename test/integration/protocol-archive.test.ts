/**
 * The protocol adapters on a thread Redis forgot (ARCHIVE_URL on, Redis retention 1 s), driven by
 * the real clients: AG-UI's HttpAgent gets the whole conversation, the archived turns included,
 * in its MESSAGES_SNAPSHOT; the AI SDK's DefaultChatTransport continues the chat, whose thread
 * then holds both turns, and reconnectToStream answers as for a hot chat with nothing streaming.
 */
import { HttpAgent, type BaseEvent } from '@ag-ui/client';
import * as ai from 'ai';
import type { UIMessage } from 'ai';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ApiClient, KEYS, type ApiCluster } from '@baton/testing/api-harness';
import { startArchivedStack, type ArchivedStack } from '@baton/testing/archive-stack';

interface Snapshot {
  readonly type: string;
  readonly messages?: readonly { readonly role: string; readonly content?: unknown }[];
}
interface ThreadBody {
  readonly messages: readonly { readonly role: string; readonly content: unknown }[];
  readonly runIds: readonly string[];
}

let stack: ArchivedStack;
let c: ApiCluster;
let api: ApiClient;
let seq = 0;
const unique = (name: string): string => `${name}-${Date.now().toString(36)}-${++seq}`;

beforeAll(async () => {
  stack = await startArchivedStack('protocol_archive', inject('redisUrl'));
  c = stack.c;
  api = new ApiClient(c.apis[0]!.url, KEYS.a);
}, 60_000);

afterAll(async () => {
  await stack?.stop();
});

/** Waits until Redis holds nothing of the thread's history (the archive has it). */
function forgotten(threadId: string): Promise<void> {
  return stack.forgotten('tenant-a', threadId);
}

async function agUiTurn(
  threadId: string,
  text: string,
  runId: string,
): Promise<{ outcome: unknown; snapshots: Snapshot[] }> {
  const agent = new HttpAgent({
    url: `${c.apis[0]!.url}/v1/ag-ui`,
    headers: { authorization: `Bearer ${KEYS.a}` },
    threadId,
    initialMessages: [{ id: `u-${++seq}`, role: 'user', content: text }],
  });
  const events: Snapshot[] = [];
  await agent.runAgent(
    { runId, forwardedProps: { agent: 'assistant' } },
    { onEvent: ({ event }: { event: BaseEvent }) => void events.push({ ...event }) },
  );
  const last = events.at(-1) as Snapshot & { outcome?: { type?: string } };
  expect(last.type).toBe('RUN_FINISHED');
  return {
    outcome: last.outcome?.type,
    snapshots: events.filter((e) => e.type === 'MESSAGES_SNAPSHOT'),
  };
}

const userTexts = (s: Snapshot | undefined): unknown[] =>
  (s?.messages ?? []).filter((m) => m.role === 'user').map((m) => m.content);

describe('protocol adapters on archived threads', () => {
  it('AG-UI: a turn on a forgotten thread snapshots the archived conversation too', async () => {
    const threadId = unique('ag-archived');
    const first = await agUiTurn(threadId, 'what is the weather?', 'ag-a1');
    expect(first.outcome).toBe('success');
    await forgotten(threadId);

    // The deploy turn interrupts for its approval, and AG-UI then snapshots the whole thread.
    const second = await agUiTurn(threadId, 'deploy please', 'ag-a2');
    expect(second.outcome).toBe('interrupt');
    expect(userTexts(second.snapshots.at(-1))).toEqual(['what is the weather?', 'deploy please']);
    const assistants = (second.snapshots.at(-1)?.messages ?? []).filter(
      (m) => m.role === 'assistant',
    );
    expect(assistants.length).toBeGreaterThanOrEqual(2);
  });

  it('AI SDK: a forgotten chat continues from the archive; nothing is left to reconnect to', async () => {
    const chatId = unique('chat-archived');
    const transport = new ai.DefaultChatTransport({
      api: `${c.apis[0]!.url}/v1/ai-sdk/chat`,
      headers: { authorization: `Bearer ${KEYS.a}` },
      body: { agent: 'assistant' },
    });
    const say = async (text: string, history: UIMessage[]): Promise<UIMessage[]> => {
      const user: UIMessage = { id: `u-${++seq}`, role: 'user', parts: [{ type: 'text', text }] };
      const stream = await transport.sendMessages({
        chatId,
        messages: [...history, user],
        trigger: 'submit-message',
        messageId: undefined,
        abortSignal: undefined,
      });
      let reply: UIMessage | undefined;
      for await (const m of ai.readUIMessageStream({
        stream: stream,
        terminateOnError: true,
      }))
        reply = m;
      expect(reply?.role).toBe('assistant');
      return [...history, user, reply!];
    };

    const afterFirst = await say('what is the weather?', []);
    const hot = await api.get(`/v1/threads/${chatId}`);
    expect(hot.status).toBe(200);
    const hotThread = hot.body as ThreadBody;
    await forgotten(chatId);

    await say('and tomorrow?', afterFirst);
    const cold = await api.get(`/v1/threads/${chatId}`);
    expect(cold.status).toBe(200);
    const thread = cold.body as ThreadBody;
    expect(thread.messages.slice(0, hotThread.messages.length)).toEqual(hotThread.messages);
    expect(thread.messages.length).toBeGreaterThan(hotThread.messages.length);
    expect(thread.runIds).toHaveLength(2);
    expect(thread.runIds.slice(0, 1)).toEqual(hotThread.runIds);
    expect(await transport.reconnectToStream({ chatId })).toBeNull();
  });
});
