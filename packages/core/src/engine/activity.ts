import type { Checkpoint } from '@baton/protocol';
import { plan } from './plan.ts';

/**
 * Whether anything can happen to a run without outside input:
 * - `active`: a worker has something to do (start, infer, execute, apply decisions, cancel);
 * - `waiting`: nothing until a decision (or a cancel) arrives; a run holds no job then;
 * - `done`: nothing ever again.
 *
 * The one predicate every driver uses (the worker's step loop through plan(), the reconciler's
 * indexes, the API's event streams and protocol adapters), so they cannot disagree about a run
 * that waits under `batch_all_suspended` with only some calls decided.
 */
export type Activity = 'active' | 'waiting' | 'done';

export function activityOf(cp: Checkpoint): Activity {
  const next = plan(cp).kind;
  if (next === 'done') return 'done';
  return next === 'wait' ? 'waiting' : 'active';
}
