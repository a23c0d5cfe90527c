/**
 * A local OpenAI-compatible Chat Completions server for tests: real HTTP, real SSE, driven by a
 * script of replies popped one per request, so the AI SDK providers run exactly as they would
 * against OpenAI, Ollama or vLLM.
 *
 *   const llm = await startOpenAiServer([{ status: 429, retryAfter: '1' }, { text: 'hi' }]);
 *   // providers: { local: { type: openai-compatible, baseURL: llm.baseURL } }
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export type ScriptedReply =
  /** Streams the text in chunks, then finish_reason stop. */
  | { readonly text: string }
  /** Streams tool calls (arguments split in two chunks each), then finish_reason tool_calls. */
  | { readonly toolCalls: readonly { readonly name: string; readonly args: object }[] }
  /** An error status with an OpenAI-style body; retryAfter becomes the Retry-After header. */
  | { readonly status: number; readonly message?: string; readonly retryAfter?: string }
  /** Sends headers and nothing more (a stuck provider: only a timeout ends it). */
  | { readonly hang: true }
  /** Streams some text, then drops the connection mid-stream. */
  | { readonly partialThenDrop: string };

export interface RecordedRequest {
  readonly at: number;
  readonly body: {
    readonly model: string;
    readonly messages: readonly { role: string; content?: unknown; tool_calls?: unknown }[];
    readonly tools?: readonly { function: { name: string; parameters: object } }[];
    readonly temperature?: number;
    readonly [key: string]: unknown;
  };
  readonly authorization: string | undefined;
}

export interface OpenAiServer {
  readonly baseURL: string;
  readonly requests: RecordedRequest[];
  /** Appends replies to the script. */
  push(...replies: ScriptedReply[]): void;
  close(): Promise<void>;
}

export async function startOpenAiServer(script: ScriptedReply[] = []): Promise<OpenAiServer> {
  const queue = [...script];
  const requests: RecordedRequest[] = [];
  const open = new Set<ServerResponse>();
  let calls = 0;

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    if (!req.url?.endsWith('/chat/completions')) {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: `no route ${req.url}` } }));
      return;
    }
    requests.push({
      at: Date.now(),
      body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as RecordedRequest['body'],
      authorization: req.headers.authorization,
    });
    const reply = queue.shift();
    calls += 1;
    const id = `chatcmpl-${calls}`;
    if (!reply) {
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: 'the test script has no reply left' } }));
      return;
    }
    if ('status' in reply) {
      res.writeHead(reply.status, {
        'content-type': 'application/json',
        ...(reply.retryAfter !== undefined ? { 'retry-after': reply.retryAfter } : {}),
      });
      res.end(
        JSON.stringify({
          error: { message: reply.message ?? `scripted ${reply.status}`, type: 'scripted' },
        }),
      );
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    res.flushHeaders();
    if ('hang' in reply) return;
    const send = (choice: object | null, extra: object = {}): void => {
      const chunk = {
        id,
        object: 'chat.completion.chunk',
        created: Math.floor(Date.now() / 1000),
        model: 'scripted',
        choices: choice ? [{ index: 0, ...choice }] : [],
        ...extra,
      };
      res.write(`data: ${JSON.stringify(chunk)}\n\n`);
    };
    if ('partialThenDrop' in reply) {
      send({ delta: { role: 'assistant', content: reply.partialThenDrop }, finish_reason: null });
      await new Promise((r) => setTimeout(r, 50));
      res.socket?.destroy();
      return;
    }
    if ('text' in reply) {
      const words = reply.text.match(/\S+\s*/g) ?? [reply.text];
      send({ delta: { role: 'assistant', content: '' }, finish_reason: null });
      for (const word of words) send({ delta: { content: word }, finish_reason: null });
      send({ delta: {}, finish_reason: 'stop' });
    } else {
      send({ delta: { role: 'assistant', content: null }, finish_reason: null });
      reply.toolCalls.forEach((call, index) => {
        const args = JSON.stringify(call.args);
        const half = Math.floor(args.length / 2);
        send({
          delta: {
            tool_calls: [
              {
                index,
                id: `call_${calls}_${index}`,
                type: 'function',
                function: { name: call.name, arguments: args.slice(0, half) },
              },
            ],
          },
          finish_reason: null,
        });
        send({
          delta: { tool_calls: [{ index, function: { arguments: args.slice(half) } }] },
          finish_reason: null,
        });
      });
      send({ delta: {}, finish_reason: 'tool_calls' });
    }
    send(null, { usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 } });
    res.end('data: [DONE]\n\n');
  };

  const server = createServer((req, res) => {
    open.add(res);
    res.on('close', () => open.delete(res));
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(500);
      res.end(String(error));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    requests,
    push: (...replies) => queue.push(...replies),
    close: async () => {
      for (const res of open) res.socket?.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
