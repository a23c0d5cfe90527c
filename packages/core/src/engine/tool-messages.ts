import type { Checkpoint, JsonValue, ToolCallState, ToolMessage } from '@baton/protocol';

/** Baton's id for the tool message that answers a call; the protocol adapters show it too. */
export function toolMessageId(runId: string, callId: string): string {
  return `${runId}:tool:${callId}`;
}

/** The tool result the model sees; failures and cancellations are errors it can react to. */
export function toolMessageFor(cp: Pick<Checkpoint, 'identity'>, call: ToolCallState): ToolMessage {
  const outcome = call.outcome ?? { status: 'cancelled' as const, error: 'no result' };
  let content: JsonValue;
  if (outcome.status === 'succeeded') {
    const output = outcome.output ?? null;
    content = outcome.warning === undefined ? output : { output, warning: outcome.warning };
  } else {
    content = { error: outcome.error ?? outcome.status };
  }
  return {
    id: toolMessageId(cp.identity.runId, call.id),
    role: 'tool',
    toolCallId: call.id,
    toolName: call.name,
    content,
    isError: outcome.status !== 'succeeded',
  };
}
