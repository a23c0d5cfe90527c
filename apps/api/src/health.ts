import type { BatonRuntime } from '@baton/runtime';

/**
 * What the readiness check asks of the runtime's connections, and nothing else: the ops routes
 * get this port instead of the Redis client (they read no run data).
 */
export interface HealthPort {
  /** The main Redis connection's state ('ready' when it takes commands). */
  redisStatus(): string;
  /** One round trip to Redis. */
  ping(): Promise<unknown>;
  /** One BullMQ call: the queues answer on this Redis. */
  queuesAnswer(): Promise<unknown>;
  /** Workers heartbeating now (reported by /readyz; not a condition of the API's readiness). */
  liveWorkers(): Promise<number>;
}

export function runtimeHealth(
  runtime: Pick<BatonRuntime, 'redis' | 'queues' | 'service'>,
): HealthPort {
  return {
    redisStatus: () => runtime.redis.status,
    ping: () => runtime.redis.ping(),
    // The API's own dependency: one queue answers for BullMQ on this Redis (agents' liveness is
    // in GET /v1/agents, not readiness).
    queuesAnswer: () => runtime.queues.legacySteps.getJobCounts('waiting'),
    liveWorkers: () => runtime.service.catalog.liveness.liveCount(),
  };
}
