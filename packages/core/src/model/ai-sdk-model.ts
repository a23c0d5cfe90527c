import type {
  LanguageModelV3,
  LanguageModelV3CallOptions,
  LanguageModelV3StreamPart,
  LanguageModelV4,
  LanguageModelV4CallOptions,
  LanguageModelV4FunctionTool,
  LanguageModelV4Message,
  LanguageModelV4Prompt,
  LanguageModelV4StreamPart,
  LanguageModelV4ToolResultOutput,
  LanguageModelV4ToolResultPart,
} from '@ai-sdk/provider';
import type { JsonObject, JsonValue, Message, ToolDescriptor, Usage } from '@baton/protocol';
import type { InferenceParams, InferenceRequest, ModelPort, ModelStreamPart } from '../model.ts';
import { traced, type AiSdkTelemetry } from './model-telemetry.ts';

/** A Vercel AI SDK language model: the current spec (v4) or the previous one (v3). */
export type AiSdkLanguageModel = LanguageModelV4 | LanguageModelV3;

export interface AiSdkModelOptions {
  /**
   * Where system messages found among the conversation (e.g. hook-added context, appended after
   * the history) go. 'in-place' keeps their position; 'hoist' moves them to the front, after
   * request.system, for providers that accept system messages only before the conversation.
   */
  readonly systemMessages?: 'in-place' | 'hoist';
  /** Passed through on every call (provider-specific settings). */
  readonly providerOptions?: LanguageModelV4CallOptions['providerOptions'];
  readonly headers?: Record<string, string | undefined>;
  /** Generation settings for every call (e.g. from an agents file); a run's params win. */
  readonly settings?: InferenceParams;
  /** The AI SDK's `experimental_telemetry` settings, applied to every provider call. */
  readonly telemetry?: AiSdkTelemetry;
}

type StreamPart = LanguageModelV4StreamPart | LanguageModelV3StreamPart;

/** Key that marks arguments the model sent as text that is not a JSON object. */
export const INVALID_JSON_ARGUMENTS_KEY = '__invalid_json';

/**
 * Adapts any AI SDK LanguageModel (v4 or v3 spec) to Baton's model port: the conversation
 * becomes the spec's prompt, tools become function tools with their JSON Schema, and the
 * provider's stream becomes ModelStreamParts.
 *
 * Provider-executed tool calls and results are not Baton's to run and are skipped; reasoning
 * from earlier steps is not replayed (Baton keeps no provider metadata such as signatures).
 */
export class AiSdkModel implements ModelPort {
  readonly id: string;
  readonly model: AiSdkLanguageModel;
  private readonly options: AiSdkModelOptions;

  constructor(model: AiSdkLanguageModel, options: AiSdkModelOptions = {}) {
    this.model = model;
    this.id = `${model.provider}:${model.modelId}`;
    this.options = options;
  }

  /** The call options a request maps to (exposed for inspection and tests). */
  callOptions(request: InferenceRequest, signal?: AbortSignal): LanguageModelV4CallOptions {
    const params = { ...this.options.settings, ...request.params };
    const tools = request.tools.map(toFunctionTool);
    return {
      prompt: toPrompt(request, this.options.systemMessages ?? 'in-place'),
      ...(tools.length > 0 ? { tools } : {}),
      ...(params.maxOutputTokens !== undefined ? { maxOutputTokens: params.maxOutputTokens } : {}),
      ...(params.temperature !== undefined ? { temperature: params.temperature } : {}),
      ...(params.topP !== undefined ? { topP: params.topP } : {}),
      ...(params.stopSequences !== undefined ? { stopSequences: [...params.stopSequences] } : {}),
      ...(params.seed !== undefined ? { seed: params.seed } : {}),
      ...(this.options.providerOptions !== undefined
        ? { providerOptions: this.options.providerOptions }
        : {}),
      ...(this.options.headers !== undefined ? { headers: this.options.headers } : {}),
      ...(signal !== undefined ? { abortSignal: signal } : {}),
    };
  }

  stream(request: InferenceRequest, signal: AbortSignal): AsyncIterable<ModelStreamPart> {
    const options = this.callOptions(request, signal);
    return traced(
      this.options.telemetry,
      this.model,
      request,
      options.prompt,
      this.streamCall(options, signal),
    );
  }

  private async *streamCall(
    options: LanguageModelV4CallOptions,
    signal: AbortSignal,
  ): AsyncIterable<ModelStreamPart> {
    signal.throwIfAborted();
    const { stream } =
      this.model.specificationVersion === 'v4'
        ? await this.model.doStream(options)
        : // The v3 prompt, tool and option shapes Baton produces are the same as v4's.
          await this.model.doStream(options as LanguageModelV3CallOptions);
    const reader = (stream as ReadableStream<StreamPart>).getReader();
    // A provider that ignores the signal must not keep us waiting on its next chunk.
    let onAbort: (() => void) | undefined;
    const aborted = new Promise<never>((_, reject) => {
      onAbort = () => reject(signal.reason as Error);
      signal.addEventListener('abort', onAbort, { once: true });
    });
    aborted.catch(() => undefined);
    let done = false;
    try {
      for (;;) {
        signal.throwIfAborted();
        const next = await Promise.race([reader.read(), aborted]);
        signal.throwIfAborted();
        if (next.done) {
          done = true;
          return;
        }
        const part = toModelPart(next.value);
        if (part) yield part;
      }
    } finally {
      if (onAbort) signal.removeEventListener('abort', onAbort);
      // Stop the provider when we leave early (abort, error part, consumer stopped).
      if (!done)
        await reader.cancel(signal.aborted ? signal.reason : undefined).catch(() => undefined);
      reader.releaseLock();
    }
  }
}

function toModelPart(part: StreamPart): ModelStreamPart | null {
  switch (part.type) {
    case 'text-delta':
      return part.delta === '' ? null : { type: 'text-delta', delta: part.delta };
    case 'reasoning-delta':
      return part.delta === '' ? null : { type: 'reasoning-delta', delta: part.delta };
    case 'tool-call':
      if (part.providerExecuted === true) return null;
      return {
        type: 'tool-call',
        id: part.toolCallId,
        name: part.toolName,
        arguments: parseArguments(part.input),
      };
    case 'finish':
      return {
        type: 'finish',
        usage: toUsage(part.usage),
        finishReason: finishReasonOf(part.finishReason),
      };
    case 'error':
      throw toError(part.error);
    default:
      // text/reasoning start and end, tool-input streaming (the tool-call part carries the final
      // input), stream-start, response-metadata, sources, files, raw chunks, provider results.
      return null;
  }
}

/** Tool input arrives as JSON text; anything but a JSON object is kept visibly invalid. */
export function parseArguments(input: string): JsonObject {
  if (input.trim() === '') return {};
  try {
    const value: unknown = JSON.parse(input);
    if (value !== null && typeof value === 'object' && !Array.isArray(value))
      return value as JsonObject;
  } catch {
    // fall through
  }
  // The tool's input schema rejects this, so the model sees a validation error it can fix.
  return { [INVALID_JSON_ARGUMENTS_KEY]: input };
}

/** Token counts: the v3/v4 object form ({ total }) or a plain number (older specs); missing is 0. */
function tokens(value: unknown): number {
  if (typeof value === 'number') return Number.isFinite(value) && value > 0 ? Math.round(value) : 0;
  if (value !== null && typeof value === 'object' && 'total' in value) return tokens(value.total);
  return 0;
}

function toUsage(usage: unknown): Usage {
  const u = (usage ?? {}) as {
    inputTokens?: unknown;
    outputTokens?: unknown;
    totalTokens?: unknown;
  };
  const inputTokens = tokens(u.inputTokens);
  const outputTokens = tokens(u.outputTokens);
  const total = tokens(u.totalTokens);
  return { inputTokens, outputTokens, totalTokens: total > 0 ? total : inputTokens + outputTokens };
}

function finishReasonOf(reason: unknown): string {
  if (typeof reason === 'string') return reason;
  if (
    reason !== null &&
    typeof reason === 'object' &&
    'unified' in reason &&
    typeof reason.unified === 'string'
  )
    return reason.unified;
  return 'unknown';
}

function toError(error: unknown): Error {
  if (error instanceof Error) return error;
  if (typeof error === 'string') return new Error(error);
  let detail: string;
  try {
    detail = JSON.stringify(error) ?? String(error);
  } catch {
    detail = String(error);
  }
  return new Error(`model stream error: ${detail}`);
}

function toFunctionTool(tool: ToolDescriptor): LanguageModelV4FunctionTool {
  return {
    type: 'function',
    name: tool.name,
    description: tool.description,
    inputSchema: tool.inputSchema,
  };
}

function toToolOutput(content: JsonValue, isError: boolean): LanguageModelV4ToolResultOutput {
  if (!isError) return { type: 'json', value: content };
  return typeof content === 'string'
    ? { type: 'error-text', value: content }
    : { type: 'error-json', value: content };
}

function toPrompt(
  request: InferenceRequest,
  systemMessages: 'in-place' | 'hoist',
): LanguageModelV4Prompt {
  const head: LanguageModelV4Message[] = [];
  const body: LanguageModelV4Message[] = [];
  if (request.system !== undefined && request.system !== '')
    head.push({ role: 'system', content: request.system });
  for (const message of request.messages) {
    if (message.role === 'system' && systemMessages === 'hoist')
      head.push({ role: 'system', content: message.content });
    else appendMessage(body, message);
  }
  return [...head, ...body];
}

/** Appends one message; consecutive tool results share one tool message, as the AI SDK sends them. */
function appendMessage(prompt: LanguageModelV4Message[], message: Message): void {
  switch (message.role) {
    case 'system':
      prompt.push({ role: 'system', content: message.content });
      return;
    case 'user':
      prompt.push({ role: 'user', content: [{ type: 'text', text: message.content }] });
      return;
    case 'assistant': {
      const content: Extract<LanguageModelV4Message, { role: 'assistant' }>['content'] = [];
      if (message.content !== '') content.push({ type: 'text', text: message.content });
      for (const call of message.toolCalls)
        content.push({
          type: 'tool-call',
          toolCallId: call.id,
          toolName: call.name,
          input: call.arguments,
        });
      if (content.length > 0) prompt.push({ role: 'assistant', content });
      return;
    }
    case 'tool': {
      const part: LanguageModelV4ToolResultPart = {
        type: 'tool-result',
        toolCallId: message.toolCallId,
        toolName: message.toolName,
        output: toToolOutput(message.content, message.isError),
      };
      const last = prompt.at(-1);
      if (last?.role === 'tool')
        prompt[prompt.length - 1] = { ...last, content: [...last.content, part] };
      else prompt.push({ role: 'tool', content: [part] });
      return;
    }
  }
}
