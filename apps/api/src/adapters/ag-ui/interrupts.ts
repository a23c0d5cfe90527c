import type { AwaitSnapshot, AwaitedToolCall } from '@baton/protocol';
import type { AgUiInterrupt } from './types.ts';

/** AG-UI `Interrupt.reason` for a suspended Baton tool call. */
const TOOL_CALL_INTERRUPT_REASON = 'tool_call';

/**
 * One AG-UI interrupt per suspended call. The interrupt id IS the tool call id, so a resume entry
 * names the call it answers; Baton's own suspend reason (approval | client_tool | input), the tool
 * name, its resume mode and the ticket parameters travel in `metadata.baton`.
 */
function interruptFor(call: AwaitedToolCall): AgUiInterrupt {
  return {
    id: call.toolCallId,
    reason: TOOL_CALL_INTERRUPT_REASON,
    toolCallId: call.toolCallId,
    message: call.message,
    ...(call.responseSchema !== undefined ? { responseSchema: call.responseSchema } : {}),
    metadata: {
      baton: {
        suspendReason: call.reason,
        toolName: call.toolName,
        resumeMode: call.resumeMode,
        ...(call.parameters !== undefined ? { parameters: call.parameters } : {}),
      },
    },
  };
}

/** The interrupts a waiting run has pending (empty when it waits on nothing). */
export function interruptsFor(awaiting: AwaitSnapshot | null | undefined): AgUiInterrupt[] {
  return (awaiting?.calls ?? []).map(interruptFor);
}
