import { z } from 'zod';
import { parseNatMap } from '../redis/redis-client.ts';
import { parseRedisUrl } from '../redis/redis-url.ts';
import { webhookConfigShape } from '../webhooks/webhook-config.ts';
import { MAX_QUEUE_SHARDS } from '../queue-shards.ts';
import { parseFairness } from '../fairness/fairness-config.ts';

/** A check that throws with a message becomes a zod issue with that message. */
function valid(check: (value: string) => unknown) {
  return (value: string, ctx: z.RefinementCtx): void => {
    try {
      check(value);
    } catch (error) {
      ctx.addIssue({
        code: 'custom',
        message: (error as Error).message.replace(/^REDIS_URL /, ''),
      });
    }
  };
}

/** Per-tenant limits the API and the workers both enforce. */
const tenantLimitsShape = {
  /**
   * Schedules one tenant may have (any state): creating one more is refused with 409
   * quota_exceeded. Enforced by the create script, so concurrent creates cannot overshoot.
   */
  SCHEDULES_MAX_PER_TENANT: z.coerce.number().int().min(1).default(100),
  /**
   * Requests per tenant per minute across all API instances (0 = unlimited). Schedule firings
   * count against it too (workers read it): a firing over it creates no run and is recorded as
   * skipped (rate_limited).
   */
  RATE_LIMIT_PER_MINUTE: z.coerce.number().int().min(0).default(0),
};
/**
 * Settings the API and the workers share because both write the same keys and queues; they must
 * agree (see docs/durability.md and docs/configuration.md).
 */
export const runtimeConfigShape = {
  /**
   * Which Redis, and what kind: redis:// or rediss:// (one node), redis+cluster:// (a Redis
   * Cluster's seed nodes), redis+sentinel://…/<masterName> (see redis/redis-url.ts).
   */
  REDIS_URL: z.string().default('redis://127.0.0.1:6379').superRefine(valid(parseRedisUrl)),
  /** Cluster/Sentinel: JSON {"announced-host:port": {"host", "port"}} when nodes sit behind NAT. */
  REDIS_NAT_MAP: z.string().superRefine(valid(parseNatMap)).optional(),
  /** Cluster: 'passthrough' connects by the announced name (managed TLS clusters). */
  REDIS_CLUSTER_DNS_LOOKUP: z.enum(['passthrough']).optional(),
  /** rediss://: a PEM file of the CA that signed the server's certificate. */
  REDIS_TLS_CA_FILE: z.string().min(1).optional(),
  BATON_PREFIX: z
    .string()
    .regex(/^[a-z0-9-]+$/i)
    .default('baton'),
  /** How long a finished run (checkpoint, events, tool results) is kept. */
  EVENT_RETENTION_SECONDS: z.coerce.number().int().min(1).default(86_400),
  /** How long a thread (history, state) is kept after its last run finished. */
  THREAD_TTL_SECONDS: z.coerce
    .number()
    .int()
    .min(1)
    .default(7 * 86_400),
  /** A thread's list holds at most this many messages: a run that would pass it gets 413. */
  THREAD_MAX_MESSAGES: z.coerce.number().int().min(1).default(5_000),
  /** A thread's list holds at most this many bytes of message JSON (413 past it). */
  THREAD_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(1_024)
    .default(8 * 1024 * 1024),
  /** A run on a thread is given at most this many of its newest messages as history. */
  THREAD_HISTORY_MAX_MESSAGES: z.coerce.number().int().min(1).default(500),
  /** A run's thread history is at most this many bytes of message JSON. */
  THREAD_HISTORY_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(1_024)
    .default(1024 * 1024),
  /** How long finished BullMQ jobs stay visible (Bull Board) before they are removed. */
  JOB_RETENTION_SECONDS: z.coerce.number().int().min(1).default(3_600),
  TOOL_ATTEMPTS: z.coerce.number().int().min(1).max(20).default(3),
  /**
   * Queue shards per task queue (K): a run's jobs go to shard hash(runId) mod K, each shard its
   * own BullMQ queue and hash tag, so on a Redis Cluster queue traffic spreads over the masters.
   * 1 (the default) suits one Redis. Changing it loses no run: the old shards drain.
   */
  BATON_QUEUE_SHARDS: z.coerce
    .number({ message: 'BATON_QUEUE_SHARDS must be a whole number from 1 to 256' })
    .int('BATON_QUEUE_SHARDS must be a whole number from 1 to 256')
    .min(1, 'BATON_QUEUE_SHARDS must be a whole number from 1 to 256')
    .max(MAX_QUEUE_SHARDS, 'BATON_QUEUE_SHARDS must be a whole number from 1 to 256')
    .default(1),
  /**
   * 'strict': a 2xx means the write is on disk (Redis must run with appendonly yes and
   * appendfsync always, or support WAITAOF); 'relaxed': whatever Redis is configured for.
   */
  BATON_DURABILITY: z.enum(['relaxed', 'strict']).default('relaxed'),
  /**
   * Fairness keys' admission windows and weights, tenants' run limits (JSON, see
   * fairness/fairness-config.ts and docs/fairness.md). Unset: window 64 per key, no tenant limit;
   * `off`: no admission.
   */
  BATON_FAIRNESS: z.string().superRefine(valid(parseFairness)).optional(),
  ...tenantLimitsShape,
  /** While Redis cannot be reached, how often the process says so again. */
  REDIS_RETRY_REMINDER_MS: z.coerce.number().int().min(100).default(30_000),
  /** Webhook targets and delivery (webhooks/webhook-config.ts). */
  ...webhookConfigShape,
  /**
   * postgres://… : finished runs and thread histories are copied into PostgreSQL, and read from
   * there once Redis has let them go (archive/, docs/archive.md). Unset: no archive.
   */
  ARCHIVE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'ARCHIVE_URL must be a postgres:// URL')
    .optional(),
  /**
   * With ARCHIVE_URL: how long a finished run's keys are held in Redis while the archive does
   * not have them yet; once archived they live EVENT_RETENTION_SECONDS more.
   */
  ARCHIVE_HOLD_SECONDS: z.coerce
    .number()
    .int()
    .min(1)
    .default(7 * 86_400),
  /** With ARCHIVE_URL: runs per archive transaction. */
  ARCHIVE_BATCH: z.coerce.number().int().min(1).max(5_000).default(200),
  /** With ARCHIVE_URL: how often an idle archiver looks for finished runs. */
  ARCHIVE_INTERVAL_MS: z.coerce.number().int().min(10).default(500),
};

/** The settings a runtime needs (the API's and the workers' configs both have them). */
export type RuntimeConfig = z.infer<z.ZodObject<typeof runtimeConfigShape>>;

const RUNTIME_DEFAULTS: RuntimeConfig = z.object(runtimeConfigShape).parse({});

/**
 * A configuration built in code (an SDK user's BatonRuntime, written before some settings
 * existed) with every setting it leaves out, or sets to undefined, at the schema's default.
 */
export function withRuntimeDefaults(config: Partial<RuntimeConfig>): RuntimeConfig {
  const out: Record<string, unknown> = { ...RUNTIME_DEFAULTS };
  for (const [key, value] of Object.entries(config)) if (value !== undefined) out[key] = value;
  return out as RuntimeConfig;
}
