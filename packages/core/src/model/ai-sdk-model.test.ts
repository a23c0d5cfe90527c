import type {
  LanguageModelV3StreamPart,
  LanguageModelV4StreamPart,
  LanguageModelV4Usage,
} from '@ai-sdk/provider';
import { simulateReadableStream } from 'ai';
import { MockLanguageModelV3, MockLanguageModelV4 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { InferenceRequest, ModelStreamPart } from '../model.ts';
import { agentWith, echoTool, runnerFor } from '../testing/fixtures.ts';
import { describeTool } from '../tools.ts';
import { AiSdkModel, INVALID_JSON_ARGUMENTS_KEY, parseArguments } from './ai-sdk-model.ts';

const usageV4 = (input: number | undefined, output: number | undefined): LanguageModelV4Usage => ({
  inputTokens: { total: input, noCache: input, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: output, text: output, reasoning: undefined },
});

function streamOf<T>(chunks: T[]): { stream: ReadableStream<T> } {
  return {
    stream: simulateReadableStream({ chunks, initialDelayInMs: null, chunkDelayInMs: null }),
  };
}

function finish(
  input = 12,
  output = 7,
  unified: 'stop' | 'tool-calls' = 'stop',
): LanguageModelV4StreamPart {
  return { type: 'finish', usage: usageV4(input, output), finishReason: { unified, raw: unified } };
}

function request(overrides: Partial<InferenceRequest> = {}): InferenceRequest {
  return {
    runId: 'run-1',
    step: 1,
    messageId: 'run-1:step:1',
    messages: [{ id: 'u1', role: 'user', content: 'hi' }],
    tools: [],
    params: {},
    ...overrides,
  };
}

async function collect(stream: AsyncIterable<ModelStreamPart>): Promise<ModelStreamPart[]> {
  const parts: ModelStreamPart[] = [];
  for await (const part of stream) parts.push(part);
  return parts;
}

describe('AiSdkModel', () => {
  it('is identified by provider and model id', () => {
    const model = new AiSdkModel(
      new MockLanguageModelV4({ provider: 'openai.chat', modelId: 'gpt-x' }),
    );
    expect(model.id).toBe('openai.chat:gpt-x');
  });

  it('maps streamed text, reasoning and tool calls; skips bookkeeping parts', async () => {
    const mock = new MockLanguageModelV4({
      doStream: streamOf<LanguageModelV4StreamPart>([
        { type: 'stream-start', warnings: [] },
        { type: 'response-metadata', id: 'resp-1', modelId: 'mock' },
        { type: 'reasoning-start', id: 'r1' },
        { type: 'reasoning-delta', id: 'r1', delta: 'thinking' },
        { type: 'reasoning-end', id: 'r1' },
        { type: 'text-start', id: 't1' },
        { type: 'text-delta', id: 't1', delta: 'Hel' },
        { type: 'text-delta', id: 't1', delta: '' },
        { type: 'text-delta', id: 't1', delta: 'lo' },
        { type: 'text-end', id: 't1' },
        { type: 'tool-input-start', id: 'call-1', toolName: 'echo' },
        { type: 'tool-input-delta', id: 'call-1', delta: '{"value":' },
        { type: 'tool-input-delta', id: 'call-1', delta: '"x"}' },
        { type: 'tool-input-end', id: 'call-1' },
        { type: 'tool-call', toolCallId: 'call-1', toolName: 'echo', input: '{"value":"x"}' },
        { type: 'tool-call', toolCallId: 'call-2', toolName: 'noargs', input: '' },
        {
          type: 'tool-call',
          toolCallId: 'call-3',
          toolName: 'web_search',
          input: '{}',
          providerExecuted: true,
        },
        finish(12, 7, 'tool-calls'),
      ]),
    });
    const parts = await collect(
      new AiSdkModel(mock).stream(request(), new AbortController().signal),
    );
    expect(parts).toEqual([
      { type: 'reasoning-delta', delta: 'thinking' },
      { type: 'text-delta', delta: 'Hel' },
      { type: 'text-delta', delta: 'lo' },
      { type: 'tool-call', id: 'call-1', name: 'echo', arguments: { value: 'x' } },
      { type: 'tool-call', id: 'call-2', name: 'noargs', arguments: {} },
      {
        type: 'finish',
        usage: { inputTokens: 12, outputTokens: 7, totalTokens: 19 },
        finishReason: 'tool-calls',
      },
    ]);
  });

  it('sends the conversation as the spec prompt: system, text, tool calls and (error) results', async () => {
    const mock = new MockLanguageModelV4({ doStream: streamOf([finish()]) });
    const req = request({
      system: 'You are terse.',
      messages: [
        { id: 'u1', role: 'user', content: 'deploy and check' },
        {
          id: 'a1',
          role: 'assistant',
          content: 'On it.',
          reasoning: 'not replayed',
          toolCalls: [
            { id: 'c1', name: 'deploy', arguments: { env: 'prod' } },
            { id: 'c2', name: 'check', arguments: {} },
            { id: 'c3', name: 'note', arguments: {} },
          ],
        },
        {
          id: 't1',
          role: 'tool',
          toolCallId: 'c1',
          toolName: 'deploy',
          content: { deployed: 'prod' },
          isError: false,
        },
        {
          id: 't2',
          role: 'tool',
          toolCallId: 'c2',
          toolName: 'check',
          content: { error: 'health check failed' },
          isError: true,
        },
        {
          id: 't3',
          role: 'tool',
          toolCallId: 'c3',
          toolName: 'note',
          content: 'plain failure',
          isError: true,
        },
        { id: 'a2', role: 'assistant', content: '', toolCalls: [] },
        { id: 'u2', role: 'user', content: 'thanks' },
        { id: 'ctx', role: 'system', content: 'context for this step' },
      ],
    });
    await collect(new AiSdkModel(mock).stream(req, new AbortController().signal));
    expect(mock.doStreamCalls).toHaveLength(1);
    expect(mock.doStreamCalls[0]!.prompt).toEqual([
      { role: 'system', content: 'You are terse.' },
      { role: 'user', content: [{ type: 'text', text: 'deploy and check' }] },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'On it.' },
          { type: 'tool-call', toolCallId: 'c1', toolName: 'deploy', input: { env: 'prod' } },
          { type: 'tool-call', toolCallId: 'c2', toolName: 'check', input: {} },
          { type: 'tool-call', toolCallId: 'c3', toolName: 'note', input: {} },
        ],
      },
      {
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            toolCallId: 'c1',
            toolName: 'deploy',
            output: { type: 'json', value: { deployed: 'prod' } },
          },
          {
            type: 'tool-result',
            toolCallId: 'c2',
            toolName: 'check',
            output: { type: 'error-json', value: { error: 'health check failed' } },
          },
          {
            type: 'tool-result',
            toolCallId: 'c3',
            toolName: 'note',
            output: { type: 'error-text', value: 'plain failure' },
          },
        ],
      },
      // the empty assistant message is dropped
      { role: 'user', content: [{ type: 'text', text: 'thanks' }] },
      { role: 'system', content: 'context for this step' },
    ]);
  });

  it('can hoist system messages to the front for providers that need it', () => {
    const model = new AiSdkModel(new MockLanguageModelV4(), { systemMessages: 'hoist' });
    const options = model.callOptions(
      request({
        system: 'base',
        messages: [
          { id: 'u1', role: 'user', content: 'hi' },
          { id: 'ctx', role: 'system', content: 'extra' },
        ],
      }),
    );
    expect(options.prompt.map((m) => m.role)).toEqual(['system', 'system', 'user']);
  });

  it('passes tools as function tools with their JSON Schema, and params as call options', async () => {
    const mock = new MockLanguageModelV4({ doStream: streamOf([finish()]) });
    const tool = describeTool(
      echoTool('lookup', {
        inputSchema: z.object({
          q: z.string().describe('query'),
          limit: z.number().int().optional(),
        }),
      }),
    );
    const signal = new AbortController().signal;
    await collect(
      new AiSdkModel(mock, { providerOptions: { openai: { store: false } } }).stream(
        request({
          tools: [tool],
          params: {
            temperature: 0.2,
            maxOutputTokens: 256,
            topP: 0.9,
            stopSequences: ['END'],
            seed: 7,
          },
        }),
        signal,
      ),
    );
    const call = mock.doStreamCalls[0]!;
    expect(call.tools).toEqual([
      {
        type: 'function',
        name: 'lookup',
        description: 'echoes its input (lookup)',
        inputSchema: tool.inputSchema,
      },
    ]);
    expect(call.tools?.[0]).toMatchObject({
      inputSchema: {
        type: 'object',
        properties: { q: { type: 'string', description: 'query' }, limit: { type: 'integer' } },
        required: ['q'],
      },
    });
    expect(call).toMatchObject({
      temperature: 0.2,
      maxOutputTokens: 256,
      topP: 0.9,
      stopSequences: ['END'],
      seed: 7,
      providerOptions: { openai: { store: false } },
    });
    expect(call.abortSignal).toBe(signal);
  });

  it('omits tools and unset params', async () => {
    const mock = new MockLanguageModelV4({ doStream: streamOf([finish()]) });
    await collect(new AiSdkModel(mock).stream(request(), new AbortController().signal));
    const call = mock.doStreamCalls[0]!;
    for (const key of ['tools', 'temperature', 'maxOutputTokens', 'topP', 'stopSequences', 'seed'])
      expect(call).not.toHaveProperty(key);
  });

  it('propagates abort: the provider sees the signal and a stalled stream is abandoned', async () => {
    let cancelled: unknown = 'not cancelled';
    const stalled = new ReadableStream<LanguageModelV4StreamPart>({
      start(controller) {
        controller.enqueue({ type: 'text-delta', id: 't', delta: 'first' });
        // never closes: a provider that ignores the abort signal
      },
      cancel(reason) {
        cancelled = reason;
      },
    });
    const mock = new MockLanguageModelV4({ doStream: { stream: stalled } });
    const controller = new AbortController();
    const stream = new AiSdkModel(mock).stream(request(), controller.signal);
    const iterator = stream[Symbol.asyncIterator]();
    expect(await iterator.next()).toEqual({
      done: false,
      value: { type: 'text-delta', delta: 'first' },
    });
    const pending = iterator.next();
    const reason = new Error('run cancelled');
    controller.abort(reason);
    await expect(pending).rejects.toBe(reason);
    expect(cancelled).toBe(reason);
    expect(mock.doStreamCalls[0]!.abortSignal).toBe(controller.signal);
  });

  it('does not call the provider when already aborted', async () => {
    const mock = new MockLanguageModelV4({ doStream: streamOf([finish()]) });
    const controller = new AbortController();
    controller.abort(new Error('too late'));
    await expect(
      collect(new AiSdkModel(mock).stream(request(), controller.signal)),
    ).rejects.toThrow('too late');
    expect(mock.doStreamCalls).toHaveLength(0);
  });

  it('maps usage; missing numbers count as 0', async () => {
    const run = async (part: LanguageModelV4StreamPart) => {
      const mock = new MockLanguageModelV4({ doStream: streamOf([part]) });
      return collect(new AiSdkModel(mock).stream(request(), new AbortController().signal));
    };
    expect(await run(finish(100, 20))).toEqual([
      {
        type: 'finish',
        usage: { inputTokens: 100, outputTokens: 20, totalTokens: 120 },
        finishReason: 'stop',
      },
    ]);
    expect(
      await run({
        type: 'finish',
        usage: usageV4(undefined, 5),
        finishReason: { unified: 'length', raw: undefined },
      }),
    ).toEqual([
      {
        type: 'finish',
        usage: { inputTokens: 0, outputTokens: 5, totalTokens: 5 },
        finishReason: 'length',
      },
    ]);
  });

  it('throws on an error part', async () => {
    const mock = new MockLanguageModelV4({
      doStream: streamOf<LanguageModelV4StreamPart>([
        { type: 'text-delta', id: 't', delta: 'partial' },
        { type: 'error', error: { message: 'overloaded', status: 529 } },
        finish(),
      ]),
    });
    const seen: ModelStreamPart[] = [];
    await expect(
      (async () => {
        for await (const part of new AiSdkModel(mock).stream(
          request(),
          new AbortController().signal,
        ))
          seen.push(part);
      })(),
    ).rejects.toThrow('model stream error: {"message":"overloaded","status":529}');
    expect(seen).toEqual([{ type: 'text-delta', delta: 'partial' }]);

    const withError = new MockLanguageModelV4({
      doStream: streamOf<LanguageModelV4StreamPart>([
        { type: 'error', error: new TypeError('boom') },
      ]),
    });
    await expect(
      collect(new AiSdkModel(withError).stream(request(), new AbortController().signal)),
    ).rejects.toThrow(TypeError);
  });

  it('keeps invalid tool input visible instead of guessing', () => {
    expect(parseArguments('{"a":1}')).toEqual({ a: 1 });
    expect(parseArguments('  ')).toEqual({});
    expect(parseArguments('{"a":')).toEqual({ [INVALID_JSON_ARGUMENTS_KEY]: '{"a":' });
    expect(parseArguments('[1,2]')).toEqual({ [INVALID_JSON_ARGUMENTS_KEY]: '[1,2]' });
    expect(parseArguments('"text"')).toEqual({ [INVALID_JSON_ARGUMENTS_KEY]: '"text"' });
    expect(parseArguments('null')).toEqual({ [INVALID_JSON_ARGUMENTS_KEY]: 'null' });
  });

  it('accepts a v3 model', async () => {
    const mock = new MockLanguageModelV3({
      provider: 'legacy',
      modelId: 'm3',
      doStream: streamOf<LanguageModelV3StreamPart>([
        { type: 'text-delta', id: 't', delta: 'hi' },
        { type: 'tool-call', toolCallId: 'c', toolName: 'echo', input: '{"value":"v"}' },
        {
          type: 'finish',
          usage: {
            inputTokens: { total: 3, noCache: 3, cacheRead: 0, cacheWrite: 0 },
            outputTokens: { total: 2, text: 2, reasoning: 0 },
          },
          finishReason: { unified: 'stop', raw: 'stop' },
        },
      ]),
    });
    const model = new AiSdkModel(mock);
    expect(model.id).toBe('legacy:m3');
    expect(
      await collect(model.stream(request({ system: 's' }), new AbortController().signal)),
    ).toEqual([
      { type: 'text-delta', delta: 'hi' },
      { type: 'tool-call', id: 'c', name: 'echo', arguments: { value: 'v' } },
      {
        type: 'finish',
        usage: { inputTokens: 3, outputTokens: 2, totalTokens: 5 },
        finishReason: 'stop',
      },
    ]);
    expect(mock.doStreamCalls[0]!.prompt[0]).toEqual({ role: 'system', content: 's' });
  });

  it('drives an agent through the InProcessRunner: one tool round, then a natural end', async () => {
    const mock = new MockLanguageModelV4({
      doStream: [
        streamOf<LanguageModelV4StreamPart>([
          { type: 'text-delta', id: 't', delta: 'Let me echo.' },
          { type: 'tool-call', toolCallId: 'call-a', toolName: 'echo', input: '{"value":"ping"}' },
          finish(10, 4, 'tool-calls'),
        ]),
        streamOf<LanguageModelV4StreamPart>([
          { type: 'text-delta', id: 't', delta: 'Echo said ' },
          { type: 'text-delta', id: 't', delta: 'ping.' },
          finish(20, 3),
        ]),
      ],
    });
    const agent = agentWith(new AiSdkModel(mock), [echoTool()], { systemPrompt: 'Be brief.' });
    const { runner } = runnerFor(agent);
    const { runId, finished } = await runner.start({
      agent: 'test-agent',
      input: [{ role: 'user', content: 'echo ping' }],
    });
    const cp = await finished;

    expect(cp.status).toBe('done');
    expect(cp.termination).toEqual({ kind: 'natural_end' });
    expect(cp.step).toBe(2);
    expect(cp.usage).toEqual({ inputTokens: 30, outputTokens: 7, totalTokens: 37 });
    expect(cp.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    expect(cp.messages[2]).toMatchObject({
      toolCallId: 'call-a',
      content: { echoed: 'ping' },
      isError: false,
    });
    expect(cp.messages[3]).toMatchObject({ role: 'assistant', content: 'Echo said ping.' });
    const deltas = runner.events(runId).filter((e) => e.type === 'text.delta');
    expect(deltas.map((e) => e.delta)).toEqual(['Let me echo.', 'Echo said ', 'ping.']);

    expect(mock.doStreamCalls).toHaveLength(2);
    expect(mock.doStreamCalls[0]!.tools?.map((t) => t.name)).toEqual(['echo']);
    expect(mock.doStreamCalls[1]!.prompt).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: [{ type: 'text', text: 'echo ping' }] },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Let me echo.' },
          { type: 'tool-call', toolCallId: 'call-a', toolName: 'echo', input: { value: 'ping' } },
        ],
      },
      {
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            toolCallId: 'call-a',
            toolName: 'echo',
            output: { type: 'json', value: { echoed: 'ping' } },
          },
        ],
      },
    ]);
  });
});
