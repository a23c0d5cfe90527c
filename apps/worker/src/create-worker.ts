import type { AgentDefinition, Clock } from '@baton/core';
import { createLogger, type BatonLogger, type RedisClient } from '@baton/runtime';
import { toPino } from '@baton/runtime/internal';
import { WorkerConfigSchema, type WorkerConfig } from './config.ts';
import { BatonWorker } from './worker.ts';

export interface CreateWorkerOptions {
  /** The agents this worker runs; it takes only the jobs of these agents (one queue each). */
  readonly agents: readonly AgentDefinition[];
  /**
   * A Redis URL (`redis://…`, `rediss://…`, `redis+cluster://h1:p1,h2:p2`,
   * `redis+sentinel://s1:p1/<master>`; as REDIS_URL), or your own ioredis `Redis` or `Cluster`.
   * An instance stays yours: the worker uses it, duplicates it for BullMQ and its subscriptions,
   * and never closes it.
   */
  readonly redis: string | RedisClient;
  /**
   * Key prefix shared with the API (BATON_PREFIX). Workers and the API must use the same one to
   * see the same runs.
   *
   * @default 'baton'
   */
  readonly prefix?: string;
  /**
   * Any other worker setting, by the name of its environment variable (see
   * docs/configuration.md); unset ones take their defaults. The environment is NOT read here: an
   * embedding application decides where its settings come from.
   *
   * @default {} (every setting at its documented default)
   */
  readonly config?: Partial<Omit<WorkerConfig, 'REDIS_URL' | 'BATON_PREFIX'>>;
  /**
   * Where the worker logs: pino, or any logger with `debug`/`info`/`warn`/`error`/`child`
   * (secrets are redacted before a line reaches it).
   *
   * @default pino, JSON lines on stdout at `config.LOG_LEVEL`
   */
  readonly logger?: BatonLogger;
  /**
   * Time source (tests).
   *
   * @default the system clock
   */
  readonly clock?: Clock;
}

/**
 * Creates a Baton worker for your agents, to run from your own entry file.
 *
 * The worker is not started: `await worker.start()` connects, advertises the agents (so
 * `GET /v1/agents` lists them and their runs start) and begins taking jobs; `await worker.stop()`
 * stops taking jobs, lets running ones finish within `SHUTDOWN_GRACE_MS`, then closes its
 * connections. Call `stop()` on SIGTERM so a deploy strands no run.
 *
 * @example
 * ```ts
 * import { ScriptedModel, type AgentDefinition } from '@baton/core';
 * import { createWorker } from '@baton/worker';
 *
 * const echo: AgentDefinition = {
 *   name: 'echo',
 *   model: new ScriptedModel([{ text: 'hello from my own worker' }]),
 *   tools: [],
 * };
 * const worker = createWorker({ agents: [echo], redis: 'redis://127.0.0.1:6379' });
 * await worker.start();
 * process.once('SIGTERM', () => void worker.stop());
 * ```
 */
export function createWorker(options: CreateWorkerOptions): BatonWorker {
  const config: WorkerConfig = {
    ...WorkerConfigSchema.parse({}),
    ...options.config,
    ...(typeof options.redis === 'string' ? { REDIS_URL: options.redis } : {}),
    ...(options.prefix === undefined ? {} : { BATON_PREFIX: options.prefix }),
  };
  // Validated as a whole so a bad value fails here, naming the setting, not deep in a job.
  const checked = WorkerConfigSchema.safeParse(stringly(config));
  if (!checked.success) {
    const problems = checked.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
    throw new Error(`createWorker: invalid option ${problems.join('; ')}`);
  }
  return new BatonWorker({
    config,
    agents: options.agents,
    logger: options.logger
      ? toPino(options.logger)
      : createLogger('baton-worker', config.LOG_LEVEL),
    ...(options.clock ? { clock: options.clock } : {}),
    ...(typeof options.redis === 'string' ? {} : { redis: options.redis }),
  });
}

/** The schema parses environment strings; typed values are checked in that form. */
function stringly(config: WorkerConfig): Record<string, string | undefined> {
  return Object.fromEntries(
    Object.entries(config).map(([k, v]) => [k, v === undefined ? undefined : String(v)]),
  );
}
