import type { StatePatch, StateScopes } from '@baton/protocol';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BatonError, StatePatchError } from './errors.ts';
import {
  applyPatches,
  buildKeyRegistry,
  dropEphemeral,
  initialState,
  mergeRoundPatches,
  persistentThreadState,
  type StateKeyDefinition,
} from './state-keys.ts';

const DEFS: readonly StateKeyDefinition[] = [
  { key: 'owner', scope: 'run', merge: 'exclusive' },
  { key: 'plan', scope: 'run', merge: 'exclusive', persistent: true },
  { key: 'total', scope: 'run', merge: 'commutative', reducer: 'sum', initial: 0 },
  { key: 'peak', scope: 'run', merge: 'commutative', reducer: 'max' },
  { key: 'low', scope: 'run', merge: 'commutative', reducer: 'min' },
  { key: 'log', scope: 'run', merge: 'commutative', reducer: 'append' },
  {
    key: 'tags',
    scope: 'thread',
    merge: 'commutative',
    reducer: 'union',
    persistent: true,
    initial: [],
  },
  { key: 'profile', scope: 'thread', merge: 'exclusive', persistent: true },
  { key: 'scratch', scope: 'thread', merge: 'exclusive', initial: 'blank' },
];
const registry = buildKeyRegistry(DEFS);
const EMPTY: StateScopes = { run: {}, thread: {} };

function expectPatchError(fn: () => unknown, message: string | RegExp): void {
  let caught: unknown;
  try {
    fn();
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(StatePatchError);
  expect(caught).toBeInstanceOf(BatonError);
  expect((caught as StatePatchError).code).toBe('validation_failed');
  expect((caught as Error).message).toMatch(message);
}

describe('buildKeyRegistry', () => {
  it('indexes every definition by key', () => {
    expect([...registry.keys()]).toEqual(DEFS.map((d) => d.key));
    expect(registry.get('tags')?.reducer).toBe('union');
  });

  it('rejects a key registered twice', () => {
    expectPatchError(
      () =>
        buildKeyRegistry([
          { key: 'a', scope: 'run', merge: 'exclusive' },
          { key: 'a', scope: 'thread', merge: 'exclusive' },
        ]),
      'state key "a" is registered twice',
    );
  });

  it('rejects a commutative key without a reducer', () => {
    expectPatchError(
      () => buildKeyRegistry([{ key: 'n', scope: 'run', merge: 'commutative' }]),
      'commutative state key "n" needs a reducer',
    );
  });

  it('accepts an empty registry', () => {
    expect(buildKeyRegistry([]).size).toBe(0);
  });
});

describe('initialState', () => {
  it('seeds initial values and carries only persistent thread keys', () => {
    const state = initialState(registry, {
      tags: ['a'],
      profile: { n: 1 },
      scratch: 'carried?',
      unknown: 1,
    });
    expect(state).toEqual({
      run: { total: 0 },
      thread: { tags: ['a'], profile: { n: 1 }, scratch: 'blank' },
    });
  });

  it('falls back to the initial value when the thread has nothing', () => {
    expect(initialState(registry, {})).toEqual({
      run: { total: 0 },
      thread: { tags: [], scratch: 'blank' },
    });
  });
});

describe('applyPatches: reducers', () => {
  it('sum adds numbers, starting from the first contribution', () => {
    const s = applyPatches(registry, EMPTY, [
      { op: 'reduce', key: 'total', value: 2 },
      { op: 'reduce', key: 'total', value: 5 },
      { op: 'reduce', key: 'total', value: -1 },
    ]);
    expect(s.run.total).toBe(6);
  });

  it('max and min keep the extreme', () => {
    const s = applyPatches(registry, EMPTY, [
      { op: 'reduce', key: 'peak', value: 3 },
      { op: 'reduce', key: 'peak', value: 9 },
      { op: 'reduce', key: 'peak', value: 4 },
      { op: 'reduce', key: 'low', value: 3 },
      { op: 'reduce', key: 'low', value: -2 },
      { op: 'reduce', key: 'low', value: 4 },
    ]);
    expect(s.run).toEqual({ peak: 9, low: -2 });
  });

  it('numeric reducers reject non-numbers', () => {
    for (const key of ['total', 'peak', 'low']) {
      expectPatchError(
        () => applyPatches(registry, EMPTY, [{ op: 'reduce', key, value: '1' }]),
        `state key "${key}" reduces numbers`,
      );
    }
  });

  it('a numeric reducer over a non-number current value restarts from the contribution', () => {
    const s = applyPatches(registry, { run: { total: 'junk' }, thread: {} }, [
      { op: 'reduce', key: 'total', value: 4 },
    ]);
    expect(s.run.total).toBe(4);
  });

  it('append pushes each contribution as one element (arrays included)', () => {
    const s = applyPatches(registry, EMPTY, [
      { op: 'reduce', key: 'log', value: 'a' },
      { op: 'reduce', key: 'log', value: ['b', 'c'] },
      { op: 'reduce', key: 'log', value: 'a' },
    ]);
    expect(s.run.log).toEqual(['a', ['b', 'c'], 'a']);
  });

  it('union adds unseen items (structural equality), flattening one array level', () => {
    const s = applyPatches(registry, { run: {}, thread: { tags: ['x'] } }, [
      { op: 'reduce', key: 'tags', value: ['y', 'x', 'y'] },
      { op: 'reduce', key: 'tags', value: 'z' },
      { op: 'reduce', key: 'tags', value: [{ k: 1 }] },
      { op: 'reduce', key: 'tags', value: [{ k: 1 }, 'x'] },
    ]);
    expect(s.thread.tags).toEqual(['x', 'y', 'z', { k: 1 }]);
    expect(s.run).toEqual({});
  });

  it('reducers over a missing list start empty', () => {
    expect(
      applyPatches(registry, EMPTY, [{ op: 'reduce', key: 'tags', value: 'a' }]).thread.tags,
    ).toEqual(['a']);
    expect(
      applyPatches(registry, { run: { log: 5 }, thread: {} }, [
        { op: 'reduce', key: 'log', value: 1 },
      ]).run.log,
    ).toEqual([1]);
  });

  it('sum is order independent (commutative) for any contributions', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: -1000, max: 1000 }), { maxLength: 20 }), (values) => {
        const patches: StatePatch[] = values.map((value) => ({
          op: 'reduce',
          key: 'total',
          value,
        }));
        const forward = applyPatches(registry, { run: { total: 0 }, thread: {} }, patches);
        const backward = applyPatches(
          registry,
          { run: { total: 0 }, thread: {} },
          [...patches].reverse(),
        );
        const expected = values.reduce((a, b) => a + b, 0);
        expect(forward.run.total).toBe(expected);
        expect(backward.run.total).toBe(expected);
      }),
    );
  });
});

describe('applyPatches: ops and errors', () => {
  it('set and delete exclusive keys in their scope', () => {
    const s1 = applyPatches(registry, EMPTY, [
      { op: 'set', key: 'owner', value: 'alice' },
      { op: 'set', key: 'profile', value: { theme: 'dark' } },
    ]);
    expect(s1).toEqual({ run: { owner: 'alice' }, thread: { profile: { theme: 'dark' } } });
    const s2 = applyPatches(registry, s1, [
      { op: 'set', key: 'owner', value: 'bob' },
      { op: 'delete', key: 'profile' },
    ]);
    expect(s2).toEqual({ run: { owner: 'bob' }, thread: {} });
    // Inputs are not mutated.
    expect(s1).toEqual({ run: { owner: 'alice' }, thread: { profile: { theme: 'dark' } } });
  });

  it('no patches returns the same state object', () => {
    const s = { run: { owner: 'a' }, thread: {} };
    expect(applyPatches(registry, s, [])).toBe(s);
  });

  it('deleting a missing key is a no-op', () => {
    expect(applyPatches(registry, EMPTY, [{ op: 'delete', key: 'owner' }])).toEqual(EMPTY);
  });

  it('reduce on an exclusive key throws', () => {
    expectPatchError(
      () => applyPatches(registry, EMPTY, [{ op: 'reduce', key: 'owner', value: 1 }]),
      'state key "owner" is exclusive: use set/delete, not reduce',
    );
  });

  it('set or delete on a commutative key throws', () => {
    expectPatchError(
      () => applyPatches(registry, EMPTY, [{ op: 'set', key: 'total', value: 1 }]),
      'state key "total" is commutative: use reduce, not set',
    );
    expectPatchError(
      () => applyPatches(registry, EMPTY, [{ op: 'delete', key: 'tags' }]),
      'state key "tags" is commutative: use reduce, not delete',
    );
  });

  it('an unknown key throws StatePatchError and leaves the input untouched', () => {
    const before = { run: { owner: 'a' }, thread: {} };
    expectPatchError(
      () =>
        applyPatches(registry, before, [
          { op: 'set', key: 'owner', value: 'b' },
          { op: 'set', key: 'nope', value: 1 },
        ]),
      'state key "nope" is not registered',
    );
    expect(before).toEqual({ run: { owner: 'a' }, thread: {} });
  });
});

describe('mergeRoundPatches', () => {
  it('the earlier writer of an exclusive key wins; the later call is discarded as a unit', () => {
    const merged = mergeRoundPatches(registry, [
      { callId: 'c1', patches: [{ op: 'set', key: 'owner', value: 'one' }] },
      {
        callId: 'c2',
        patches: [
          { op: 'reduce', key: 'total', value: 10 },
          { op: 'set', key: 'owner', value: 'two' },
          { op: 'set', key: 'plan', value: 'p2' },
        ],
      },
      { callId: 'c3', patches: [{ op: 'set', key: 'plan', value: 'p3' }] },
    ]);
    expect(merged.patches).toEqual([
      { op: 'set', key: 'owner', value: 'one' },
      { op: 'set', key: 'plan', value: 'p3' },
    ]);
    expect(merged.conflicts).toEqual([{ key: 'owner', winner: 'c1', rejected: ['c2'] }]);
    expect([...merged.rejectedCalls]).toEqual(['c2']);
  });

  it('order of the input decides the winner', () => {
    const a = { callId: 'a', patches: [{ op: 'set', key: 'owner', value: 'A' }] as StatePatch[] };
    const b = { callId: 'b', patches: [{ op: 'delete', key: 'owner' }] as StatePatch[] };
    expect(mergeRoundPatches(registry, [a, b]).conflicts).toEqual([
      { key: 'owner', winner: 'a', rejected: ['b'] },
    ]);
    expect(mergeRoundPatches(registry, [b, a]).conflicts).toEqual([
      { key: 'owner', winner: 'b', rejected: ['a'] },
    ]);
    expect(mergeRoundPatches(registry, [b, a]).patches).toEqual([{ op: 'delete', key: 'owner' }]);
  });

  it('collects several losers of one key and several keys', () => {
    const merged = mergeRoundPatches(registry, [
      {
        callId: 'c1',
        patches: [
          { op: 'set', key: 'owner', value: 1 },
          { op: 'set', key: 'profile', value: 1 },
        ],
      },
      { callId: 'c2', patches: [{ op: 'set', key: 'owner', value: 2 }] },
      {
        callId: 'c3',
        patches: [
          { op: 'set', key: 'owner', value: 3 },
          { op: 'set', key: 'profile', value: 3 },
        ],
      },
    ]);
    expect(merged.conflicts).toEqual([
      { key: 'owner', winner: 'c1', rejected: ['c2', 'c3'] },
      { key: 'profile', winner: 'c1', rejected: ['c3'] },
    ]);
    expect([...merged.rejectedCalls].sort()).toEqual(['c2', 'c3']);
    expect(merged.patches).toHaveLength(2);
  });

  it('a rejected call does not claim its other keys', () => {
    const merged = mergeRoundPatches(registry, [
      { callId: 'c1', patches: [{ op: 'set', key: 'owner', value: 1 }] },
      {
        callId: 'c2',
        patches: [
          { op: 'set', key: 'owner', value: 2 },
          { op: 'set', key: 'plan', value: 2 },
        ],
      },
      { callId: 'c3', patches: [{ op: 'set', key: 'plan', value: 3 }] },
    ]);
    expect(merged.conflicts.map((c) => c.key)).toEqual(['owner']);
    expect(merged.patches).toEqual([
      { op: 'set', key: 'owner', value: 1 },
      { op: 'set', key: 'plan', value: 3 },
    ]);
  });

  it('one call writing the same exclusive key twice does not conflict with itself', () => {
    const merged = mergeRoundPatches(registry, [
      {
        callId: 'c1',
        patches: [
          { op: 'set', key: 'owner', value: 1 },
          { op: 'set', key: 'owner', value: 2 },
        ],
      },
    ]);
    expect(merged.conflicts).toEqual([]);
    expect(merged.patches).toHaveLength(2);
  });

  it('commutative keys never conflict (property)', () => {
    const commutative = fc.constantFrom<StatePatch>(
      { op: 'reduce', key: 'total', value: 1 },
      { op: 'reduce', key: 'peak', value: 2 },
      { op: 'reduce', key: 'log', value: 'x' },
      { op: 'reduce', key: 'tags', value: ['t'] },
    );
    fc.assert(
      fc.property(
        fc.array(fc.array(commutative, { maxLength: 5 }), { maxLength: 8 }),
        (perCallPatches) => {
          const perCall = perCallPatches.map((patches, i) => ({ callId: `c${i}`, patches }));
          const merged = mergeRoundPatches(registry, perCall);
          expect(merged.conflicts).toEqual([]);
          expect(merged.rejectedCalls.size).toBe(0);
          expect(merged.patches).toEqual(perCallPatches.flat());
        },
      ),
    );
  });

  it('the merged result never holds two calls writing one exclusive key (property)', () => {
    const patch = fc.oneof(
      fc.record({
        op: fc.constant('set' as const),
        key: fc.constantFrom('owner', 'plan', 'profile'),
        value: fc.integer(),
      }),
      fc.record({
        op: fc.constant('reduce' as const),
        key: fc.constant('total'),
        value: fc.integer(),
      }),
    );
    fc.assert(
      fc.property(
        fc.array(fc.array(patch, { maxLength: 4 }), { maxLength: 6 }),
        (perCallPatches) => {
          const perCall = perCallPatches.map((patches, i) => ({ callId: `c${i}`, patches }));
          const merged = mergeRoundPatches(registry, perCall);
          const writers = new Map<string, Set<string>>();
          for (const { callId, patches } of perCall) {
            if (merged.rejectedCalls.has(callId)) continue;
            for (const p of patches)
              if (p.key !== 'total')
                (writers.get(p.key) ?? writers.set(p.key, new Set()).get(p.key)!).add(callId);
          }
          for (const set of writers.values()) expect(set.size).toBe(1);
          // Accepted calls contribute all of their patches, in order.
          expect(merged.patches).toEqual(
            perCall.filter((c) => !merged.rejectedCalls.has(c.callId)).flatMap((c) => c.patches),
          );
          // Every rejected call appears in some conflict, and the first call is never rejected.
          for (const id of merged.rejectedCalls)
            expect(merged.conflicts.some((c) => c.rejected.includes(id))).toBe(true);
          expect(merged.rejectedCalls.has('c0')).toBe(false);
        },
      ),
    );
  });
});

describe('persistentThreadState and dropEphemeral', () => {
  const state: StateScopes = {
    run: { owner: 'a', plan: 'keep', total: 3 },
    thread: { tags: ['t'], profile: { p: 1 }, scratch: 'gone', stray: 1 },
  };

  it('persistentThreadState keeps only persistent thread keys', () => {
    expect(persistentThreadState(registry, state)).toEqual({ tags: ['t'], profile: { p: 1 } });
  });

  it('dropEphemeral keeps persistent run keys and the thread scope as is', () => {
    const dropped = dropEphemeral(registry, state);
    expect(dropped).toEqual({ run: { plan: 'keep' }, thread: state.thread });
    expect(state.run).toEqual({ owner: 'a', plan: 'keep', total: 3 });
  });

  it('empty registry drops everything', () => {
    const empty = buildKeyRegistry([]);
    expect(persistentThreadState(empty, state)).toEqual({});
    expect(dropEphemeral(empty, state).run).toEqual({});
  });
});
