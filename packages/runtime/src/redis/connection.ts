import { Cluster, type ClusterOptions, type RedisOptions } from 'ioredis';
import { installCommandTimeoutAfterPoll } from '../internals/ioredis/command-timeout.ts';
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
 * What a connection is for:
 * - 'api': fail fast. A request during an outage gets 503 + Retry-After at once instead of hanging:
 *   no offline queue, one retry, a per-command timeout; on a cluster a few short redirections,
 *   then every command refused for a moment (fail-fast-cluster.ts), so a failover answers within
 *   half a second.
 * - 'worker': patient. Commands wait through an outage or a failover (node timeout + promotion,
 *   sized here for a minute and more) and resume within about a second of Redis answering again.
 * - 'subscriber': a pub/sub connection; subscriptions wait for Redis and are renewed on reconnect.
 */
export type RedisRole = 'api' | 'worker' | 'subscriber';

/** The API's per-command bound on a cluster: a failover must not hold a request past it. */
const API_CLUSTER_COMMAND_TIMEOUT_MS = 500;

/** The API's cluster behaviour: a couple of quick redirections, then "unavailable" (503). */
const FAIL_FAST_CLUSTER = {
  maxRedirections: 3,
  retryDelayOnFailover: 50,
  retryDelayOnClusterDown: 50,
  retryDelayOnTryAgain: 50,
} satisfies ClusterOptions;

/**
 * A worker's: a failover takes the node timeout plus the promotion (Redis' default node timeout
 * alone is 15 s); 400 redirections 200 ms apart wait well over a minute, and a retry comes at
 * most 200 ms after the cluster answers again.
 */
const PATIENT_CLUSTER = {
  maxRedirections: 400,
  retryDelayOnFailover: 200,
  retryDelayOnClusterDown: 200,
  retryDelayOnTryAgain: 200,
} satisfies ClusterOptions;

/**
 * Per-connection options of a role (on a cluster, every node's). `bullmq`: the connection BullMQ
 * shares keeps an offline queue, because BullMQ closes its connections with QUIT, which must not
 * throw while Redis is away; a patient one has maxRetriesPerRequest null, as BullMQ requires of
 * the blocking connections its Workers duplicate from it.
 */
export function roleOptions(
  role: RedisRole,
  opts: { readonly cluster?: boolean; readonly bullmq?: boolean } = {},
): RedisOptions {
  const common: RedisOptions = { retryStrategy: reconnectDelay, connectTimeout: 2_000 };
  // A command timeout is judged after the sockets were read (command-timeout.ts).
  installCommandTimeoutAfterPoll();
  if (role === 'subscriber')
    return { ...common, maxRetriesPerRequest: null, enableOfflineQueue: true };
  if (role === 'worker') return { ...common, maxRetriesPerRequest: null };
  return {
    ...common,
    maxRetriesPerRequest: 1,
    ...(opts.bullmq ? {} : { enableOfflineQueue: false }),
    // BullMQ's one shared connection carries Bull Board's bulk reads of every queue at once: a
    // failover still fails fast there through the redirection limits below.
    commandTimeout: opts.cluster && !opts.bullmq ? API_CLUSTER_COMMAND_TIMEOUT_MS : 2_000,
  };
}

/** The Cluster-level options of a role: redirections, and retries while the cluster is down. */
export function clusterRoleOptions(role: RedisRole, bullmq = false): ClusterOptions {
  const common: ClusterOptions = { clusterRetryStrategy: reconnectDelay };
  // A worker's BullMQ connection is patient too: a job's completion and its lock renewals wait
  // out a failover and go through once the cluster answers (giving up after 1.6 s, as ioredis
  // does by default, left every job in flight to be taken over as a stalled job, 30 s and more
  // later). Its Workers' blocking commands do not use it (worker-backend.ts).
  if (role !== 'api') return { ...common, ...PATIENT_CLUSTER, enableOfflineQueue: true };
  return { ...common, ...FAIL_FAST_CLUSTER, enableOfflineQueue: bullmq };
}

/** A role's connection options with a name (one node; createRedisClient builds any kind). */
export function redisOptions(role: RedisRole, connectionName: string): RedisOptions {
  return { ...roleOptions(role), connectionName };
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
  // A Redis Cluster between topologies: a failover under way, slots being moved or unserved.
  'CLUSTERDOWN',
  'TRYAGAIN',
  'Too many Cluster redirections',
  'Failed to refresh slots cache',
  'None of startup nodes is available',
  "Cluster isn't ready",
];

/** A redirection that reached the caller: the cluster moved the slot and ioredis gave up following. */
const REDIRECTION = /^(MOVED|ASK) \d+ \S+$/;

/**
 * Whether an error means "Redis cannot be used right now": the API answers 503 unavailable, and a
 * worker lets the queue retry the step instead of blaming the model or a tool.
 */
export function isRedisUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (error.name === 'MaxRetriesPerRequestError' || error.name === 'ClusterAllFailedError')
    return true;
  if (REDIRECTION.test(error.message)) return true;
  return UNAVAILABLE.some((text) => error.message.includes(text));
}

/**
 * A new connection to the same Redis (or Cluster) as `client`, with `overrides` on top of its
 * options: ioredis' `duplicate` takes the options in a different argument for a Cluster, and a
 * Cluster's own offline queue and redirections follow: a patient duplicate (maxRetriesPerRequest
 * null, e.g. a subscriber's) of an API's fail-fast Cluster waits out a failover too.
 */
export function duplicateClient(client: RedisClient, overrides: RedisOptions): RedisClient {
  if (client instanceof Cluster) {
    const { retryStrategy: _retry, enableOfflineQueue: _offline, ...nodeOverrides } = overrides;
    const patient = overrides.maxRetriesPerRequest === null ? PATIENT_CLUSTER : {};
    return client.duplicate(undefined, {
      ...client.options,
      ...patient,
      ...(overrides.enableOfflineQueue === undefined
        ? {}
        : { enableOfflineQueue: overrides.enableOfflineQueue }),
      redisOptions: { ...client.options.redisOptions, ...nodeOverrides },
    });
  }
  return client.duplicate(overrides);
}

/**
 * The names of the clients (normal connections) Redis knows of, on every node of a Cluster: how
 * a process tells that another one is still connected. Fails where CLIENT LIST is refused (ACL,
 * a managed Redis) or a node is down.
 */
export async function redisClientNames(redis: RedisClient): Promise<Set<string>> {
  const nodes = redis instanceof Cluster ? redis.nodes('all') : [redis];
  const lists = await Promise.all(
    nodes.map((node) => node.call('CLIENT', 'LIST', 'TYPE', 'normal') as Promise<string>),
  );
  const names = new Set<string>();
  for (const line of lists.join('\n').split('\n'))
    for (const field of line.split(' '))
      if (field.startsWith('name=')) names.add(field.slice('name='.length));
  return names;
}
