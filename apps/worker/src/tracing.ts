/**
 * The worker's spans. BullMQ's integration makes the consumer span of each step and tool job (a
 * child of the producer span whose context the job's opts carry); this file adds Baton's
 * attributes to it, a `chat <model>` span per model call (OpenTelemetry GenAI conventions) and an
 * `execute_tool <name>` span per tool execution. It decorates the agents' model and tools, so
 * the engine and the processors know nothing of it; untraced, nothing is decorated.
 */
import {
  SpanKind,
  SpanStatusCode,
  context,
  createContextKey,
  trace,
  type Attributes,
  type Span,
} from '@opentelemetry/api';
import {
  normalizeToolReturn,
  type AgentDefinition,
  type InferenceRequest,
  type ModelPort,
  type ModelStreamPart,
  type ToolContext,
  type ToolDefinition,
} from '@baton/core';
import { batonTracer, tracingActive } from '@baton/runtime/internal';
import { DelayedError, RateLimitError, WaitingChildrenError, WaitingError } from 'bullmq';

/** How a processor tells BullMQ to park the job (wait for children, retry later): not failures. */
function parksTheJob(error: unknown): boolean {
  return (
    error instanceof DelayedError ||
    error instanceof WaitingChildrenError ||
    error instanceof WaitingError ||
    error instanceof RateLimitError
  );
}

/** The job's baton.* attributes, for the spans made inside it (tenant, job id). */
const JOB_ATTRIBUTES = createContextKey('baton.job-attributes');

function jobAttributes(): Attributes {
  return (context.active().getValue(JOB_ATTRIBUTES) as Attributes | undefined) ?? {};
}

/** Marks the span failed with the error's message and records it as an exception event. */
function failSpan(span: Span, error: unknown): void {
  const e = error instanceof Error ? error : new Error(String(error));
  span.recordException(e);
  span.setAttribute('error.type', (e as { code?: unknown }).code?.toString() ?? e.name);
  span.setStatus({ code: SpanStatusCode.ERROR, message: e.message });
}

/** `openai.chat:gpt-4o` (an AI SDK model) → provider `openai`, model `gpt-4o`; else Baton's own. */
function modelNames(id: string): { provider: string; model: string } {
  const at = id.indexOf(':');
  if (at < 0) return { provider: 'baton', model: id };
  return { provider: id.slice(0, at).split('.')[0] ?? 'baton', model: id.slice(at + 1) };
}

/** A model port whose every call is a `chat <model>` CLIENT span. */
class TracedModel implements ModelPort {
  readonly id: string;
  private readonly inner: ModelPort;
  constructor(inner: ModelPort) {
    this.inner = inner;
    this.id = inner.id;
  }

  async *stream(request: InferenceRequest, signal: AbortSignal): AsyncIterable<ModelStreamPart> {
    const tracer = batonTracer();
    if (!tracer) {
      yield* this.inner.stream(request, signal);
      return;
    }
    const { provider, model } = modelNames(this.inner.id);
    const p = request.params;
    const attributes: Attributes = {
      ...jobAttributes(),
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': provider,
      'gen_ai.system': provider,
      'gen_ai.request.model': model,
      'baton.run.id': request.runId,
      'baton.step': request.step,
      ...(p.temperature === undefined ? {} : { 'gen_ai.request.temperature': p.temperature }),
      ...(p.maxOutputTokens === undefined
        ? {}
        : { 'gen_ai.request.max_tokens': p.maxOutputTokens }),
      ...(p.topP === undefined ? {} : { 'gen_ai.request.top_p': p.topP }),
      ...(p.seed === undefined ? {} : { 'gen_ai.request.seed': p.seed }),
    };
    const span = tracer.startSpan(`chat ${model}`, { kind: SpanKind.CLIENT, attributes });
    // The provider's own work (the AI SDK's spans, its HTTP calls) nests under this span.
    const inside = trace.setSpan(context.active(), span);
    const parts = context.with(inside, () => this.inner.stream(request, signal));
    const iterator = parts[Symbol.asyncIterator]();
    let finished = false;
    let toolCalls = 0;
    try {
      for (;;) {
        const next = await context.with(inside, () => iterator.next());
        if (next.done) break;
        const part = next.value;
        if (part.type === 'tool-call') toolCalls += 1;
        else if (part.type === 'finish')
          span.setAttributes({
            'gen_ai.response.finish_reasons': [part.finishReason],
            'gen_ai.usage.input_tokens': part.usage.inputTokens,
            'gen_ai.usage.output_tokens': part.usage.outputTokens,
          });
        yield part;
      }
      finished = true;
      span.setAttribute('baton.tool_calls', toolCalls);
    } catch (error) {
      finished = true;
      failSpan(span, error);
      throw error;
    } finally {
      // The consumer left early (abort, lost lease): let the provider's stream clean up too.
      if (!finished) await iterator.return?.().catch(() => undefined);
      span.end();
    }
  }
}

function toolSpan<T>(tool: ToolDefinition, ctx: ToolContext, run: () => Promise<T>): Promise<T> {
  const tracer = batonTracer();
  if (!tracer) return run();
  const attributes: Attributes = {
    ...jobAttributes(),
    'gen_ai.operation.name': 'execute_tool',
    'gen_ai.tool.name': tool.name,
    'gen_ai.tool.call.id': ctx.toolCallId,
    'gen_ai.tool.type': 'function',
    'baton.run.id': ctx.identity.runId,
    'baton.tenant.id': ctx.identity.tenantId,
    'baton.agent': ctx.identity.agent,
    'baton.tool.attempt': ctx.attempt,
  };
  return tracer.startActiveSpan(
    `execute_tool ${tool.name}`,
    { kind: SpanKind.INTERNAL, attributes },
    async (span) => {
      try {
        const value = await run();
        const { result } = normalizeToolReturn(value as Parameters<typeof normalizeToolReturn>[0]);
        span.setAttribute('baton.tool.result', result.kind);
        // A failed call is the model's to handle, but it is still a failed operation.
        if (result.kind === 'error')
          span.setStatus({ code: SpanStatusCode.ERROR, message: result.message });
        return value;
      } catch (error) {
        failSpan(span, error);
        throw error;
      } finally {
        span.end();
      }
    },
  );
}

function tracedTool(tool: ToolDefinition): ToolDefinition {
  const execute = tool.execute;
  if (!execute) return tool;
  return { ...tool, execute: (args, ctx) => toolSpan(tool, ctx, () => execute(args, ctx)) };
}

/** The agents with traced models and tools while tracing; the same array otherwise. */
export function traceAgents(agents: readonly AgentDefinition[]): readonly AgentDefinition[] {
  if (!tracingActive()) return agents;
  return agents.map((agent) => ({
    ...agent,
    model: new TracedModel(agent.model),
    tools: agent.tools.map(tracedTool),
  }));
}

type Processor<J, R> = (job: J, token?: string) => Promise<R>;

/**
 * The job processor, adding Baton's attributes to BullMQ's consumer span (the active span when
 * BullMQ calls it) and marking that span failed when the job throws. Untraced: `process` itself.
 */
export function tracedProcessor<
  J extends { readonly id?: string | undefined; readonly data: unknown },
  R,
>(kind: 'step' | 'tool', process: Processor<J, R>): Processor<J, R> {
  if (!tracingActive()) return process;
  return async (job, token) => {
    const data = (job.data ?? {}) as Record<string, unknown>;
    const attributes: Attributes = { 'baton.job.kind': kind };
    if (job.id !== undefined) attributes['baton.job.id'] = job.id;
    for (const [key, name] of [
      ['runId', 'baton.run.id'],
      ['tenantId', 'baton.tenant.id'],
      ['reason', 'baton.job.reason'],
      ['expectedVersion', 'baton.run.version'],
      ['step', 'baton.step'],
      ['toolCallId', 'gen_ai.tool.call.id'],
      ['attempt', 'baton.tool.attempt'],
    ] as const) {
      const v = data[key];
      if (typeof v === 'string' || typeof v === 'number') attributes[name] = v;
    }
    const span = trace.getActiveSpan();
    span?.setAttributes(attributes);
    const inherited: Attributes = {};
    if (attributes['baton.tenant.id'] !== undefined)
      inherited['baton.tenant.id'] = attributes['baton.tenant.id'];
    try {
      return await context.with(context.active().setValue(JOB_ATTRIBUTES, inherited), () =>
        process(job, token),
      );
    } catch (error) {
      if (!span) throw error;
      if (parksTheJob(error)) span.setAttribute('baton.job.parked', (error as Error).name);
      else failSpan(span, error);
      throw error;
    }
  };
}
