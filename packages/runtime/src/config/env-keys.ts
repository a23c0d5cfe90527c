/**
 * Every environment variable Baton reads, in one list (as inngest's `envKeys`): the schemas
 * (runtime-config.ts, the API's and the worker's config.ts) parse these names and no others, and
 * docs/configuration.md documents exactly these (config.test.ts checks both). Only the process
 * entry points (apps/*\/src/main.ts, packages/cli/src/main.ts, scripts/) hand `process.env` on;
 * everything below them gets the parsed configuration or an `env` argument.
 */
export const ENV_KEYS = {
  /** Shared by the API and the workers: the same keys and queues (runtime-config.ts). */
  runtime: [
    'REDIS_URL',
    'REDIS_NAT_MAP',
    'REDIS_CLUSTER_DNS_LOOKUP',
    'REDIS_TLS_CA_FILE',
    'REDIS_RETRY_REMINDER_MS',
    'BATON_PREFIX',
    'EVENT_RETENTION_SECONDS',
    'THREAD_TTL_SECONDS',
    'THREAD_MAX_MESSAGES',
    'THREAD_MAX_BYTES',
    'THREAD_HISTORY_MAX_MESSAGES',
    'THREAD_HISTORY_MAX_BYTES',
    'JOB_RETENTION_SECONDS',
    'TOOL_ATTEMPTS',
    'BATON_QUEUE_SHARDS',
    'BATON_DURABILITY',
    'BATON_FAIRNESS',
    'SCHEDULES_MAX_PER_TENANT',
    'RATE_LIMIT_PER_MINUTE',
    'BATON_WEBHOOK_ALLOW_PRIVATE',
    'BATON_WEBHOOK_ALLOWED_HOSTS',
    'WEBHOOK_ATTEMPTS',
    'WEBHOOK_BACKOFF_MS',
    'WEBHOOK_BACKOFF_MAX_MS',
    'WEBHOOK_TIMEOUT_MS',
    'WEBHOOK_CONCURRENCY',
    'WEBHOOK_TENANT_CONCURRENCY',
    'WEBHOOK_TARGET_CONCURRENCY',
    'WEBHOOK_BREAKER_FAILURES',
    'WEBHOOK_BREAKER_COOLDOWN_MS',
    'WEBHOOK_SWEEP_INTERVAL_MS',
    'ARCHIVE_URL',
    'ARCHIVE_HOLD_SECONDS',
    'ARCHIVE_BATCH',
    'ARCHIVE_INTERVAL_MS',
  ],
  /** The API process (apps/api/src/config.ts). */
  api: [
    'PORT',
    'HOST',
    'PUBLIC_URL',
    'API_KEYS',
    'API_KEYS_FILE',
    'IDP_TENANTS',
    'IDP_TENANTS_FILE',
    'BATON_AUTHZ',
    'ADMIN_KEYS',
    'BODY_LIMIT_BYTES',
    'MAX_INPUT_MESSAGES',
    'MAX_DECISIONS',
    'SSE_MAX_PER_TENANT',
    'SSE_LEASE_MS',
    'SSE_HEARTBEAT_MS',
    'SHUTDOWN_GRACE_MS',
    'AUTH_FAILURES_PER_MINUTE',
    'WAITPOINT_RATE_LIMIT_PER_MINUTE',
    'TRUST_PROXY',
    'METRICS_KEY',
    'METRICS_PUBLIC',
    'CORS_ORIGINS',
    'REQUEST_TIMEOUT_MS',
    'HEADERS_TIMEOUT_MS',
    'KEEP_ALIVE_TIMEOUT_MS',
    'IDEMPOTENCY_TTL_SECONDS',
    'EVENT_METRICS',
    'PROTOCOL_DEFAULT_AGENT',
    'LOG_LEVEL',
    'TENANT_WEBHOOKS',
    'TENANT_WEBHOOKS_FILE',
    'TOKEN_SIGNING_SECRET',
    'TOKEN_MAX_TTL_SECONDS',
    'TOKEN_ISSUER',
    'TOKEN_AUDIENCE',
  ],
  /** A worker process (apps/worker/src/config.ts); the agents it runs (agent-sources.ts). */
  worker: [
    'BATON_TASK_QUEUE',
    'BATON_AGENTS',
    'BATON_AGENTS_FILE',
    'WORKER_CONCURRENCY',
    'TOOL_CONCURRENCY',
    'MESSAGE_CACHE_MAX_BYTES',
    'LEASE_TTL_MS',
    'JOB_LOCK_MS',
    'STALLED_INTERVAL_MS',
    'SHUTDOWN_GRACE_MS',
    'RECONCILE_INTERVAL_MS',
    'RECONCILE_BATCH',
    'TIMER_SWEEP_INTERVAL_MS',
    'TIMER_BATCH',
    'TIMER_CLAIM_MS',
    'MAX_STALLS',
    'RUN_MAX_WAIT_SECONDS',
    'LOG_LEVEL',
    'WORKER_ID',
    'RECONCILER',
    'AGENT_HEARTBEAT_TTL_MS',
    'LEGACY_QUEUES',
    'DELTA_WINDOW_MS',
    'DELTA_MAX_CHARS',
    'SCHEDULES',
    'SCHEDULE_CONCURRENCY',
  ],
  /** The standard OpenTelemetry variables Baton itself reads (telemetry/tracing-config.ts). */
  tracing: [
    'OTEL_SDK_DISABLED',
    'OTEL_TRACES_EXPORTER',
    'OTEL_EXPORTER_OTLP_ENDPOINT',
    'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
    'OTEL_EXPORTER_OTLP_PROTOCOL',
    'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL',
    'OTEL_SERVICE_NAME',
    'OTEL_RESOURCE_ATTRIBUTES',
    'OTEL_TRACES_SAMPLER',
    'OTEL_TRACES_SAMPLER_ARG',
    'OTEL_PROPAGATORS',
    'OTEL_BSP_SCHEDULE_DELAY',
    'OTEL_BSP_EXPORT_TIMEOUT',
    'OTEL_BSP_MAX_QUEUE_SIZE',
    'OTEL_BSP_MAX_EXPORT_BATCH_SIZE',
  ],
  /**
   * The CLI (packages/cli/src/context.ts, given `process.env` by its main.ts). `@baton/client`
   * reads no environment: its options are explicit, the CLI fills them from these.
   */
  cli: ['BATON_URL', 'BATON_API_KEY', 'NO_COLOR'],
  /** `npm start` / `baton dev` (scripts/start.ts), besides passing the above on. */
  start: ['BATON_LOCAL_REDIS', 'BATON_LOCAL_REDIS_REPLICAS', 'BATON_WATCH'],
  /** The test suite and its harness (packages/testing), never read by a shipped process. */
  tests: [
    'REDIS_SERVER_BIN',
    'CHROMIUM_PATH',
    'CI',
    'FAILOVER_REPEATS',
    'TEST_LOG_LEVEL',
    // the worker's test hook (apps/worker/src/testing/probe-hook.ts), off unless set
    'BATON_PROBES',
    'BATON_PROBE_PAUSE',
  ],
} as const;

type EnvKey = (typeof ENV_KEYS)[keyof typeof ENV_KEYS][number];

/** Every name of ENV_KEYS once. */
export function allEnvKeys(): ReadonlySet<EnvKey> {
  return new Set(Object.values(ENV_KEYS).flat());
}
