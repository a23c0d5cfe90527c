import { Cluster, type RedisOptions } from 'ioredis';
import type { RedisClient } from './scripts.ts';

/**
 * How long to wait before reconnect attempt `times`: quick at first, capped near a second (with
 * jitter so a fleet does not reconnect in lockstep). ioredis' default grows to 2 s and BullMQ's to
 * 20 s, which kept workers idle for most of 20 s after Redis came back.
 */
export function reconnectDelay(times: number): number {
  const base = Math.min(50 * 2 ** Math.min(times, 5), 1_000);
  return Math.round(base * (0.8 + Math.random() * 0.2));
}

/**
 * Connection options by role.
 * - 'worker': patient. Commands wait through an outage (BullMQ needs maxRetriesPerRequest null on
 *   its blocking connections) and everything resumes within about a second of Redis returning.
 * - 'api': fail fast. A request during an outage must get 503 + Retry-After at once, not hang:
 *   no offline queue, one retry, and a per-command timeout.
 */
export function redisOptions(role: 'api' | 'worker', connectionName: string): RedisOptions {
  const common: RedisOptions = {
    connectionName,
    retryStrategy: reconnectDelay,
    connectTimeout: 2_000,
  };
  if (role === 'worker') return { ...common, maxRetriesPerRequest: null };
  return { ...common, maxRetriesPerRequest: 1, enableOfflineQueue: false, commandTimeout: 2_000 };
}

/**
 * Overrides for a pub/sub connection duplicated from either role's client: a subscription waits
 * for the connection (it is long-lived and re-subscribed on every reconnect) instead of failing.
 */
export const SUBSCRIBER_OPTIONS = {
  enableOfflineQueue: true,
  maxRetriesPerRequest: null,
  commandTimeout: undefined,
} satisfies RedisOptions;

const UNAVAILABLE = [
  "Stream isn't writeable",
  'Connection is closed',
  'Command timed out',
  'Reached the max retries per request limit',
  'connect ECONNREFUSED',
  'LOADING',
  'MISCONF',
  'READONLY',
];

/** Whether an error means "Redis cannot be used right now" (the API answers 503 unavailable). */
export function isRedisUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (error.name === 'MaxRetriesPerRequestError') return true;
  return UNAVAILABLE.some((text) => error.message.includes(text));
}

/**
 * A new connection to the same Redis (or Cluster) as `client`, with `overrides` on top of its
 * options: ioredis' `duplicate` takes the options in a different argument for a Cluster.
 */
export function duplicateClient(client: RedisClient, overrides: RedisOptions): RedisClient {
  if (client instanceof Cluster)
    return client.duplicate(undefined, {
      ...client.options,
      redisOptions: { ...client.options.redisOptions, ...overrides },
    });
  return client.duplicate(overrides);
}
