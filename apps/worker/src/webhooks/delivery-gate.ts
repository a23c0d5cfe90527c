/**
 * Fairness of one worker process's delivery slots (docs/webhooks.md, "Fairness"). Deliveries of
 * every tenant share one FIFO queue, and a receiver that accepts and never answers holds a slot
 * for WEBHOOK_TIMEOUT_MS per attempt: without limits, one tenant's slow endpoint fills every slot
 * and every other tenant's delivery waits behind its backlog. So, the tenant first, then its
 * targets (the way admission bounds runs):
 *
 * - A tenant has at most `perTenant` attempts in flight in this process (whatever endpoints it
 *   registers: each run may name its own), a target (the tenant's endpoint origin) `perTarget`.
 *   A delivery over a limit is put back (delayed, no attempt spent) and the slot takes the next
 *   job: a slow endpoint only occupies its own slots.
 * - A circuit breaker per target: after `breakerFailures` attempts in a row without an answer
 *   (timeouts, connection errors) the target is open for `breakerCooldownMs`: its attempts fail
 *   at once (logged as attempts, retried on their backoff like any failure) instead of holding
 *   a slot for the timeout; then one attempt probes it, and an answer closes it.
 *
 * Per process and in memory: nothing to repair after a crash, and a pool of N workers gives a
 * tenant N × perTenant slots at most (the pool's share grows with the pool, as runs' do).
 */

export interface DeliveryGateLimits {
  /** Attempts of one tenant in flight at once (WEBHOOK_TENANT_CONCURRENCY). */
  readonly perTenant: number;
  /** Attempts to one target of one tenant in flight at once (WEBHOOK_TARGET_CONCURRENCY). */
  readonly perTarget: number;
  /** Attempts in a row without an answer that open a target's breaker (0: no breaker). */
  readonly breakerFailures: number;
  /** How long an open breaker fails attempts before one probes the target. */
  readonly breakerCooldownMs: number;
}

/** What the gate says of an attempt about to start. */
export type GateDecision =
  /** Go: the attempt holds a slot until `done` says whether the receiver answered, and when. */
  | { readonly kind: 'go'; readonly done: (answered: boolean, now: number) => void }
  /** Over a limit: put the delivery back for `delayMs`, no attempt spent. */
  | { readonly kind: 'defer'; readonly delayMs: number }
  /** The target's breaker is open: fail this attempt without calling it. */
  | { readonly kind: 'open'; readonly failures: number; readonly untilMs: number };

interface Breaker {
  failures: number;
  openUntil: number;
  probing: boolean;
}

/** Shortest time a delivery over a limit is put back for. */
const MIN_DEFER_MS = 500;

/** Breakers kept at most (the oldest go first): failing targets are the tenants' to invent. */
const MAX_BREAKERS = 10_000;

/** The target of a delivery: its endpoint's origin, per tenant (tenants never share one). */
export function deliveryTarget(tenantId: string, url: string): string {
  let origin: string;
  try {
    origin = new URL(url).origin;
  } catch {
    origin = url;
  }
  return `${tenantId}\t${origin}`;
}

export class DeliveryGate {
  private readonly limits: DeliveryGateLimits;
  private readonly maxDeferMs: number;
  private readonly random: () => number;
  /** Start times of the attempts in flight per tenant and per target, by attempt. */
  private readonly tenants = new Map<string, Map<number, number>>();
  private readonly targets = new Map<string, Map<number, number>>();
  private next = 0;
  private readonly breakers = new Map<string, Breaker>();

  constructor(
    limits: DeliveryGateLimits,
    /** WEBHOOK_TIMEOUT_MS: a slot held longer than that is free by then. */
    timeoutMs: number,
    random: () => number = Math.random,
  ) {
    this.limits = limits;
    this.maxDeferMs = Math.max(MIN_DEFER_MS, timeoutMs);
    this.random = random;
  }

  enter(tenantId: string, target: string, now: number): GateDecision {
    const breaker = this.breakers.get(target);
    const tripped =
      breaker !== undefined &&
      this.limits.breakerFailures > 0 &&
      breaker.failures >= this.limits.breakerFailures;
    if (tripped && (now < breaker.openUntil || breaker.probing))
      return { kind: 'open', failures: breaker.failures, untilMs: breaker.openUntil };
    const inTenant = this.tenants.get(tenantId) ?? new Map<number, number>();
    const inTarget = this.targets.get(target) ?? new Map<number, number>();
    if (inTenant.size >= this.limits.perTenant)
      return { kind: 'defer', delayMs: this.deferFor(inTenant, now) };
    if (inTarget.size >= this.limits.perTarget)
      return { kind: 'defer', delayMs: this.deferFor(inTarget, now) };
    if (tripped) breaker.probing = true;
    const id = (this.next += 1);
    inTenant.set(id, now);
    inTarget.set(id, now);
    this.tenants.set(tenantId, inTenant);
    this.targets.set(target, inTarget);
    let settled = false;
    return {
      kind: 'go',
      done: (answered, at) => {
        if (settled) return;
        settled = true;
        inTenant.delete(id);
        if (inTenant.size === 0) this.tenants.delete(tenantId);
        inTarget.delete(id);
        if (inTarget.size === 0) this.targets.delete(target);
        this.settle(target, answered, at);
      },
    };
  }

  /**
   * A delivery over a limit comes back when a slot is likely free: soon when the attempts that
   * hold the limit (its tenant's or its target's) are quick, about the age of the oldest when
   * they hang (a receiver that
   * never answers frees its slots only at the timeout), jittered so put-back deliveries do not
   * return together.
   */
  private deferFor(inFlight: Map<number, number>, now: number): number {
    const oldest = inFlight.size > 0 ? Math.min(...inFlight.values()) : now;
    const base = Math.min(this.maxDeferMs, Math.max(MIN_DEFER_MS, now - oldest));
    return Math.round(base * (0.5 + this.random()));
  }

  private settle(target: string, answered: boolean, now: number): void {
    if (answered) {
      this.breakers.delete(target);
      return;
    }
    if (this.limits.breakerFailures <= 0) return;
    const breaker = this.breakers.get(target) ?? { failures: 0, openUntil: 0, probing: false };
    breaker.failures += 1;
    breaker.probing = false;
    if (breaker.failures >= this.limits.breakerFailures)
      breaker.openUntil = now + this.limits.breakerCooldownMs;
    this.breakers.delete(target);
    this.breakers.set(target, breaker);
    if (this.breakers.size > MAX_BREAKERS) {
      const oldest = this.breakers.keys().next().value;
      if (oldest !== undefined) this.breakers.delete(oldest);
    }
  }

  /** Attempts in flight of a tenant (tests, logs). */
  inFlight(tenantId: string): number {
    return this.tenants.get(tenantId)?.size ?? 0;
  }
}
