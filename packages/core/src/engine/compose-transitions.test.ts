import { describe, expect, it } from 'vitest';
import type { Checkpoint } from '@baton/protocol';
import { composeTransitions } from './compose-transitions.ts';
import type { Transition } from './engine.ts';

const cp = (step: number): Checkpoint => ({ step }) as unknown as Checkpoint;

describe('composeTransitions', () => {
  const a: Transition = {
    checkpoint: cp(1),
    events: [{ type: 'step.finished', step: 1 } as never],
    trigger: 'tool_results_committed',
    next: { kind: 'step' } as never,
  };
  const b: Transition = {
    checkpoint: cp(2),
    events: [{ type: 'step.started', step: 2 } as never],
    trigger: null,
    next: { kind: 'infer' } as never,
  };

  it('keeps the later checkpoint and plan, and every event in order', () => {
    const t = composeTransitions(a, b);
    expect(t.checkpoint).toBe(b.checkpoint);
    expect(t.next).toBe(b.next);
    expect(t.events).toEqual([...a.events, ...b.events]);
  });

  it('takes the last trigger that is set', () => {
    expect(composeTransitions(a, b).trigger).toBe(a.trigger);
    expect(composeTransitions(b, a).trigger).toBe(a.trigger);
    expect(composeTransitions(b, b).trigger).toBeNull();
  });
});
