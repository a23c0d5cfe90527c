/**
 * When the next delivery attempt is due: exponential backoff with "equal jitter" (half the
 * delay fixed, half random), so retries of many webhooks that failed together spread out instead
 * of hitting a recovering receiver at the same instant, yet never come sooner than half the
 * schedule. A receiver's Retry-After is honoured when it asks for longer (never beyond the cap).
 */

export interface WebhookBackoffOptions {
  /** Delay after the first failed attempt (WEBHOOK_BACKOFF_MS). */
  readonly baseMs: number;
  /** Upper bound of any delay (WEBHOOK_BACKOFF_MAX_MS). */
  readonly maxMs: number;
}

/** Delay after failed attempt number `attempt` (1 = the first attempt failed). */
export function webhookRetryDelay(
  attempt: number,
  opts: WebhookBackoffOptions,
  random: () => number = Math.random,
  retryAfterMs?: number,
): number {
  const exponent = Math.min(Math.max(attempt - 1, 0), 30);
  const ceiling = Math.min(opts.maxMs, opts.baseMs * 2 ** exponent);
  const half = ceiling / 2;
  const jittered = Math.round(half + random() * half);
  const asked = retryAfterMs === undefined ? 0 : Math.min(retryAfterMs, opts.maxMs);
  return Math.max(jittered, asked);
}
