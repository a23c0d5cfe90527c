import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { own } from './own.ts';

/** Names every plain object answers to through its prototype. */
const PROTOTYPE_KEYS = Object.getOwnPropertyNames(Object.prototype);

describe('own', () => {
  it('never returns a prototype member for any key', () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.constantFrom(...PROTOTYPE_KEYS), fc.string()),
        fc.dictionary(fc.string(), fc.integer()),
        (key, record) => {
          const expected = Object.hasOwn(record, key) ? record[key] : undefined;
          expect(own(record, key)).toBe(expected);
        },
      ),
    );
  });

  it('finds own properties, including ones named like prototype members', () => {
    const record = JSON.parse('{"__proto__": 1, "constructor": 2}') as Record<string, number>;
    expect(own(record, '__proto__')).toBe(1);
    expect(own(record, 'constructor')).toBe(2);
    expect(own(record, 'toString')).toBeUndefined();
  });
});
