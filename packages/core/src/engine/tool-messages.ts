import type {
  Checkpoint,
  JsonValue,
  ToolCallState,
  ToolMessage,
  ToolOutcome,
} from '@baton/protocol';

/** Baton's id for the tool message that answers a call; the protocol adapters show it too. */
export function toolMessageId(runId: string, callId: string): string {
  return `${runId}:tool:${callId}`;
}

/**
 * The content the model sees for a tool outcome (and the protocol adapters show): the output, with
 * its warning beside it when there is one; for a failure or cancellation, `{ error }`.
 */
export function toolResultContent(outcome: ToolOutcome): JsonValue {
  if (outcome.status === 'succeeded') {
    const output = outcome.output ?? null;
    return outcome.warning === undefined ? output : { output, warning: outcome.warning };
  }
  return { error: outcome.error ?? outcome.status };
}

/** The tool result the model sees; failures and cancellations are errors it can react to. */
export function toolMessageFor(cp: Pick<Checkpoint, 'identity'>, call: ToolCallState): ToolMessage {
  const outcome = call.outcome ?? { status: 'cancelled' as const, error: 'no result' };
  const content = toolResultContent(outcome);
  return {
    id: toolMessageId(cp.identity.runId, call.id),
    role: 'tool',
    toolCallId: call.id,
    toolName: call.name,
    content,
    isError: outcome.status !== 'succeeded',
  };
}
