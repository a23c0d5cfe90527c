import { describe, expect, it } from 'vitest';
import { DeliveryGate, deliveryTarget, type GateDecision } from './delivery-gate.ts';

const LIMITS = { perTenant: 3, perTarget: 2, breakerFailures: 2, breakerCooldownMs: 1_000 };

function go(d: GateDecision): Extract<GateDecision, { kind: 'go' }> {
  if (d.kind !== 'go') throw new Error(`expected go, got ${d.kind}`);
  return d;
}

describe('DeliveryGate', () => {
  const blackhole = deliveryTarget('a', 'http://10.0.0.1:9/hook?run=1');
  const healthy = deliveryTarget('b', 'https://hooks.example.com/x');

  it("a target's hanging attempts hold its own slots only: the next delivery of the same target waits, another tenant's goes", () => {
    const gate = new DeliveryGate(LIMITS, 10_000, () => 0.5);
    go(gate.enter('a', blackhole, 0));
    go(gate.enter('a', blackhole, 0));
    // Every further delivery to the blackhole goes back to the queue, no slot taken.
    for (let i = 0; i < 500; i += 1) expect(gate.enter('a', blackhole, 10).kind).toBe('defer');
    expect(gate.inFlight('a')).toBe(2);
    const b = go(gate.enter('b', healthy, 10));
    b.done(true, 20);
    expect(gate.inFlight('b')).toBe(0);
  });

  it('a tenant is bounded over all its targets, whatever endpoints it registers', () => {
    const gate = new DeliveryGate(LIMITS, 10_000, () => 0.5);
    for (let port = 1; port <= 3; port += 1)
      go(gate.enter('a', deliveryTarget('a', `http://10.0.0.1:${String(port)}/`), 0));
    expect(gate.enter('a', deliveryTarget('a', 'http://10.0.0.1:4/'), 0).kind).toBe('defer');
    go(gate.enter('b', healthy, 0));
  });

  it('tenants never share a target, even at the same URL', () => {
    expect(deliveryTarget('a', 'https://h.example/x')).not.toBe(
      deliveryTarget('b', 'https://h.example/x'),
    );
    expect(deliveryTarget('a', 'https://h.example/x')).toBe(
      deliveryTarget('a', 'https://h.example/y?z=1'),
    );
  });

  it('puts a delivery back for about the age of the oldest hanging attempt, at least 500 ms, at most the timeout', () => {
    const gate = new DeliveryGate(LIMITS, 10_000, () => 0.5);
    go(gate.enter('a', blackhole, 0));
    go(gate.enter('a', blackhole, 0));
    expect(gate.enter('a', blackhole, 100)).toEqual({ kind: 'defer', delayMs: 500 });
    expect(gate.enter('a', blackhole, 4_000)).toEqual({ kind: 'defer', delayMs: 4_000 });
    expect(gate.enter('a', blackhole, 60_000)).toEqual({ kind: 'defer', delayMs: 10_000 });
  });

  it('opens after breakerFailures attempts in a row without an answer, probes once after the cooldown, closes on an answer', () => {
    const gate = new DeliveryGate(LIMITS, 10_000, () => 0.5);
    go(gate.enter('a', blackhole, 0)).done(false, 10_000);
    go(gate.enter('a', blackhole, 10_000)).done(false, 20_000);
    // Open: attempts fail at once and hold no slot; another target of the tenant is unaffected.
    expect(gate.enter('a', blackhole, 20_001)).toEqual({
      kind: 'open',
      failures: 2,
      untilMs: 21_000,
    });
    expect(gate.inFlight('a')).toBe(0);
    go(gate.enter('a', deliveryTarget('a', 'https://ok.example/'), 20_001)).done(true, 20_002);
    // After the cooldown one attempt probes; the others still fail at once meanwhile.
    const probe = go(gate.enter('a', blackhole, 21_000));
    expect(gate.enter('a', blackhole, 21_001).kind).toBe('open');
    probe.done(false, 31_000);
    expect(gate.enter('a', blackhole, 31_001)).toMatchObject({ kind: 'open', untilMs: 32_000 });
    go(gate.enter('a', blackhole, 32_000)).done(true, 32_010);
    go(gate.enter('a', blackhole, 32_011));
  });

  it('an answer resets the count: failures must come in a row; 0 turns the breaker off', () => {
    const gate = new DeliveryGate(LIMITS, 10_000, () => 0.5);
    go(gate.enter('a', blackhole, 0)).done(false, 1);
    go(gate.enter('a', blackhole, 2)).done(true, 3);
    go(gate.enter('a', blackhole, 4)).done(false, 5);
    expect(gate.enter('a', blackhole, 6).kind).toBe('go');
    const off = new DeliveryGate({ ...LIMITS, breakerFailures: 0 }, 10_000);
    for (let i = 0; i < 10; i += 1) go(off.enter('a', blackhole, i)).done(false, i);
  });
});
