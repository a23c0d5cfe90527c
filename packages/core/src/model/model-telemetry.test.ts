import type { LanguageModelV4StreamPart } from '@ai-sdk/provider';
import { simulateReadableStream } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import type { InferenceRequest } from '../model.ts';
import { AiSdkModel } from './ai-sdk-model.ts';
import type { AiSdkTelemetry, TelemetrySpan, TelemetryTracer } from './model-telemetry.ts';

interface RecordedSpan {
  name: string;
  attributes: Record<string, string | number | boolean>;
  exceptions: Error[];
  status?: { code: number; message?: string };
  ended: boolean;
}

function recordingTracer(): { tracer: TelemetryTracer; spans: RecordedSpan[] } {
  const spans: RecordedSpan[] = [];
  return {
    spans,
    tracer: {
      startSpan(name, options): TelemetrySpan {
        const span: RecordedSpan = {
          name,
          attributes: { ...options?.attributes },
          exceptions: [],
          ended: false,
        };
        spans.push(span);
        return {
          setAttributes: (a) => Object.assign(span.attributes, a),
          recordException: (e) => span.exceptions.push(e),
          setStatus: (s) => (span.status = s),
          end: () => (span.ended = true),
        };
      },
    },
  };
}

const request: InferenceRequest = {
  runId: 'run-1',
  step: 2,
  messageId: 'run-1:step:2',
  messages: [{ id: 'u1', role: 'user', content: 'secret question' }],
  tools: [],
  params: {},
};

function model(parts: LanguageModelV4StreamPart[]): MockLanguageModelV4 {
  return new MockLanguageModelV4({
    provider: 'acme',
    modelId: 'acme-1',
    doStream: async () => ({
      stream: simulateReadableStream({
        chunks: parts,
        initialDelayInMs: null,
        chunkDelayInMs: null,
      }),
    }),
  });
}

const answer: LanguageModelV4StreamPart[] = [
  { type: 'text-delta', id: 't', delta: 'forty-two' },
  {
    type: 'finish',
    usage: {
      inputTokens: { total: 5, noCache: 5, cacheRead: undefined, cacheWrite: undefined },
      outputTokens: { total: 3, text: 3, reasoning: undefined },
    },
    finishReason: { unified: 'stop', raw: 'stop' },
  },
];

async function drain(m: AiSdkModel): Promise<void> {
  for await (const part of m.stream(request, new AbortController().signal)) void part;
}

describe('AI SDK telemetry settings on provider calls', () => {
  it('records one span per call with the AI SDK names, function id, metadata and usage', async () => {
    const { tracer, spans } = recordingTracer();
    const telemetry: AiSdkTelemetry = {
      isEnabled: true,
      functionId: 'support-bot',
      metadata: { tenant: 't1' },
      tracer,
    };
    await drain(new AiSdkModel(model(answer), { telemetry }));
    expect(spans).toHaveLength(1);
    expect(spans[0]).toMatchObject({
      name: 'ai.streamText.doStream',
      ended: true,
      attributes: {
        'ai.model.provider': 'acme',
        'ai.model.id': 'acme-1',
        'ai.telemetry.functionId': 'support-bot',
        'ai.telemetry.metadata.tenant': 't1',
        'ai.response.text': 'forty-two',
        'ai.response.finishReason': 'stop',
        'ai.usage.inputTokens': 5,
        'ai.usage.outputTokens': 3,
      },
    });
    expect(String(spans[0]?.attributes['ai.prompt.messages'])).toContain('secret question');
  });

  it('leaves inputs and outputs out when asked to', async () => {
    const { tracer, spans } = recordingTracer();
    await drain(
      new AiSdkModel(model(answer), {
        telemetry: { isEnabled: true, recordInputs: false, recordOutputs: false, tracer },
      }),
    );
    expect(spans[0]?.attributes).not.toHaveProperty('ai.prompt.messages');
    expect(spans[0]?.attributes).not.toHaveProperty('ai.response.text');
  });

  it('marks a failed call and still ends the span', async () => {
    const { tracer, spans } = recordingTracer();
    const failing = model([{ type: 'error', error: new Error('rate limited') }]);
    await expect(
      drain(new AiSdkModel(failing, { telemetry: { isEnabled: true, tracer } })),
    ).rejects.toThrow('rate limited');
    expect(spans[0]).toMatchObject({ ended: true, status: { code: 2, message: 'rate limited' } });
    expect(spans[0]?.exceptions.map((e) => e.message)).toEqual(['rate limited']);
  });

  it('records nothing unless enabled', async () => {
    const { tracer, spans } = recordingTracer();
    await drain(new AiSdkModel(model(answer), { telemetry: { tracer } }));
    expect(spans).toHaveLength(0);
  });
});
