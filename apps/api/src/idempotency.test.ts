import { describe, expect, it } from 'vitest';
import { bodyHash, canonicalJson } from './idempotency.ts';
import { SseConnectionLimiter } from './limits.ts';

describe('idempotency body hash', () => {
  it('ignores key order and undefined members', () => {
    expect(canonicalJson({ b: 1, a: [1, { d: 2, c: undefined }] })).toBe('{"a":[1,{"d":2}],"b":1}');
    expect(bodyHash({ a: 1, b: 2 })).toBe(bodyHash({ b: 2, a: 1 }));
    expect(bodyHash({ a: 1 })).not.toBe(bodyHash({ a: 2 }));
  });
});

describe('SSE connection limiter', () => {
  it('counts per tenant, throws rate_limited over the limit, releases once', () => {
    const limiter = new SseConnectionLimiter(1);
    const release = limiter.acquire('t');
    expect(() => limiter.acquire('t')).toThrow(
      expect.objectContaining({ code: 'rate_limited', retryAfterSeconds: 5 }),
    );
    expect(() => limiter.acquire('u')).not.toThrow();
    release();
    release();
    expect(limiter.count('t')).toBe(0);
  });
});
