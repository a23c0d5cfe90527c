import { describe, expect, it } from 'vitest';
import { DEFAULT_WINDOW, FairnessPolicy, parseFairness } from './fairness-config.ts';

describe('BATON_FAIRNESS', () => {
  it('unset: admission on, every key and every tenant a window of DEFAULT_WINDOW; off: no admission', () => {
    for (const raw of [undefined, ' ', '{}']) {
      const policy = new FairnessPolicy(parseFairness(raw));
      expect(policy.enabled).toBe(true);
      expect(policy.limits('any', 'key')).toEqual({
        keyLimit: DEFAULT_WINDOW,
        tenantLimit: DEFAULT_WINDOW,
        weight: 1,
        borrowable: true,
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
    expect(policy.limits('acme', 'gold')).toEqual({
      keyLimit: 12,
      tenantLimit: 20,
      weight: 2,
      borrowable: false,
    });
    expect(policy.limits('acme', 'slow')).toEqual({
      keyLimit: 1,
      tenantLimit: 20,
      weight: 0.01,
      borrowable: false,
    });
    expect(policy.limits('acme', 'other')).toEqual({
      keyLimit: 4,
      tenantLimit: 20,
      weight: 0.5,
      borrowable: false,
    });
    expect(policy.limits('globex', 'globex')).toEqual({
      keyLimit: 8,
      tenantLimit: 100,
      weight: 1,
      borrowable: false,
    });
  });

  it('tenant limits without a window: admission on, keys without a window', () => {
    const policy = new FairnessPolicy(
      parseFairness('{"window":0,"tenants":{"acme":{"maxRuns":3}}}'),
    );
    expect(policy.enabled).toBe(true);
    expect(policy.limits('acme', 'k')).toEqual({
      keyLimit: Infinity,
      tenantLimit: 3,
      weight: 1,
      borrowable: false,
    });
    expect(policy.limits('other', 'k')).toEqual({
      keyLimit: Infinity,
      tenantLimit: Infinity,
      weight: 1,
      borrowable: false,
    });
  });

  it('borrowing: on by default, off once an operator sets window (unless borrow), never past maxRuns or maxRunsPerKey', () => {
    const limits = (raw: string | undefined, tenant = 'any') =>
      new FairnessPolicy(parseFairness(raw)).limits(tenant, 'k').borrowable;
    expect(limits(undefined)).toBe(true);
    expect(limits('{"tenants":{"acme":{"weights":{"gold":2}}}}')).toBe(true);
    expect(limits('{"window":8}')).toBe(false);
    expect(limits('{"window":8,"borrow":true}')).toBe(true);
    expect(limits('{"borrow":false}')).toBe(false);
    const capped = '{"tenants":{"acme":{"maxRuns":50},"globex":{"maxRunsPerKey":5}}}';
    expect(limits(capped, 'acme')).toBe(false);
    expect(limits(capped, 'globex')).toBe(false);
    expect(limits(capped, 'initech')).toBe(true);
  });

  it("a tenant's keys together are bounded by tenantWindow (default: window) unless it has maxRuns", () => {
    const windowed = new FairnessPolicy(parseFairness('{"window":8}'));
    for (const key of ['k1', 'k2', 'minted-9999'])
      expect(windowed.limits('acme', key).tenantLimit).toBe(8);
    const policy = new FairnessPolicy(
      parseFairness('{"window":8,"tenantWindow":20,"tenants":{"big":{"maxRuns":500}}}'),
    );
    expect(policy.limits('acme', 'k')).toMatchObject({ keyLimit: 8, tenantLimit: 20 });
    expect(policy.limits('big', 'k')).toMatchObject({ keyLimit: 8, tenantLimit: 500 });
    const keysOnly = new FairnessPolicy(parseFairness('{"window":8,"tenantWindow":0}'));
    expect(keysOnly.limits('acme', 'k').tenantLimit).toBe(Infinity);
    expect(new FairnessPolicy(parseFairness('{"window":0,"tenantWindow":5}')).enabled).toBe(true);
  });

  it('tracks the default key and the keys the configuration names, never a key a tenant invents', () => {
    const policy = new FairnessPolicy(
      parseFairness('{"tenants":{"*":{"weights":{"gold":2,"*":1}},"acme":{"maxRuns":3}}}'),
    );
    expect(policy.tracked('globex', 'globex')).toBe(true);
    expect(policy.tracked('globex', 'gold')).toBe(true);
    expect(policy.tracked('globex', 'user-1')).toBe(false);
    expect(policy.tracked('globex', '*')).toBe(false);
    expect(policy.tracked('acme', 'gold')).toBe(false);
    expect(policy.namedKeys('globex')).toEqual(['gold']);
    expect(policy.namedKeys('acme')).toEqual([]);
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
