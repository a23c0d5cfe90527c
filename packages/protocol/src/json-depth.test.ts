import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { jsonDepth } from './json-depth.ts';

const bytes = (text: string): Uint8Array => new TextEncoder().encode(text);

/** The recursive definition the scanner must agree with. */
function depthOf(value: unknown): number {
  if (value === null || typeof value !== 'object') return 0;
  const children = Object.values(value as Record<string, unknown>);
  return 1 + children.reduce<number>((max, v) => Math.max(max, depthOf(v)), 0);
}

describe('jsonDepth', () => {
  it('agrees with a recursive walk of the parsed value for any JSON', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 8 }), (value) => {
        expect(jsonDepth(bytes(JSON.stringify(value)))).toBe(depthOf(value));
      }),
    );
  });

  it('ignores brackets and escaped quotes inside strings', () => {
    expect(jsonDepth(bytes('{"a":"[[[{{\\\\\\"[["}'))).toBe(1);
    expect(jsonDepth(bytes('"\\"[["'))).toBe(0);
  });

  it('measures 5,000 levels without recursion and can stop early', () => {
    const deep = `${'['.repeat(5_000)}${']'.repeat(5_000)}`;
    expect(jsonDepth(bytes(deep))).toBe(5_000);
    expect(jsonDepth(bytes(deep), 64)).toBe(65);
  });
});
