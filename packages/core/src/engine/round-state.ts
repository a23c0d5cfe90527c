import type { Checkpoint, Decision, ToolCallState } from '@baton/protocol';
import { own } from '../own.ts';
import { deriveRunStatus } from '../run-status.ts';

export type RoundState = 'executing' | 'waiting' | 'complete';

function calls(cp: Checkpoint): ToolCallState[] {
  return cp.round.flatMap((id) => {
    const call = own(cp.calls, id);
    return call ? [call] : [];
  });
}

/**
 * The seed's derive_run_status plus what it leaves implicit: a round with New calls still has
 * work, except in Sequential mode behind a suspended call (calls 3 and 4 wait for call 2).
 */
export function roundState(cp: Checkpoint): RoundState {
  const list = calls(cp);
  const derived = deriveRunStatus(list.map((c) => c.status));
  if (derived === 'running') return 'executing';
  const hasNew = list.some((c) => c.status === 'new');
  if (derived === 'waiting') {
    return hasNew && cp.executionMode !== 'sequential' ? 'executing' : 'waiting';
  }
  return hasNew ? 'executing' : 'complete';
}

function suspendedCalls(cp: Checkpoint): ToolCallState[] {
  return calls(cp).filter((c) => c.status === 'suspended');
}

/**
 * Which inbox decisions the RESUME gate may apply now. Sequential consumes them only when no call
 * is executing; Immediate applies each as it comes; BatchAllSuspended waits for every suspended
 * call of the round to have one.
 */
export function applicableDecisions(cp: Checkpoint): Decision[] {
  if (cp.inbox.length === 0 || cp.status === 'done' || cp.status === 'created') return [];
  const suspended = suspendedCalls(cp);
  const forSuspended = cp.inbox.filter((d) => suspended.some((c) => c.id === d.toolCallId));
  if (forSuspended.length === 0) return [];
  if (cp.executionMode === 'sequential') {
    return calls(cp).some((c) => c.status === 'running' || c.status === 'resuming')
      ? []
      : forSuspended;
  }
  if (cp.replayPolicy === 'batch_all_suspended') {
    const decided = new Set(forSuspended.map((d) => d.toolCallId));
    return suspended.every((c) => decided.has(c.id)) ? forSuspended : [];
  }
  return forSuspended;
}
