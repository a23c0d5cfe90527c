/**
 * `@baton/runtime/internal`: what Baton's own API and worker share beyond the public surface
 * (Redis stores and scripts, queues, leases, the committer, schedules, webhooks). Not a stable
 * API: it changes with the apps that use it.
 *
 * @internal
 */
export { AgentLiveness } from './agent-liveness.ts';
export { PgArchive } from './archive/pg-archive.ts';
export { AgentRegistry } from './agent-registry.ts';
export { TaskQueuePool } from './task-queue-pools.ts';
export { agentVersionOf, versioningOf } from './agent-version-of.ts';
export { ChildRuns } from './child-runs.ts';
export { AbortRegistry, listenForControl } from './control-channel.ts';
export { LeaseLostError } from './errors/lease-lost-error.ts';
export { NewerFormatError } from './errors/newer-format-error.ts';
export { REDACT_PATHS, safeUrl, toPino } from './logger.ts';
export {
  BatonQueues,
  STEP_QUEUE,
  TOOL_QUEUE,
  stepQueueName,
  toolJobId,
  toolQueueName,
} from './queues.ts';
export {
  DEFAULT_TASK_QUEUE,
  TASK_QUEUE_NAME,
  hashTagOf,
  parseShardQueueName,
  shardQueueName,
  shardQueueNames,
} from './queue-shards.ts';
export {
  SUBSCRIBER_OPTIONS,
  duplicateClient,
  isRedisUnavailable,
  redisClientNames,
} from './redis/connection.ts';
export { Durability } from './redis/durability.ts';
export { decodeEventPayload } from './redis/event-payload.ts';
export {
  CommittedEventCounts,
  STEP_BUCKETS,
  TOOL_BUCKETS,
  decodeEventMetrics,
  type EventMetricsSnapshot,
  type StoredHistogram,
} from './redis/event-metrics.ts';
export { RunEventSubscriber } from './redis/event-subscriber.ts';
export { BatonKeys, keyPart } from './redis/keys.ts';
export { RedisRunStore } from './run-record/redis-run-store.ts';
export { deadlineTimerHandler } from './timers/deadline-timers.ts';
export { TimerIndex, type ClaimedTimer } from './timers/timer-index.ts';
export { TimerSweeper } from './timers/timer-sweeper.ts';
/** @public For modules that plug a timer kind into the index (docs/ARCHITECTURE.md, "Timers"). */
export type { TimerEntry, TimerKind, TimerRef } from './timers/timer-index.ts';
/** @public For modules that plug a timer kind into the index (docs/ARCHITECTURE.md, "Timers"). */
export type { TimerFiring, TimerHandler } from './timers/timer-sweeper.ts';
export { encodeCursor } from './run-record/run-list-cursor.ts';
export { defineScript, type LuaScript } from './redis/scripts.ts';
export { withSingletonLock } from './redis/singleton-lock.ts';
export { RedisThreadStore } from './redis/thread-store.ts';
export { coalesceWrites } from './internals/ioredis/write-coalescing.ts';
export { bullClientOf, coalesceBullWrites } from './internals/bullmq/clients.ts';
export {
  JOB_DEATHS_FIELD,
  JOB_HOLDER_FIELD,
  JOB_STALLS_FIELD,
  STALLED_TOO_OFTEN,
  type HolderNote,
} from './internals/bullmq/job-hash.ts';
export { isWorkerLockToken, readJobLock } from './internals/bullmq/job-lock.ts';
export {
  activeJobsKey,
  failedJobsKey,
  jobHashKeyOf,
  pendingJobKeys,
  queueSlotKey,
  wakeQueue,
} from './internals/bullmq/queue-keys.ts';
export { RunCommitter, type FencedCommitOptions, type Loaded } from './run-committer.ts';
export {
  RunLeases,
  type KnownMessages,
  type Lease,
  type RecordFirst,
} from './run-record/run-lease.ts';
export type { AwaitedResults, RunMeta } from './run-record/checkpoint-codec.ts';
export { RunIndex } from './run-record/run-index.ts';
export { RunRecordScripts } from './run-record/run-record-scripts.ts';
export { ToolResultMailbox } from './run-record/tool-result-mailbox.ts';
export { runtimeConfigShape } from './config/runtime-config.ts';
export { ENV_KEYS } from './config/env-keys.ts';
export { parseEnv, type Env } from './config/parse-env.ts';
export { compileSdkOptions } from './config/sdk-options.ts';
export { processEnv } from './config/process-env.ts';
export { RunAdmission, fairnessKeyOf } from './fairness/run-admission.ts';
export { DEFAULT_WINDOW } from './fairness/fairness-config.ts';
export { ScheduleFirer } from './schedules/schedule-firing.ts';
export {
  SCHEDULE_ID_METADATA,
  schedulerIdOf,
  type StoredSchedule,
} from './schedules/schedule-record.ts';
export {
  SCHEDULE_QUEUE,
  ScheduleService,
  type ScheduleJobData,
} from './schedules/schedule-service.ts';
export { exitOnSignals } from './shutdown.ts';
export { BLOCKING_RECONNECTED, workerBackend } from './internals/bullmq/worker-backend.ts';
export { traceLogOptions } from './telemetry/trace-log.ts';
export { batonTracer, bullTelemetryOption, tracingActive } from './telemetry/tracing-state.ts';
export { webhookRetryDelay, type WebhookBackoffOptions } from './webhooks/backoff.ts';
export { webhookHeaders, webhookIdFor, webhookSecretKey } from './webhooks/signing.ts';
export { WebhookTargetPolicy } from './webhooks/target-policy.ts';
export {
  WEBHOOK_QUEUE,
  WebhookOutbox,
  type TenantWebhook,
  type WebhookJob,
} from './webhooks/webhook-outbox.ts';
export type { AttemptOutcome } from './run-record/webhook-store.ts';
