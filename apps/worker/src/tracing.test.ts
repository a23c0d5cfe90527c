/**
 * The worker's span decorators against an application's own OpenTelemetry SDK (useGlobalTracing):
 * untraced they return what they were given; traced, a model call is a `chat` span that ends
 * whether the stream finishes, fails or is left early, and a tool's result kind sets its status.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { SpanStatusCode, context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  InMemorySpanExporter,
  SimpleSpanProcessor,
  TracerProvider,
} from '@opentelemetry/sdk-trace';
import {
  ScriptedModel,
  defineTool,
  toolResult,
  type AgentDefinition,
  type InferenceRequest,
  type ModelStreamPart,
  type ToolContext,
} from '@baton/core';
import { useGlobalTracing } from '@baton/runtime';
import { tracingActive } from '@baton/runtime/internal';
// Not public: only this test turns the process-wide flag back off (see afterAll).
import { activateTracing } from '../../../packages/runtime/src/telemetry/tracing-state.ts';
import { z } from 'zod';
import { traceAgents, tracedProcessor } from './tracing.ts';

const request: InferenceRequest = {
  runId: 'run-1',
  step: 3,
  messageId: 'm',
  messages: [{ id: 'u', role: 'user', content: 'hi' }],
  tools: [],
  params: { temperature: 0.2, maxOutputTokens: 100 },
};

const toolCtx = (toolCallId: string): ToolContext => ({
  identity: { runId: 'run-1', threadId: 't', turnId: 'x', tenantId: 'acme', agent: 'a' },
  toolCallId,
  idempotencyKey: `run-1:${toolCallId}:0`,
  attempt: 0,
  signal: new AbortController().signal,
  state: { run: {}, thread: {} },
});

let cleanedUp = 0;
const agent: AgentDefinition = {
  name: 'a',
  model: new ScriptedModel([{ text: 'one two three four', chunkSize: 4 }], {
    id: 'openai.chat:gpt-x',
  }),
  tools: [
    defineTool({
      name: 'fails',
      description: 'returns an error result',
      inputSchema: z.object({}),
      execute: () => Promise.resolve(toolResult.error('no such city')),
    }),
    defineTool({
      name: 'ok',
      description: 'succeeds',
      inputSchema: z.object({}),
      execute: () => Promise.resolve(toolResult.success({ fine: true })),
    }),
    { name: 'client_only', description: 'executed by the client', inputJsonSchema: {} },
  ],
};
const endless: AgentDefinition = {
  name: 'endless',
  model: {
    id: 'endless',
    async *stream(): AsyncIterable<ModelStreamPart> {
      try {
        for (;;) yield { type: 'text-delta', delta: 'x' };
      } finally {
        cleanedUp += 1;
      }
    },
  },
  tools: [],
};

describe('worker tracing decorators', () => {
  const exporter = new InMemorySpanExporter();
  const provider = new TracerProvider({
    spanProcessors: [new SimpleSpanProcessor({ exporter })],
  });
  afterAll(async () => {
    await provider.shutdown();
    trace.disable();
    context.disable();
    // The unit project shares modules between files (isolate: false): the files run after this
    // one in the same worker must see an untraced process again.
    activateTracing(null);
  });

  it('untraced: the same agents and the same processor come back', () => {
    expect(tracingActive()).toBe(false);
    const agents = [agent];
    expect(traceAgents(agents)).toBe(agents);
    const process = (job: { data: unknown }): Promise<string> => Promise.resolve(String(job.data));
    expect(tracedProcessor('step', process)).toBe(process);
  });

  it("with the application's own SDK: chat spans with GenAI attributes, ended in every case", async () => {
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    trace.setGlobalTracerProvider(provider);
    await useGlobalTracing();
    const [traced, tracedEndless] = traceAgents([agent, endless]);

    const parts: ModelStreamPart[] = [];
    for await (const part of traced!.model.stream(request, new AbortController().signal))
      parts.push(part);
    expect(parts.at(-1)?.type).toBe('finish');

    // The consumer leaves early (a cancel, a lost lease): the span ends, the provider cleans up.
    for await (const part of tracedEndless!.model.stream(request, new AbortController().signal))
      if (part.type === 'text-delta') break;
    expect(cleanedUp).toBe(1);

    const [chat, left] = exporter.getFinishedSpans();
    expect(chat?.name).toBe('chat gpt-x');
    expect(chat?.attributes).toMatchObject({
      'gen_ai.provider.name': 'openai',
      'gen_ai.request.model': 'gpt-x',
      'gen_ai.request.temperature': 0.2,
      'gen_ai.request.max_tokens': 100,
      'gen_ai.response.finish_reasons': ['stop'],
      'baton.run.id': 'run-1',
      'baton.step': 3,
    });
    expect(left?.name).toBe('chat endless');
    expect(left?.attributes['gen_ai.response.finish_reasons']).toBeUndefined();
    exporter.reset();

    const [fails, ok, clientOnly] = traced!.tools;
    await fails!.execute!({}, toolCtx('c1'));
    await ok!.execute!({}, toolCtx('c2'));
    expect(clientOnly!.execute).toBeUndefined();
    const [failed, succeeded] = exporter.getFinishedSpans();
    expect(failed).toMatchObject({
      name: 'execute_tool fails',
      status: { code: SpanStatusCode.ERROR, message: 'no such city' },
    });
    expect(failed?.attributes).toMatchObject({
      'gen_ai.tool.call.id': 'c1',
      'baton.tenant.id': 'acme',
      'baton.tool.result': 'error',
    });
    expect(succeeded?.status.code).toBe(SpanStatusCode.UNSET);
    expect(succeeded?.attributes['baton.tool.result']).toBe('success');
  });
});
