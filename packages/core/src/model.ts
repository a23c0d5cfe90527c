import type { JsonObject, Message, ToolCallRef, ToolDescriptor, Usage } from '@baton/protocol';
import { ZERO_USAGE, addUsage } from '@baton/protocol';

export interface InferenceParams {
  readonly temperature?: number;
  readonly maxOutputTokens?: number;
  readonly topP?: number;
  readonly stopSequences?: readonly string[];
  readonly seed?: number;
}

export interface InferenceRequest {
  readonly runId: string;
  readonly step: number;
  /** Id the assistant message of this step will carry. */
  readonly messageId: string;
  readonly system?: string;
  readonly messages: readonly Message[];
  readonly tools: readonly ToolDescriptor[];
  readonly params: InferenceParams;
}

export type ModelStreamPart =
  | { readonly type: 'text-delta'; readonly delta: string }
  | { readonly type: 'reasoning-delta'; readonly delta: string }
  | {
      readonly type: 'tool-call';
      readonly id: string;
      readonly name: string;
      readonly arguments: JsonObject;
    }
  | { readonly type: 'finish'; readonly usage: Usage; readonly finishReason: string };

/** The model port: a streaming call that honors the abort signal. */
export interface ModelPort {
  readonly id: string;
  stream(request: InferenceRequest, signal: AbortSignal): AsyncIterable<ModelStreamPart>;
}

export interface InferenceResponse {
  readonly text: string;
  readonly reasoning?: string;
  readonly toolCalls: readonly ToolCallRef[];
  readonly usage: Usage;
  readonly finishReason: string;
}

/** Accumulates stream parts into the response the engine commits. */
export class InferenceAccumulator {
  private text = '';
  private reasoning = '';
  private readonly toolCalls: ToolCallRef[] = [];
  private usage: Usage = ZERO_USAGE;
  private finishReason = 'unknown';

  push(part: ModelStreamPart): void {
    switch (part.type) {
      case 'text-delta':
        this.text += part.delta;
        break;
      case 'reasoning-delta':
        this.reasoning += part.delta;
        break;
      case 'tool-call':
        this.toolCalls.push({ id: part.id, name: part.name, arguments: part.arguments });
        break;
      case 'finish':
        this.usage = addUsage(this.usage, part.usage);
        this.finishReason = part.finishReason;
        break;
    }
  }

  result(): InferenceResponse {
    return {
      text: this.text,
      ...(this.reasoning ? { reasoning: this.reasoning } : {}),
      toolCalls: [...this.toolCalls],
      usage: this.usage,
      finishReason: this.finishReason,
    };
  }
}
