/**
 * How `npm start` answers a child that crashed: restart it after a back-off that doubles with
 * each crash in the window, until too many crashes in the window say restarting does not help.
 */
export interface RestartPolicy {
  /** Crashes allowed in `windowMs`; the next one gives up. */
  readonly maxRestarts: number;
  readonly windowMs: number;
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
}

const DEFAULT_RESTART_POLICY: RestartPolicy = {
  maxRestarts: 5,
  windowMs: 60_000,
  baseDelayMs: 1_000,
  maxDelayMs: 15_000,
};

export type RestartDecision =
  | { readonly action: 'restart'; readonly delayMs: number; readonly attempt: number }
  | { readonly action: 'give_up'; readonly crashes: number };

export class RestartBudget {
  private crashes: number[] = [];
  private readonly policy: RestartPolicy;

  constructor(policy: RestartPolicy = DEFAULT_RESTART_POLICY) {
    this.policy = policy;
  }

  /** A crash at `now`: restart (after how long, which attempt in the window) or give up. */
  crashed(now: number): RestartDecision {
    this.crashes = [...this.crashes.filter((t) => now - t < this.policy.windowMs), now];
    const n = this.crashes.length;
    if (n > this.policy.maxRestarts) return { action: 'give_up', crashes: n };
    const delayMs = Math.min(this.policy.baseDelayMs * 2 ** (n - 1), this.policy.maxDelayMs);
    return { action: 'restart', delayMs, attempt: n };
  }

  /** A restart somebody asked for (a changed agents file) starts a fresh budget. */
  reset(): void {
    this.crashes = [];
  }
}
