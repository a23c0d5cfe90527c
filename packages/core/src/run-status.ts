import type { RunStatus, TerminationReason, ToolCallStatus } from '@baton/protocol';
import { IllegalTransitionError } from './errors.ts';

/**
 * Legal run transitions (seed v3). The mapped type makes a missing status a compile error.
 * Self-transitions are not listed: a commit that keeps the status is not a transition.
 */
export const RUN_TRANSITIONS: { readonly [S in RunStatus]: readonly RunStatus[] } = {
  created: ['running', 'done'],
  running: ['waiting', 'done'],
  waiting: ['running', 'done'],
  done: [],
};

export function canTransitionRun(from: RunStatus, to: RunStatus): boolean {
  return RUN_TRANSITIONS[from].includes(to);
}

export function assertRunTransition(from: RunStatus, to: RunStatus, runId?: string): void {
  if (!canTransitionRun(from, to)) throw new IllegalTransitionError('run', from, to, runId);
}

/** Only Suspended keeps a run alive (Waiting); every other reason is terminal. */
export function terminationToRunStatus(reason: TerminationReason): RunStatus {
  return reason.kind === 'suspended' ? 'waiting' : 'done';
}

/**
 * The seed's derive_run_status: any Running/Resuming call means the round is executing; otherwise
 * any Suspended call means the run waits; otherwise every call is settled and the step is complete
 * ('done' here means "round complete", not "run finished").
 */
export function deriveRunStatus(
  statuses: Iterable<ToolCallStatus>,
): 'running' | 'waiting' | 'done' {
  let hasSuspended = false;
  for (const status of statuses) {
    if (status === 'running' || status === 'resuming') return 'running';
    if (status === 'suspended') hasSuspended = true;
  }
  return hasSuspended ? 'waiting' : 'done';
}
