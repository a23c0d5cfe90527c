import type { JsonObject, Usage } from '@baton/protocol';
import type { InferenceRequest, ModelPort, ModelStreamPart } from '../model.ts';
import type { Clock } from '../ports.ts';

export interface ScriptedTurn {
  readonly text?: string;
  readonly reasoning?: string;
  readonly toolCalls?: readonly {
    readonly name: string;
    readonly arguments?: JsonObject;
    readonly id?: string;
  }[];
  readonly usage?: Partial<Usage>;
  /** Delay before each streamed chunk, through the clock (so tests can use a fake clock). */
  readonly chunkDelayMs?: number;
  /** Text is streamed in chunks of this many characters (default: whole words). */
  readonly chunkSize?: number;
}

export type Script = readonly ScriptedTurn[] | ((request: InferenceRequest) => ScriptedTurn);

function chunks(text: string, size: number | undefined): string[] {
  if (text === '') return [];
  if (size !== undefined) {
    const out: string[] = [];
    for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
    return out;
  }
  return text.match(/\S+\s*|\s+/g) ?? [text];
}

/**
 * A deterministic model for demos, tests and benchmarks. A turn is chosen by step number (the
 * last turn repeats) or by a function of the request; tool call ids are stable per run and step.
 */
export class ScriptedModel implements ModelPort {
  readonly id: string;
  private readonly script: Script;
  private readonly clock: Clock | undefined;

  constructor(script: Script, opts: { id?: string; clock?: Clock } = {}) {
    this.script = script;
    this.id = opts.id ?? 'scripted';
    this.clock = opts.clock;
  }

  turnFor(request: InferenceRequest): ScriptedTurn {
    if (typeof this.script === 'function') return this.script(request);
    const turn = this.script[Math.min(request.step - 1, this.script.length - 1)];
    return turn ?? { text: '' };
  }

  async *stream(request: InferenceRequest, signal: AbortSignal): AsyncIterable<ModelStreamPart> {
    const turn = this.turnFor(request);
    const pause = async (): Promise<void> => {
      if (turn.chunkDelayMs && this.clock) await this.clock.sleep(turn.chunkDelayMs, signal);
      signal.throwIfAborted();
    };
    for (const delta of chunks(turn.reasoning ?? '', turn.chunkSize)) {
      await pause();
      yield { type: 'reasoning-delta', delta };
    }
    for (const delta of chunks(turn.text ?? '', turn.chunkSize)) {
      await pause();
      yield { type: 'text-delta', delta };
    }
    for (const [i, call] of (turn.toolCalls ?? []).entries()) {
      await pause();
      yield {
        type: 'tool-call',
        id: call.id ?? `call_${request.step}_${i + 1}`,
        name: call.name,
        arguments: call.arguments ?? {},
      };
    }
    const input = turn.usage?.inputTokens ?? 10;
    const output = turn.usage?.outputTokens ?? Math.max(1, Math.ceil((turn.text ?? '').length / 4));
    yield {
      type: 'finish',
      usage: {
        inputTokens: input,
        outputTokens: output,
        totalTokens: turn.usage?.totalTokens ?? input + output,
      },
      finishReason: (turn.toolCalls?.length ?? 0) > 0 ? 'tool-calls' : 'stop',
    };
  }
}
