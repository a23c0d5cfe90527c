import type { ToolCallStatus } from '@baton/protocol';
import { IllegalTransitionError } from './errors.ts';

/** Legal tool-call transitions (seed layer 2); the mapped type forces every status to be listed. */
export const TOOL_CALL_TRANSITIONS: { readonly [S in ToolCallStatus]: readonly ToolCallStatus[] } =
  {
    // New -> Succeeded/Failed covers gate outcomes that never execute (SetResult, Block, invalid args);
    // New -> Cancelled covers calls a cancelled or stopped run never reached (Sequential's tail).
    new: ['running', 'suspended', 'succeeded', 'failed', 'cancelled'],
    running: ['suspended', 'succeeded', 'failed', 'cancelled'],
    suspended: ['resuming', 'cancelled'],
    resuming: ['running', 'suspended', 'succeeded', 'failed', 'cancelled'],
    succeeded: [],
    failed: [],
    cancelled: [],
  };

export const TERMINAL_TOOL_CALL_STATUSES: ReadonlySet<ToolCallStatus> = new Set([
  'succeeded',
  'failed',
  'cancelled',
]);

export function isTerminalCallStatus(status: ToolCallStatus): boolean {
  return TERMINAL_TOOL_CALL_STATUSES.has(status);
}

export function canTransitionToolCall(from: ToolCallStatus, to: ToolCallStatus): boolean {
  return TOOL_CALL_TRANSITIONS[from].includes(to);
}

export function assertToolCallTransition(
  from: ToolCallStatus,
  to: ToolCallStatus,
  callId?: string,
): void {
  if (!canTransitionToolCall(from, to))
    throw new IllegalTransitionError('tool_call', from, to, callId);
}
