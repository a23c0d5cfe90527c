import { z } from 'zod';

const bool = z.enum(['1', '0', 'true', 'false']).transform((v) => v === '1' || v === 'true');

/** Worker configuration from the environment; invalid values fail at startup with the variable named. */
export const WorkerConfigSchema = z.object({
  REDIS_URL: z.string().default('redis://127.0.0.1:6379'),
  BATON_PREFIX: z
    .string()
    .regex(/^[a-z0-9-]+$/i)
    .default('baton'),
  WORKER_CONCURRENCY: z.coerce.number().int().min(1).max(1000).default(16),
  TOOL_CONCURRENCY: z.coerce.number().int().min(1).max(1000).default(32),
  /** How long a crashed holder keeps a run (and BullMQ keeps a job) before another worker takes over. */
  LEASE_TTL_MS: z.coerce.number().int().min(200).default(15_000),
  JOB_LOCK_MS: z.coerce.number().int().min(200).default(15_000),
  STALLED_INTERVAL_MS: z.coerce.number().int().min(100).default(10_000),
  SHUTDOWN_GRACE_MS: z.coerce.number().int().min(0).default(10_000),
  RECONCILE_INTERVAL_MS: z.coerce.number().int().min(100).default(30_000),
  EVENT_RETENTION_SECONDS: z.coerce.number().int().min(1).default(86_400),
  TOOL_ATTEMPTS: z.coerce.number().int().min(1).max(20).default(3),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  WORKER_ID: z.string().optional(),
  RECONCILER: bool.default(true),
});
export type WorkerConfig = z.infer<typeof WorkerConfigSchema>;

export function loadWorkerConfig(
  env: Record<string, string | undefined> = process.env,
): WorkerConfig {
  const parsed = WorkerConfigSchema.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new Error(`invalid worker configuration: ${problems}`);
  }
  return parsed.data;
}
