import type { BatonRuntime, RunService } from '@baton/runtime';
import type { RunEventSubscriber } from '@baton/runtime/internal';
import type { Logger } from 'pino';
import type { KeyStore } from './auth.ts';
import type { ApiConfig } from './config.ts';
import type { IdempotencyStore } from './idempotency.ts';
import type { SseConnectionLimiter } from './limits.ts';
import type { ApiMetrics } from './metrics.ts';

/** What every router gets: shared stores, the event subscriber, limits and metrics. */
export interface ApiContext {
  readonly config: ApiConfig;
  readonly runtime: BatonRuntime;
  readonly service: RunService;
  readonly logger: Logger;
  readonly keys: KeyStore;
  readonly metrics: ApiMetrics;
  readonly subscriber: RunEventSubscriber;
  readonly sseLimiter: SseConnectionLimiter;
  readonly idempotency: IdempotencyStore;
  /** Open streaming responses; each entry closes its stream (used on shutdown). */
  readonly streams: Set<() => void>;
}
