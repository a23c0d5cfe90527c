import type { BatonRuntime, RunService } from '@baton/runtime';
import type { RunEventSubscriber, ScheduleService } from '@baton/runtime/internal';
import type { Logger } from 'pino';
import type { KeyStore } from './auth.ts';
import type { ApiConfig } from './config.ts';
import type { HealthPort } from './health.ts';
import type { IdempotencyStore } from './idempotency.ts';
import type { SseConnectionLimiter } from './limits.ts';
import type { ApiMetrics } from './metrics.ts';

/**
 * What every router gets: the services that are the one door into run and schedule data
 * (tenant-scoped), the event subscriber, a health port, limits and metrics.
 */
export interface ApiContext {
  readonly config: ApiConfig;
  /**
   * The runtime the app was built on, for its owner (tests, an embedder's shutdown). Routes and
   * adapters never use it (lint forbids `.runtime` there): run data goes through `service`.
   */
  readonly runtime: BatonRuntime;
  readonly service: RunService;
  readonly schedules: ScheduleService;
  /** Readiness probes (ops routes). */
  readonly health: HealthPort;
  readonly logger: Logger;
  readonly keys: KeyStore;
  readonly metrics: ApiMetrics;
  readonly subscriber: RunEventSubscriber;
  readonly sseLimiter: SseConnectionLimiter;
  readonly idempotency: IdempotencyStore;
  /** Open streaming responses; each entry closes its stream (used on shutdown). */
  readonly streams: Set<() => void>;
}
