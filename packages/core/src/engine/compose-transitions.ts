import type { Transition } from './engine.ts';

/**
 * `b` applied after `a` as one transition: b's checkpoint, a's events then b's, the last trigger
 * that is set. Pure steps that follow each other with no effect in between (finish a step, begin
 * the next) can so be written in one commit: nobody could have observed the state between them,
 * and a conflict drops both, just as it would have dropped the second.
 */
export function composeTransitions(a: Transition, b: Transition): Transition {
  return {
    checkpoint: b.checkpoint,
    events: [...a.events, ...b.events],
    trigger: b.trigger ?? a.trigger,
    next: b.next,
  };
}
