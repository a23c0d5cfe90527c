import { describe, expect, it } from 'vitest';
import { formatTreeCursor, parseTreeCursor } from './tree-events.ts';

describe('the composite cursor of a run-tree stream', () => {
  it('round-trips: root seq first, then each descendant by its id suffix', () => {
    const cursor = parseTreeCursor('r1', '31;s1c0=12;s1c0.s1c0=7');
    expect([...cursor]).toEqual([
      ['r1', 31],
      ['r1.s1c0', 12],
      ['r1.s1c0.s1c0', 7],
    ]);
    expect(formatTreeCursor('r1', cursor)).toBe('31;s1c0=12;s1c0.s1c0=7');
  });

  it('a plain seq (or nothing) is the root alone', () => {
    expect([...parseTreeCursor('r', '5')]).toEqual([['r', 5]]);
    expect([...parseTreeCursor('r', undefined)]).toEqual([['r', 0]]);
    expect([...parseTreeCursor('r', '  ')]).toEqual([['r', 0]]);
  });

  it.each(['x', '-1', '3;', '3;a', '3;a=b', '3;a b=1', `3;${'a'.repeat(121)}=1`])(
    'refuses %j with bad_request',
    (value) => {
      expect(() => parseTreeCursor('r', value)).toThrow(
        expect.objectContaining({ code: 'bad_request' }) as Error,
      );
    },
  );
});
