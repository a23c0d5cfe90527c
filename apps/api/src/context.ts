import type { RunService, RunWaits } from '@baton/runtime';
import type { ScheduleService } from '@baton/runtime/internal';
import type { Logger } from 'pino';
import type { KeyStore } from './auth.ts';
import type { ApiConfig } from './config.ts';
import type { HealthPort } from './health.ts';
import type { IdempotencyStore } from './idempotency.ts';
import type { ManagedKeyStore } from './managed-keys.ts';
import type { SseConnectionLimiter } from './limits.ts';
import type { ApiMetrics } from './metrics.ts';

/**
 * What every router gets: the services that are the one door into run and schedule data
 * (tenant-scoped; a run's event stream too: RunService.openEvents), a health port, limits and
 * metrics. Not the runtime nor its stores: ApiApp.runtime is for the app's owner.
 */
export interface ApiContext {
  readonly config: ApiConfig;
  readonly service: RunService;
  /** Waitpoints and events (routes/waits.ts). */
  readonly waits: RunWaits;
  readonly schedules: ScheduleService;
  /** Readiness probes (ops routes). */
  readonly health: HealthPort;
  readonly logger: Logger;
  readonly keys: KeyStore;
  /** Tenant keys created, rotated and revoked at run time (admin routes /v1/admin/keys). */
  readonly managedKeys: ManagedKeyStore;
  readonly metrics: ApiMetrics;
  readonly sseLimiter: SseConnectionLimiter;
  readonly idempotency: IdempotencyStore;
  /** Open streaming responses; each entry closes its stream (used on shutdown). */
  readonly streams: Set<() => void>;
}
