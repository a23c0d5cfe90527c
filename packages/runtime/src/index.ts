/**
 * `@baton/runtime`'s public surface: what an embedder needs to create and read runs from its own
 * process (the runtime, its run service, the errors those throw, logging and tracing). What only
 * Baton's own API and worker use (stores, scripts, queues, leases, webhooks) is in
 * `@baton/runtime/internal` and may change in any release.
 */
export { BatonRuntime } from './runtime.ts';
/** @public BatonRuntime's configuration; nothing in this repository names the type. */
export type { BatonRuntimeOptions, RuntimeOptions } from './runtime.ts';
export {
  RunService,
  THREAD_PAGE_DEFAULT,
  THREAD_PAGE_MAX_BYTES,
  type CreatedRun,
} from './run-service.ts';
/** @public What RunService.follow answers (the run-tree stream's view of a run). */
export type { RunFollowState } from './run-service.ts';
/** @public What RunService.submitDecisions answers, and where it routed child runs' calls. */
export type { RoutedDecisions, SubmittedDecisions } from './decision-routing.ts';
export type { Loaded } from './run-committer.ts';
export { RunWaits } from './waits/run-waits.ts';
/** @public The seam a timer index implements to fire the timeouts of waits (waits/wait-timeouts.ts). */
export { systemClock } from './system-clock.ts';
export { bullPrefix } from './redis/keys.ts';
export type { RedisClient } from './redis/scripts.ts';
/**
 * @public The client Baton's own processes build from REDIS_URL (one node, a Cluster, Sentinel)
 * for a role ('api' fails fast, 'worker' waits out a failover): for an embedder who wants the
 * same behaviour on a client of its own to pass to createWorker({ redis }) or startApi({ redis }).
 */
export {
  createRedisClient,
  type RedisClientOptions,
  type RedisSettings,
} from './redis/redis-client.ts';
/** @public The roles createRedisClient builds a client for. */
export type { RedisRole } from './redis/connection.ts';
export { createLogger, type BatonLogger } from './logger.ts';
export {
  startTracing,
  useGlobalTracing,
  type StartTracingOptions,
  type TracingHandle,
} from './telemetry/tracing.ts';
export { ConfigError } from './errors/config-error.ts';
export type { SdkOptions } from './config/sdk-options.ts';
export { DurabilityError } from './errors/durability-error.ts';
export { InvalidCursorError } from './errors/invalid-cursor-error.ts';
export { InvalidScheduleCursorError } from './errors/invalid-schedule-cursor-error.ts';
export { RunNotFoundError } from './errors/run-not-found-error.ts';
