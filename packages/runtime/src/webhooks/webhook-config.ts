import { z } from 'zod';

const bool = z.enum(['1', '0', 'true', 'false']).transform((v) => v === '1' || v === 'true');

/**
 * Webhook settings. The API and the workers both read them: the API checks targets at
 * registration and may enqueue deliveries (a run it ends itself, e.g. a cancel before start);
 * workers deliver them.
 */
export const webhookConfigShape = {
  /** Allow webhook targets on loopback, private, link-local … addresses (development, tests). */
  BATON_WEBHOOK_ALLOW_PRIVATE: bool.default(false),
  /** Comma-separated host names (or IP literals) allowed whatever addresses they resolve to. */
  BATON_WEBHOOK_ALLOWED_HOSTS: z.string().default(''),
  /** Attempts per delivery, the first included. */
  WEBHOOK_ATTEMPTS: z.coerce.number().int().min(1).max(50).default(12),
  /** Delay after the first failed attempt; doubles per attempt (with jitter). */
  WEBHOOK_BACKOFF_MS: z.coerce.number().int().min(10).default(2_000),
  /** Longest delay between two attempts. */
  WEBHOOK_BACKOFF_MAX_MS: z.coerce.number().int().min(10).default(3_600_000),
  /** Time one attempt may take (connect, send, answer) before it counts as failed. */
  WEBHOOK_TIMEOUT_MS: z.coerce.number().int().min(50).max(120_000).default(10_000),
  /** Deliveries one worker process runs at once (0 = this process delivers none). */
  WEBHOOK_CONCURRENCY: z.coerce.number().int().min(0).max(1000).default(8),
  /**
   * Attempts of one tenant in flight at once per worker process, and to one target (a tenant's
   * endpoint origin): a tenant's slow endpoints occupy these slots, never the others' (docs:
   * http-api.md#webhooks, "Fairness").
   */
  WEBHOOK_TENANT_CONCURRENCY: z.coerce.number().int().min(1).max(1000).default(4),
  WEBHOOK_TARGET_CONCURRENCY: z.coerce.number().int().min(1).max(1000).default(2),
  /** Attempts in a row without an answer that open a target's circuit breaker (0: none). */
  WEBHOOK_BREAKER_FAILURES: z.coerce.number().int().min(0).max(1000).default(5),
  /** How long an open breaker fails a target's attempts at once before one probes it. */
  WEBHOOK_BREAKER_COOLDOWN_MS: z.coerce.number().int().min(100).default(60_000),
  /** How often a worker sweeps for deliveries a crash kept from being enqueued. */
  WEBHOOK_SWEEP_INTERVAL_MS: z.coerce.number().int().min(100).default(10_000),
};
