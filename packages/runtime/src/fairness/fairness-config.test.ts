import { describe, expect, it } from 'vitest';
import { DEFAULT_WINDOW, FairnessPolicy, parseFairness } from './fairness-config.ts';

describe('BATON_FAIRNESS', () => {
  it('unset: admission on, every key a window of DEFAULT_WINDOW; off: no admission', () => {
    for (const raw of [undefined, ' ', '{}']) {
      const policy = new FairnessPolicy(parseFairness(raw));
      expect(policy.enabled).toBe(true);
      expect(policy.limits('any', 'key')).toEqual({
        keyLimit: DEFAULT_WINDOW,
        tenantLimit: Infinity,
        weight: 1,
      });
    }
    expect(new FairnessPolicy(parseFairness('off')).enabled).toBe(false);
    expect(new FairnessPolicy(parseFairness(' OFF ')).enabled).toBe(false);
    expect(new FairnessPolicy(parseFairness('{"window":0}')).enabled).toBe(false);
  });

  it("a key's window is its weight × window, capped by its tenant's maxRunsPerKey", () => {
    const policy = new FairnessPolicy(
      parseFairness(
        JSON.stringify({
          window: 8,
          tenants: {
            '*': { maxRuns: 100 },
            acme: { maxRuns: 20, maxRunsPerKey: 12, weights: { gold: 2, slow: 0.01, '*': 0.5 } },
          },
        }),
      ),
    );
    expect(policy.enabled).toBe(true);
    expect(policy.limits('acme', 'gold')).toEqual({ keyLimit: 12, tenantLimit: 20, weight: 2 });
    expect(policy.limits('acme', 'slow')).toEqual({ keyLimit: 1, tenantLimit: 20, weight: 0.01 });
    expect(policy.limits('acme', 'other')).toEqual({ keyLimit: 4, tenantLimit: 20, weight: 0.5 });
    expect(policy.limits('globex', 'globex')).toEqual({
      keyLimit: 8,
      tenantLimit: 100,
      weight: 1,
    });
  });

  it('tenant limits without a window: admission on, keys without a window', () => {
    const policy = new FairnessPolicy(
      parseFairness('{"window":0,"tenants":{"acme":{"maxRuns":3}}}'),
    );
    expect(policy.enabled).toBe(true);
    expect(policy.limits('acme', 'k')).toEqual({ keyLimit: Infinity, tenantLimit: 3, weight: 1 });
    expect(policy.limits('other', 'k')).toEqual({
      keyLimit: Infinity,
      tenantLimit: Infinity,
      weight: 1,
    });
  });

  it('says what to fix', () => {
    expect(() => parseFairness('{window: 8}')).toThrow(/must be off or JSON/);
    expect(() => parseFairness('{"window": -1}')).toThrow(/window/);
    expect(() => parseFairness('{"tenants": {"a": {"weights": {"k": 0}}}}')).toThrow(
      /tenants\.a\.weights\.k/,
    );
    expect(() => parseFairness('{"windows": 8}')).toThrow(/BATON_FAIRNESS/);
  });
});
