import { z } from 'zod';
import { defaultWorkerConcurrency } from './worker-concurrency.ts';
import {
  DEFAULT_TASK_QUEUE,
  TASK_QUEUE_NAME,
  parseEnv,
  runtimeConfigShape,
  type Env,
} from '@baton/runtime/internal';

const bool = z.enum(['1', '0', 'true', 'false']).transform((v) => v === '1' || v === 'true');

/**
 * Worker configuration: environment variables (config/env-keys.ts in @baton/runtime lists them
 * all), every default here; createWorker takes the same settings as camelCase options.
 */
export const WorkerConfigSchema = z.object({
  ...runtimeConfigShape,
  /**
   * The task queue (a pool of workers, in Temporal's sense) this worker serves its agents on:
   * its adverts tell producers to put those agents' runs there. Pools with different agents
   * should have different task queues.
   */
  BATON_TASK_QUEUE: z
    .string()
    .regex(TASK_QUEUE_NAME, 'BATON_TASK_QUEUE: letters, digits, _ and -, at most 64')
    .default(DEFAULT_TASK_QUEUE),
  /**
   * Steps (phase rounds: mostly waiting on a model) one process runs at once; the default is
   * derived from the measured memory per in-flight step and this process's heap limit
   * (worker-concurrency.ts): 256 with Node's default heap on a 64-bit machine.
   */
  WORKER_CONCURRENCY: z.coerce.number().int().min(1).max(1000).default(defaultWorkerConcurrency),
  TOOL_CONCURRENCY: z.coerce.number().int().min(1).max(1000).default(32),
  /** Bytes (JSON) of runs' message lists one worker process keeps between passes (message-cache.ts). */
  MESSAGE_CACHE_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(0)
    .default(64 * 1024 * 1024),
  /** How long a crashed holder keeps a run (and BullMQ keeps a job) before another worker takes over. */
  LEASE_TTL_MS: z.coerce.number().int().min(200).default(15_000),
  JOB_LOCK_MS: z.coerce.number().int().min(200).default(15_000),
  STALLED_INTERVAL_MS: z.coerce.number().int().min(100).default(10_000),
  SHUTDOWN_GRACE_MS: z.coerce.number().int().min(0).default(10_000),
  RECONCILE_INTERVAL_MS: z.coerce.number().int().min(100).default(30_000),
  /** Runs the reconciler looks at per index per scan. */
  RECONCILE_BATCH: z.coerce.number().int().min(1).max(10_000).default(200),
  /**
   * How often this worker looks at the timer index's change counter (one GET, jittered ±25 %) and
   * sweeps it when a timer was added or moved: a timer due sooner than this after it was scheduled
   * fires at most about this late; a later one fires on time (the sweeper sleeps until it).
   */
  TIMER_SWEEP_INTERVAL_MS: z.coerce.number().int().min(10).max(60_000).default(500),
  /** Due timers one claim takes (a full batch is followed by another claim at once). */
  TIMER_BATCH: z.coerce.number().int().min(1).max(10_000).default(100),
  /**
   * How long a claimed timer is kept from other workers: a worker that dies with it claimed
   * delays it this long. Short on purpose: a handler slower than this only makes another worker
   * fire it again, which changes nothing (firing is idempotent).
   */
  TIMER_CLAIM_MS: z.coerce.number().int().min(100).default(1_000),
  /**
   * How often the worker running a job may die (crash, kill, a hang past AGENT_HEARTBEAT_TTL_MS)
   * before the job is given up: a tool call then fails with code tool_crashed_worker, a step ends
   * its run with an error that says so. A live worker that missed its lock renewals (JOB_LOCK_MS)
   * does not count (see stall-accounting.ts).
   */
  MAX_STALLS: z.coerce.number().int().min(1).max(100).default(3),
  /** A run waiting for a decision longer than this ends with an error (0 = wait forever). */
  RUN_MAX_WAIT_SECONDS: z.coerce
    .number()
    .int()
    .min(0)
    .default(7 * 86_400),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  WORKER_ID: z.string().optional(),
  RECONCILER: bool.default(true),
  /**
   * How long a worker's advert of its agents stays live without a heartbeat (it heartbeats
   * three times per period). Past it, GET /v1/agents no longer lists the worker.
   */
  AGENT_HEARTBEAT_TTL_MS: z.coerce.number().int().min(100).default(15_000),
  /**
   * Also drain the shared `steps` / `tools` queues of Baton versions before per-agent routing,
   * forwarding their jobs to the agents' queues (turn off once no old producer is left).
   */
  LEGACY_QUEUES: bool.default(true),
  /**
   * Text/reasoning deltas arriving within this many ms of the last write are merged into one
   * append (the first after a pause is written at once); 0 writes every delta on its own.
   */
  DELTA_WINDOW_MS: z.coerce.number().int().min(0).max(1000).default(40),
  /** A delta append happens as soon as this many characters are buffered. */
  DELTA_MAX_CHARS: z.coerce.number().int().min(1).max(1_000_000).default(4096),
  /** Fire schedules (the `schedules` queue) and repair their job schedulers. */
  SCHEDULES: bool.default(true),
  /** Schedule firings handled at once by this worker. */
  SCHEDULE_CONCURRENCY: z.coerce.number().int().min(1).max(1000).default(4),
});
export type WorkerConfig = z.infer<typeof WorkerConfigSchema>;

/**
 * The worker's configuration from `env` (main.ts passes the process's; nothing below it reads the
 * environment). A bad value throws ConfigError naming the variable and what it accepts.
 */
export function loadWorkerConfig(env: Env): WorkerConfig {
  return parseEnv(WorkerConfigSchema, env);
}
