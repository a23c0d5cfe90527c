import type { RunStatus, TerminationReason, ToolCallStatus } from '@baton/protocol';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BatonError, IllegalTransitionError } from './errors.ts';
import {
  RUN_TRANSITIONS,
  assertRunTransition,
  canTransitionRun,
  deriveRunStatus,
  terminationToRunStatus,
} from './run-status.ts';

const RUN_STATUSES: readonly RunStatus[] = ['created', 'running', 'waiting', 'done'];

/** Written independently from RUN_TRANSITIONS: seed v2 plus v3's Created (which may end at once). */
const LEGAL = new Set([
  'created->running',
  'created->done',
  'running->waiting',
  'running->done',
  'waiting->running',
  'waiting->done',
]);

describe('run status transitions', () => {
  const pairs = RUN_STATUSES.flatMap((from) => RUN_STATUSES.map((to) => [from, to] as const));

  it('covers all 16 pairs and exactly 6 are legal', () => {
    expect(pairs).toHaveLength(16);
    expect(pairs.filter(([f, t]) => canTransitionRun(f, t))).toHaveLength(6);
  });

  it.each(pairs)('%s -> %s matches the expected table', (from, to) => {
    const legal = LEGAL.has(`${from}->${to}`);
    expect(canTransitionRun(from, to)).toBe(legal);
    if (legal) {
      expect(() => assertRunTransition(from, to, 'run-1')).not.toThrow();
    } else {
      let caught: unknown;
      try {
        assertRunTransition(from, to, 'run-1');
      } catch (error) {
        caught = error;
      }
      expect(caught).toBeInstanceOf(IllegalTransitionError);
      expect(caught).toBeInstanceOf(BatonError);
      const err = caught as IllegalTransitionError;
      expect(err.code).toBe('illegal_transition');
      expect(err.details).toEqual({ machine: 'run', from, to, subject: 'run-1' });
      expect(err.message).toBe(`run run-1 cannot move from ${from} to ${to}`);
    }
  });

  it('self transitions are not transitions', () => {
    for (const s of RUN_STATUSES) expect(canTransitionRun(s, s)).toBe(false);
  });

  it('done has no exits', () => {
    expect(RUN_TRANSITIONS.done).toEqual([]);
  });

  it('message omits the subject when none is given', () => {
    expect(() => assertRunTransition('done', 'running')).toThrow(
      'run cannot move from done to running',
    );
  });
});

describe('terminationToRunStatus', () => {
  const reasons: readonly [TerminationReason, RunStatus][] = [
    [{ kind: 'natural_end' }, 'done'],
    [{ kind: 'behavior_requested' }, 'done'],
    [{ kind: 'stopped', code: 'max_rounds', detail: 'x' }, 'done'],
    [{ kind: 'cancelled' }, 'done'],
    [{ kind: 'blocked', reason: 'no' }, 'done'],
    [{ kind: 'suspended' }, 'waiting'],
    [{ kind: 'error', message: 'boom' }, 'done'],
  ];

  it('lists all 7 kinds', () => {
    expect(new Set(reasons.map(([r]) => r.kind)).size).toBe(7);
  });

  it.each(reasons)('%o -> %s', (reason, status) => {
    expect(terminationToRunStatus(reason)).toBe(status);
  });
});

describe('deriveRunStatus (seed decision table)', () => {
  it.each<[ToolCallStatus[], 'running' | 'waiting' | 'done']>([
    [[], 'done'],
    [['succeeded', 'failed', 'cancelled'], 'done'],
    [['new'], 'done'],
    [['running'], 'running'],
    [['resuming'], 'running'],
    [['suspended'], 'waiting'],
    [['suspended', 'running'], 'running'],
    [['suspended', 'resuming', 'succeeded'], 'running'],
    [['succeeded', 'suspended', 'failed'], 'waiting'],
    [['cancelled', 'suspended', 'suspended'], 'waiting'],
    // Seed timeline t3..t7.
    [['suspended', 'suspended', 'succeeded'], 'waiting'],
    [['resuming', 'suspended', 'succeeded'], 'running'],
    [['succeeded', 'suspended', 'succeeded'], 'waiting'],
    [['succeeded', 'succeeded', 'succeeded'], 'done'],
  ])('%o -> %s', (statuses, expected) => {
    expect(deriveRunStatus(statuses)).toBe(expected);
  });

  it('accepts any iterable (e.g. a Set or generator)', () => {
    expect(deriveRunStatus(new Set<ToolCallStatus>(['suspended']))).toBe('waiting');
    function* gen(): Generator<ToolCallStatus> {
      yield 'succeeded';
      yield 'running';
    }
    expect(deriveRunStatus(gen())).toBe('running');
  });

  it('matches an independent statement of the table for any set of statuses', () => {
    const status = fc.constantFrom<ToolCallStatus>(
      'new',
      'running',
      'suspended',
      'resuming',
      'succeeded',
      'failed',
      'cancelled',
    );
    fc.assert(
      fc.property(fc.array(status, { maxLength: 12 }), (statuses) => {
        const anyExecuting = statuses.some((s) => s === 'running' || s === 'resuming');
        const anySuspended = statuses.includes('suspended');
        const expected = anyExecuting ? 'running' : anySuspended ? 'waiting' : 'done';
        expect(deriveRunStatus(statuses)).toBe(expected);
        // Order never matters: the run status is an aggregate.
        expect(deriveRunStatus([...statuses].reverse())).toBe(expected);
      }),
      { numRuns: 500 },
    );
  });
});
