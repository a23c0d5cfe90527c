import { describe, expect, it } from 'vitest';
import { canonicalJson } from '@baton/protocol';
import { bodyHash } from './idempotency.ts';

describe('idempotency body hash', () => {
  it('ignores key order and undefined members', () => {
    expect(canonicalJson({ b: 1, a: [1, { d: 2, c: undefined }] })).toBe('{"a":[1,{"d":2}],"b":1}');
    expect(bodyHash({ a: 1, b: 2 })).toBe(bodyHash({ b: 2, a: 1 }));
    expect(bodyHash({ a: 1 })).not.toBe(bodyHash({ a: 2 }));
  });
});
