import type { AgentDefinition, Clock } from '@baton/core';
import { createLogger, type BatonLogger, type RedisClient, type SdkOptions } from '@baton/runtime';
import { compileSdkOptions, toPino } from '@baton/runtime/internal';
import { WorkerConfigSchema, type WorkerConfig } from './config.ts';

/** Settings createWorker's own arguments decide (`redis`, `prefix`). */
type ArgumentSettings = 'REDIS_URL' | 'BATON_PREFIX';

/**
 * Every other worker setting as a camelCase option: the variable's name without `BATON_`
 * (`WORKER_CONCURRENCY` → `workerConcurrency`, `BATON_TASK_QUEUE` → `taskQueue`).
 */
export type WorkerOptions = SdkOptions<Omit<WorkerConfig, ArgumentSettings>>;

/**
 * @deprecated The variable names createWorker took before its camelCase options: still accepted
 * for one release (with a DeprecationWarning); use WorkerOptions.
 */
export type LegacyWorkerConfig = Partial<Omit<WorkerConfig, ArgumentSettings>>;
import { BatonWorker } from './worker.ts';

export interface CreateWorkerOptions {
  /** The agents this worker runs; it takes only the jobs of these agents (one queue each). */
  readonly agents: readonly AgentDefinition[];
  /**
   * The version of every agent here that names none itself (e.g. your build id or git sha; letters,
   * digits, '.', '_', '-'): runs created on it run on workers that serve it. Unset (and unset
   * on the agent): a hash of each agent's definition (docs/deployment-and-scaling.md).
   */
  readonly version?: string;
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
   * Any other worker setting in camelCase (`{ workerConcurrency: 8, logLevel: 'warn' }`; see
   * docs/configuration.md); unset ones take their defaults. The environment is NOT read here: an
   * embedding application decides where its settings come from. The variable names taken before
   * (`WORKER_CONCURRENCY`) still work for one release, with a DeprecationWarning.
   *
   * @default {} (every setting at its documented default)
   */
  readonly config?: WorkerOptions & LegacyWorkerConfig;
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
  const config = compileWorkerConfig(options);
  return new BatonWorker({
    config,
    agents:
      options.version === undefined
        ? options.agents
        : options.agents.map((a) =>
            a.version === undefined ? { ...a, version: options.version } : a,
          ),
    logger: options.logger
      ? toPino(options.logger)
      : createLogger('baton-worker', config.LOG_LEVEL),
    ...(options.clock ? { clock: options.clock } : {}),
    ...(typeof options.redis === 'string' ? {} : { redis: options.redis }),
  });
}

/**
 * createWorker's options as the parsed worker configuration, checked by the schema the
 * environment goes through (a bad value throws ConfigError naming the option as written).
 */
export function compileWorkerConfig(
  options: Pick<CreateWorkerOptions, 'redis' | 'prefix' | 'config'>,
): WorkerConfig {
  return compileSdkOptions(WorkerConfigSchema, options.config ?? {}, {
    caller: 'createWorker',
    fixed: {
      ...(typeof options.redis === 'string' ? { REDIS_URL: options.redis } : {}),
      ...(options.prefix === undefined ? {} : { BATON_PREFIX: options.prefix }),
    },
  });
}
