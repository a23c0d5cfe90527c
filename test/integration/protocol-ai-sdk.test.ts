import * as ai7 from 'ai';
import * as ai6 from 'ai-v6';
import type { UIMessage, UIMessageChunk } from 'ai';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createDemoAgents } from '@baton/core/testing';
import type { ErrorBody } from '@baton/protocol';
import { systemClock } from '@baton/runtime';
import {
  ApiClient,
  KEYS,
  eventsOf,
  expectGapless,
  startApiCluster,
  type ApiCluster,
} from '@baton/testing/api-harness';
import { createHeadlessChat, until } from '@baton/testing/ai-chat';
import {
  GATED_SLOW_AGENT,
  SEED_AGENT,
  gatedSlowAgent,
  seedAgent,
} from '@baton/testing/protocol-agents';

/**
 * The AI SDK UI message stream against a live Baton (real Redis, real worker, real HTTP), driven
 * by the SDK's own client code of both supported majors: DefaultChatTransport,
 * parseJsonEventStream + readUIMessageStream, and AbstractChat (useChat without a framework).
 */
type Part = Record<string, unknown> & { type: string };
type Message = UIMessage & { parts: Part[] };
interface Transport {
  sendMessages(opts: {
    chatId: string;
    messages: UIMessage[];
    trigger: 'submit-message';
    messageId: string | undefined;
    abortSignal: AbortSignal | undefined;
  }): Promise<ReadableStream<UIMessageChunk>>;
  reconnectToStream(opts: { chatId: string }): Promise<ReadableStream<UIMessageChunk> | null>;
}
interface Client {
  DefaultChatTransport: new (opts: {
    api: string;
    headers?: Record<string, string>;
    body?: object;
    fetch?: typeof fetch;
  }) => Transport;
  readUIMessageStream(opts: {
    message?: UIMessage;
    stream: ReadableStream<UIMessageChunk>;
    terminateOnError?: boolean;
  }): AsyncIterable<UIMessage>;
  parseJsonEventStream(opts: {
    stream: ReadableStream<Uint8Array>;
    schema: unknown;
  }): ReadableStream<{ success: boolean; value?: UIMessageChunk; error?: unknown }>;
  uiMessageChunkSchema: unknown;
  AbstractChat: unknown;
  lastAssistantMessageIsCompleteWithApprovalResponses: (opts: { messages: UIMessage[] }) => boolean;
  lastAssistantMessageIsCompleteWithToolCalls: (opts: { messages: UIMessage[] }) => boolean;
}
const CLIENTS = { 7: ai7 as unknown as Client, 6: ai6 as unknown as Client } as const;

const TIMEOUT = 20_000;
let chatSeq = 0;
const chatId = (name: string): string => `chat-${name}-${Date.now().toString(36)}-${++chatSeq}`;
const userMessage = (text: string): UIMessage => ({
  id: `u-${++chatSeq}`,
  role: 'user',
  parts: [{ type: 'text', text }],
});

async function readMessage(
  client: Client,
  stream: ReadableStream<UIMessageChunk>,
  message?: UIMessage,
): Promise<Message> {
  let last: UIMessage | undefined;
  for await (const m of client.readUIMessageStream({
    ...(message ? { message } : {}),
    stream,
    terminateOnError: true,
  }))
    last = m;
  return structuredClone(last) as Message;
}

async function collect<T>(stream: ReadableStream<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of stream as unknown as AsyncIterable<T>) out.push(x);
  return out;
}

const partOf = (m: Message, toolName: string): Part =>
  m.parts.find((p) => p.type === `tool-${toolName}`)!;
const texts = (m: Message): string[] =>
  m.parts.filter((p) => p.type === 'text').map((p) => String(p['text']));

/** The parts of /openapi.json these tests read. */
interface OpenApiDocument {
  readonly paths: Record<string, unknown>;
  readonly components: { readonly schemas: Record<string, unknown> };
}

describe('AI SDK UI message stream against a live server', () => {
  let c: ApiCluster;
  let base: string;
  let api: ApiClient;
  const auth = { authorization: `Bearer ${KEYS.a}` };

  beforeAll(async () => {
    c = await startApiCluster(inject('redisUrl'), [
      ...createDemoAgents(systemClock),
      seedAgent(systemClock),
      gatedSlowAgent(systemClock),
    ]);
    base = c.apis[0]!.url;
    api = new ApiClient(base, KEYS.a);
  });
  afterAll(async () => {
    await c.stop();
  });

  const chatUrl = (): string => `${base}/v1/ai-sdk/chat`;

  describe.each([7, 6] as const)('ai v%i', (major) => {
    const client = CLIENTS[major];
    const headers = { ...auth, 'x-baton-ai-sdk-major': String(major) };

    it(
      'DefaultChatTransport sends a message; the stream rebuilds text and tool parts',
      async () => {
        const responses: Response[] = [];
        const transport = new client.DefaultChatTransport({
          api: chatUrl(),
          headers,
          body: { agent: 'assistant' },
          fetch: async (url, init) => {
            const res = await fetch(url, init);
            responses.push(res.clone());
            return res;
          },
        });
        const id = chatId('weather');
        const stream = await transport.sendMessages({
          chatId: id,
          messages: [userMessage('what is the weather?')],
          trigger: 'submit-message',
          messageId: undefined,
          abortSignal: AbortSignal.timeout(TIMEOUT),
        });
        const message = await readMessage(client, stream);

        const res = responses[0]!;
        expect(res.status).toBe(200);
        expect(res.headers.get('x-vercel-ai-ui-message-stream')).toBe('v1');
        expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
        expect(texts(message)).toEqual(['Looking it up.', expect.stringMatching(/^All done\./)]);
        expect(partOf(message, 'get_weather')).toMatchObject({
          state: 'output-available',
          input: { city: 'Paris' },
          output: { city: 'Paris' },
        });
        expect(message.parts.filter((p) => p.type === 'step-start')).toHaveLength(2);

        // The same bytes through the SDK's SSE parser: valid chunks only, ending with [DONE].
        const raw = await res.clone().text();
        expect(raw.trimEnd().endsWith('data: [DONE]')).toBe(true);
        const parsed = await collect(
          client.parseJsonEventStream({
            stream: res.body!,
            schema: client.uiMessageChunkSchema,
          }),
        );
        expect(parsed.every((r) => r.success)).toBe(true);
        const chunks = parsed.map((r) => r.value!);
        expect(chunks[0]).toMatchObject({ type: 'start', messageId: message.id });
        expect(chunks.at(-1)).toEqual({ type: 'finish', finishReason: 'stop' });
        const rebuilt = await readMessage(
          client,
          new ReadableStream({
            start(controller) {
              for (const chunk of chunks) controller.enqueue(chunk);
              controller.close();
            },
          }),
        );
        expect(rebuilt).toEqual(message);

        // Same event log: the run is watchable over native SSE as well.
        const native = await api.stream(`/v1/runs/${message.id}/events`, { timeoutMs: 10_000 });
        const events = eventsOf(native);
        expectGapless(events);
        expect(events.at(-1)).toMatchObject({ type: 'run.finished', status: 'done' });
      },
      TIMEOUT,
    );

    it.each([
      { approved: true, state: 'output-available' },
      { approved: false, state: 'output-denied' },
    ])(
      'approval through AbstractChat: approved=$approved ends $state',
      async ({ approved, state }) => {
        const chat = createHeadlessChat(client.AbstractChat, {
          id: chatId(approved ? 'approve' : 'deny'),
          transport: new client.DefaultChatTransport({
            api: chatUrl(),
            headers,
            body: { agent: 'assistant' },
          }) as never,
          sendAutomaticallyWhen: client.lastAssistantMessageIsCompleteWithApprovalResponses,
        });
        await chat.sendMessage({ text: 'deploy checkout please' });
        expect(chat.status).toBe('ready');
        const first = chat.lastMessage as Message;
        expect(partOf(first, 'get_weather')).toMatchObject({ state: 'output-available' });
        const deploy = partOf(first, 'deploy_service');
        expect(deploy).toMatchObject({
          state: 'approval-requested',
          input: { service: 'checkout', environment: 'production' },
        });
        if (major === 7)
          expect(deploy['approval']).toMatchObject({
            requestReason: 'Deploy "checkout" to "production"?',
          });
        else expect(deploy['approval']).not.toHaveProperty('requestReason');

        await chat.addToolApprovalResponse({
          id: (deploy['approval'] as { id: string }).id,
          approved,
          ...(approved ? {} : { reason: 'not today' }),
        });
        // sendAutomaticallyWhen sends the answer; the same assistant message continues.
        await until(
          () =>
            chat.status === 'ready' &&
            partOf(chat.lastMessage as Message, 'deploy_service')['state'] === state,
          `deploy_service ${state}`,
        );
        const final = chat.lastMessage as Message;
        expect(chat.messages).toHaveLength(2);
        expect(final.id).toBe(first.id);
        if (approved)
          expect(partOf(final, 'deploy_service')['output']).toMatchObject({
            service: 'checkout',
            // eslint-disable-next-line @typescript-eslint/no-unsafe-assignment -- vitest's asymmetric matchers are typed any
            deploymentId: expect.any(String),
          });
        expect(texts(final).at(-1)).toMatch(/^All done\./);
        expect(chat.error).toBeUndefined();
      },
      TIMEOUT,
    );

    it(
      'client-side tool: addToolOutput becomes the decision and the tool result',
      async () => {
        const chat = createHeadlessChat(client.AbstractChat, {
          id: chatId('client-tool'),
          transport: new client.DefaultChatTransport({
            api: chatUrl(),
            headers,
            body: { agent: 'assistant' },
          }) as never,
          sendAutomaticallyWhen: client.lastAssistantMessageIsCompleteWithToolCalls,
        });
        await chat.sendMessage({ text: 'please confirm' });
        const part = partOf(chat.lastMessage as Message, 'confirm_in_browser');
        expect(part).toMatchObject({ state: 'input-available', input: { question: 'Proceed?' } });
        // What an onToolCall handler does after asking the user in the browser.
        const output = {
          tool: 'confirm_in_browser',
          toolCallId: String(part['toolCallId']),
          output: { answer: 'yes' },
        };
        await chat.addToolOutput(output);
        await until(
          () => chat.status === 'ready' && texts(chat.lastMessage as Message).length === 2,
          'the run to finish',
        );
        const final = chat.lastMessage as Message;
        expect(partOf(final, 'confirm_in_browser')).toMatchObject({
          state: 'output-available',
          output: { answer: 'yes' },
        });
        expect(texts(final).at(-1)).toMatch(/^All done\. confirm_in_browser: \{"answer":"yes"\}/);
        expect(chat.error).toBeUndefined();
      },
      TIMEOUT,
    );

    it(
      'reconnectToStream mid-run gets the rest of the turn, and 204 once it is over',
      async () => {
        const transport = new client.DefaultChatTransport({
          api: chatUrl(),
          headers,
          body: { agent: 'assistant' },
        });
        const id = chatId('resume');
        const abort = new AbortController();
        const stream = await transport.sendMessages({
          chatId: id,
          messages: [userMessage('build a report')],
          trigger: 'submit-message',
          messageId: undefined,
          abortSignal: abort.signal,
        });
        // Read until the slow tool started, then drop the connection (a page reload).
        const reader = stream.getReader();
        const seen: UIMessageChunk[] = [];
        for (;;) {
          const { value, done } = await reader.read();
          if (done) throw new Error('stream ended before the tool call');
          seen.push(value);
          if (value.type === 'tool-input-available') break;
        }
        abort.abort();
        await reader.cancel().catch(() => undefined);

        const resumed = await transport.reconnectToStream({ chatId: id });
        expect(resumed).not.toBeNull();
        const message = await readMessage(client, resumed!);
        expect(message.id).toBe((seen[0] as { messageId?: string }).messageId);
        expect(partOf(message, 'slow_report')).toMatchObject({
          state: 'output-available',
          output: { pages: 3 },
        });
        expect(texts(message)).toEqual([
          'Building the report.',
          expect.stringMatching(/^All done/),
        ]);

        expect(await transport.reconnectToStream({ chatId: id })).toBeNull();
        const idle = await fetch(`${chatUrl()}/${id}/stream`, { headers });
        expect(idle.status).toBe(204);
        // The dropped first response unsubscribed too: no stream is left attached.
        await until(
          () => c.apis[0]!.api.runtime.eventSubscriber().activeChannels === 0,
          'subscriptions to close',
        );
      },
      TIMEOUT,
    );

    it(
      'resumeStream during a continuation (after an approval) rebuilds the whole assistant message',
      async () => {
        const id = chatId('resume-continuation');
        const transport = (): never =>
          new client.DefaultChatTransport({
            api: chatUrl(),
            headers,
            body: { agent: GATED_SLOW_AGENT },
          }) as never;
        const page = createHeadlessChat(client.AbstractChat, { id, transport: transport() });
        await page.sendMessage({ text: 'deploy it' });
        const asked = partOf(page.lastMessage as Message, 'slow_deploy');
        expect(asked['state']).toBe('approval-requested');
        const runId = page.lastMessage!.id;
        await page.addToolApprovalResponse({
          id: (asked['approval'] as { id: string }).id,
          approved: true,
        });
        // What the page stored before the reload: the approval answered, the turn not streamed.
        const stored = structuredClone(page.messages);
        const continuation = page.sendMessage();
        await expect
          .poll(async () => (await api.get<{ status: string }>(`/v1/runs/${runId}`)).body.status, {
            timeout: 5_000,
          })
          .toBe('running');

        // The reloaded page resumes while the approved tool still runs.
        const reloaded = createHeadlessChat(
          client.AbstractChat,
          { id, transport: transport() },
          stored,
        );
        await reloaded.resumeStream();
        expect(reloaded.error).toBeUndefined();
        const rebuilt = reloaded.lastMessage as Message;
        expect(rebuilt.id).toBe(runId);
        expect(partOf(rebuilt, 'slow_deploy')).toMatchObject({
          state: 'output-available',
          output: { target: 'x', deployed: true },
        });
        expect(texts(rebuilt)).toEqual(['Deploying slowly.', 'Deployed.']);
        expect(reloaded.messages.map((m) => m.role)).toEqual(['user', 'assistant']);
        await continuation;
        expect(page.error).toBeUndefined();
      },
      TIMEOUT,
    );

    it(
      'seed t0–t7: two approvals and a slow tool in parallel, answered one at a time',
      async () => {
        const sent: unknown[] = [];
        const chat = createHeadlessChat(client.AbstractChat, {
          id: chatId('seed'),
          transport: new client.DefaultChatTransport({
            api: chatUrl(),
            headers,
            body: { agent: SEED_AGENT },
            fetch: async (url, init) => {
              sent.push(JSON.parse(init!.body as string));
              return fetch(url, init);
            },
          }) as never,
          sendAutomaticallyWhen: client.lastAssistantMessageIsCompleteWithApprovalResponses,
        });
        const state = (tool: string): unknown => partOf(chat.lastMessage as Message, tool)['state'];

        // t0–t3: A and B suspend at once, C runs ~500 ms; the turn ends when C is done.
        await chat.sendMessage({ text: 'run the three tools' });
        expect([state('tool_A'), state('tool_B'), state('tool_C')]).toEqual([
          'approval-requested',
          'approval-requested',
          'output-available',
        ]);
        const runId = chat.lastMessage!.id;
        const approvalId = (tool: string): string =>
          (partOf(chat.lastMessage as Message, tool)['approval'] as { id: string }).id;

        // t4–t5: only A is answered (B still pending, so no automatic send): A replays, the run
        // waits again for B.
        await chat.addToolApprovalResponse({ id: approvalId('tool_A'), approved: true });
        expect(chat.status).toBe('ready');
        await chat.sendMessage();
        expect(chat.error).toBeUndefined();
        expect([state('tool_A'), state('tool_B'), state('tool_C')]).toEqual([
          'output-available',
          'approval-requested',
          'output-available',
        ]);
        const waiting = await api.get(`/v1/runs/${runId}`);
        expect(waiting.body).toMatchObject({ status: 'waiting' });

        // t6–t7: B answered: everything terminal, the next step ends the run.
        await chat.addToolApprovalResponse({ id: approvalId('tool_B'), approved: true });
        await until(
          () => chat.status === 'ready' && state('tool_B') === 'output-available',
          'tool_B output-available',
        );
        const final = chat.lastMessage as Message;
        expect(final.id).toBe(runId);
        expect(partOf(final, 'tool_A')['output']).toMatchObject({ tool: 'tool_A', ok: true });
        expect(partOf(final, 'tool_B')['output']).toMatchObject({ tool: 'tool_B', ok: true });
        expect(partOf(final, 'tool_C')['output']).toMatchObject({ tool: 'tool_C', ok: true });
        expect(texts(final)).toEqual(['Running A, B and C.', 'All 3 tools finished.']);
        expect(sent).toHaveLength(3);

        // The same run over native SSE: one gapless log, two suspensions, done.
        const events = eventsOf(await api.stream(`/v1/runs/${runId}/events`));
        expectGapless(events);
        const finishes = events.filter((e) => e.type === 'run.finished');
        expect(finishes.map((e) => (e as { status: string }).status)).toEqual([
          'waiting',
          'waiting',
          'done',
        ]);
      },
      TIMEOUT,
    );
  });

  describe('auth, tenants and errors', () => {
    it('needs an API key; errors before streaming are standard JSON', async () => {
      const body = {
        id: chatId('errors'),
        messages: [userMessage('hi')],
        trigger: 'submit-message',
        agent: 'assistant',
      };
      const anonymous = await new ApiClient(base).post('/v1/ai-sdk/chat', body);
      expect(anonymous.status).toBe(401);
      expect(anonymous.body).toMatchObject({ error: { code: 'unauthorized' } });

      const bad = await api.post('/v1/ai-sdk/chat', { ...body, messages: [] });
      expect(bad.status).toBe(400);
      expect(bad.body).toMatchObject({ error: { code: 'bad_request' } });

      const unknown = await api.post('/v1/ai-sdk/chat', { ...body, agent: 'nope' });
      expect(unknown.status).toBe(422);
      expect(unknown.body).toMatchObject({ error: { code: 'unknown_agent' } });

      const major = await api.post<ErrorBody>('/v1/ai-sdk/chat', body, {
        'x-baton-ai-sdk-major': '5',
      });
      expect(major.status).toBe(400);
      expect(major.body.error.message).toMatch(/unsupported AI SDK major/);

      const answer = await api.post<ErrorBody>('/v1/ai-sdk/chat', {
        ...body,
        messages: [{ id: 'a1', role: 'assistant', parts: [] }],
      });
      expect(answer.status).toBe(400);
      expect(answer.body.error.message).toMatch(/no run is waiting/);
    });

    it("/openapi.json documents the protocol routes with the adapters' request schemas", async () => {
      const doc = await api.get<OpenApiDocument>('/openapi.json');
      expect(Object.keys(doc.body.paths)).toEqual(
        expect.arrayContaining(['/v1/ai-sdk/chat', '/v1/ai-sdk/chat/{id}/stream', '/v1/ag-ui']),
      );
      expect(doc.body.components.schemas.AiSdkChatRequest).toMatchObject({
        // eslint-disable-next-line @typescript-eslint/no-unsafe-assignment -- vitest's asymmetric matchers are typed any
        required: expect.arrayContaining(['id', 'messages', 'trigger']),
      });
      expect(doc.body.components.schemas.AgUiRunAgentInput).toMatchObject({
        // eslint-disable-next-line @typescript-eslint/no-unsafe-assignment -- vitest's asymmetric matchers are typed any
        required: expect.arrayContaining(['threadId', 'runId', 'messages']),
      });
    });

    it("a tenant cannot resume or answer another tenant's chat", async () => {
      const id = chatId('tenant');
      const transport = new ai7.DefaultChatTransport({
        api: chatUrl(),
        headers: auth,
        body: { agent: 'assistant' },
      });
      const first = await readMessage(
        CLIENTS[7],
        await transport.sendMessages({
          chatId: id,
          messages: [userMessage('deploy please')],
          trigger: 'submit-message',
          messageId: undefined,
          abortSignal: AbortSignal.timeout(TIMEOUT),
        }),
      );
      expect(partOf(first, 'deploy_service')['state']).toBe('approval-requested');
      const other = api.withKey(KEYS.b);
      const resume = await other.get(`/v1/ai-sdk/chat/${id}/stream`);
      expect(resume.status).toBe(204);
      const answer = await other.post('/v1/ai-sdk/chat', {
        id,
        trigger: 'submit-message',
        messages: [
          {
            ...first,
            parts: first.parts.map((p) =>
              p.type === 'tool-deploy_service'
                ? {
                    ...p,
                    state: 'approval-responded',
                    approval: { id: p['toolCallId'], approved: true },
                  }
                : p,
            ),
          },
        ],
      });
      expect(answer.status).toBe(400);
      // Cleanup: tenant a's run is still waiting; cancel it.
      expect((await api.post(`/v1/runs/${first.id}/cancel`)).status).toBe(202);
    });
  });
});
