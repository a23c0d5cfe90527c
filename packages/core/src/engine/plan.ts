import type { Checkpoint } from '@baton/protocol';
import { applicableDecisions, roundState } from './round-state.ts';

/** What a driver must do next, derived from the checkpoint alone (so any process can continue). */
export type Plan =
  | { readonly kind: 'start' }
  | { readonly kind: 'step' }
  | { readonly kind: 'infer' }
  | { readonly kind: 'execute' }
  | { readonly kind: 'resume' }
  | { readonly kind: 'finish_step' }
  | { readonly kind: 'cancel' }
  | { readonly kind: 'wait' }
  | { readonly kind: 'done' };

export function plan(cp: Checkpoint): Plan {
  if (cp.status === 'done') return { kind: 'done' };
  if (cp.cancelRequested) return { kind: 'cancel' };
  if (cp.status === 'created') return { kind: 'start' };
  if (cp.status === 'waiting')
    return applicableDecisions(cp).length > 0 ? { kind: 'resume' } : { kind: 'wait' };
  switch (cp.phase) {
    case 'run_start':
    case 'step_end':
    case 'run_end':
      return { kind: 'step' };
    case 'step_start':
    case 'before_inference':
      return { kind: 'infer' };
    case 'after_inference':
    case 'tool_gate':
    case 'before_tool_execute':
    case 'after_tool_execute': {
      if (applicableDecisions(cp).length > 0) return { kind: 'resume' };
      const state = roundState(cp);
      if (state === 'executing') return { kind: 'execute' };
      // A committed round that still shows waiting was interrupted before it could say so.
      return state === 'waiting' ? { kind: 'execute' } : { kind: 'finish_step' };
    }
  }
}
