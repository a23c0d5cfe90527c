import type { InferenceRequest, ModelStreamPart } from '../model.ts';

/** The slice of an OpenTelemetry span Baton writes to (structural: core depends on no OTel). */
export interface TelemetrySpan {
  setAttributes(attributes: Record<string, string | number | boolean>): unknown;
  recordException(exception: Error): void;
  setStatus(status: { code: number; message?: string }): unknown;
  end(): void;
}

/** An OpenTelemetry Tracer, e.g. `trace.getTracer('my-app')` from @opentelemetry/api. */
export interface TelemetryTracer {
  startSpan(
    name: string,
    options?: { attributes?: Record<string, string | number | boolean> },
  ): TelemetrySpan;
}

/**
 * The AI SDK's telemetry settings (`experimental_telemetry` of streamText), for the provider
 * calls Baton makes itself: one span per call, named and attributed as the AI SDK names its
 * `ai.streamText.doStream` span, so existing dashboards and exporters keep working.
 */
export interface AiSdkTelemetry {
  readonly isEnabled?: boolean;
  readonly functionId?: string;
  readonly metadata?: Readonly<Record<string, string | number | boolean>>;
  /** Record the prompt (default true; off for sensitive conversations). */
  readonly recordInputs?: boolean;
  /** Record the answer text and tool calls (default true). */
  readonly recordOutputs?: boolean;
  readonly tracer?: TelemetryTracer;
}

const SPAN_STATUS_ERROR = 2;

/**
 * Wraps one provider call's stream in a span; the stream is passed through unchanged. Without
 * isEnabled or a tracer nothing is recorded (as in the AI SDK, telemetry is opt-in).
 */
export async function* traced(
  telemetry: AiSdkTelemetry | undefined,
  model: { readonly provider: string; readonly modelId: string },
  request: InferenceRequest,
  prompt: unknown,
  parts: AsyncIterable<ModelStreamPart>,
): AsyncIterable<ModelStreamPart> {
  const tracer = telemetry?.isEnabled === true ? telemetry.tracer : undefined;
  if (!tracer || !telemetry) {
    yield* parts;
    return;
  }
  const attributes: Record<string, string | number | boolean> = {
    'operation.name': `ai.streamText.doStream${telemetry.functionId ? ` ${telemetry.functionId}` : ''}`,
    'ai.operationId': 'ai.streamText.doStream',
    'ai.model.provider': model.provider,
    'ai.model.id': model.modelId,
    'gen_ai.system': model.provider,
    'gen_ai.request.model': model.modelId,
    'baton.run.id': request.runId,
    'baton.step': request.step,
  };
  if (telemetry.functionId) {
    attributes['resource.name'] = telemetry.functionId;
    attributes['ai.telemetry.functionId'] = telemetry.functionId;
  }
  for (const [key, value] of Object.entries(telemetry.metadata ?? {}))
    attributes[`ai.telemetry.metadata.${key}`] = value;
  if (telemetry.recordInputs !== false) {
    attributes['ai.prompt.messages'] = JSON.stringify(prompt);
    if (request.tools.length > 0)
      attributes['ai.prompt.tools'] = JSON.stringify(request.tools.map((t) => t.name));
  }
  const span = tracer.startSpan('ai.streamText.doStream', { attributes });
  let text = '';
  const toolCalls: { id: string; name: string; arguments: unknown }[] = [];
  try {
    for await (const part of parts) {
      if (part.type === 'text-delta') text += part.delta;
      else if (part.type === 'tool-call')
        toolCalls.push({ id: part.id, name: part.name, arguments: part.arguments });
      else if (part.type === 'finish')
        span.setAttributes({
          'ai.response.finishReason': part.finishReason,
          'gen_ai.response.finish_reasons': part.finishReason,
          'ai.usage.inputTokens': part.usage.inputTokens,
          'ai.usage.outputTokens': part.usage.outputTokens,
          'ai.usage.totalTokens': part.usage.totalTokens,
          'gen_ai.usage.input_tokens': part.usage.inputTokens,
          'gen_ai.usage.output_tokens': part.usage.outputTokens,
        });
      yield part;
    }
    if (telemetry.recordOutputs !== false) {
      span.setAttributes({ 'ai.response.text': text });
      if (toolCalls.length > 0)
        span.setAttributes({ 'ai.response.toolCalls': JSON.stringify(toolCalls) });
    }
  } catch (error) {
    const e = error instanceof Error ? error : new Error(String(error));
    span.recordException(e);
    span.setStatus({ code: SPAN_STATUS_ERROR, message: e.message });
    throw error;
  } finally {
    span.end();
  }
}
