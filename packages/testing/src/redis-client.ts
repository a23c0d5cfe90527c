/**
 * Test and bench clients for a Redis URL, standalone or cluster alike: `redis+cluster://h:p,…`
 * gives an ioredis Cluster, anything else a Redis. For a test's or a bench's own reads (audits,
 * TTL checks, accounting), never for the system under test, which builds its clients from
 * REDIS_URL itself. Whole-keyspace reads (SCAN, INFO) go to every master of a cluster.
 */
import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { createRedisClient } from '@baton/runtime';

export type AnyRedis = Redis | Cluster;

export function isClusterUrl(url: string): boolean {
  return /^rediss?\+cluster:\/\//i.test(url);
}

/**
 * A client for `url`. On a cluster it is the one Baton's workers build (createRedisClient, role
 * 'worker'): patient through a failover, as a test reading across one must be. On one node, a
 * plain ioredis client with `options`, as before there were clusters.
 */
export function testRedis(url: string, options: RedisOptions = {}): AnyRedis {
  if (!isClusterUrl(url)) return new Redis(url, options);
  return createRedisClient(
    { REDIS_URL: url },
    { role: 'worker', connectionName: options.connectionName ?? 'baton-test' },
  );
}

/** Every master of a cluster client (each a plain Redis), or the client itself. */
export function mastersOf(client: AnyRedis): Redis[] {
  return client instanceof Cluster ? client.nodes('master') : [client];
}
