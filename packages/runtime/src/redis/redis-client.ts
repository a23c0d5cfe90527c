import { readFileSync } from 'node:fs';
import type { ConnectionOptions as TlsOptions } from 'node:tls';
import { Cluster, Redis, type ClusterOptions } from 'ioredis';
import { z } from 'zod';
import { FailFastCluster } from '../internals/ioredis/fail-fast-cluster.ts';
import { clusterRoleOptions, reconnectDelay, roleOptions, type RedisRole } from './connection.ts';
import { parseRedisUrl, type RedisNode } from './redis-url.ts';
import type { RedisClient } from './scripts.ts';

/** The settings that say where Redis is and how to reach it (runtime-config.ts, docs/configuration.md). */
export interface RedisSettings {
  readonly REDIS_URL: string;
  readonly REDIS_NAT_MAP?: string | undefined;
  readonly REDIS_CLUSTER_DNS_LOOKUP?: 'passthrough' | undefined;
  readonly REDIS_TLS_CA_FILE?: string | undefined;
}

export interface RedisClientOptions {
  readonly role: RedisRole;
  /** CLIENT SETNAME, so CLIENT LIST tells Baton's connections apart. */
  readonly connectionName: string;
  /** The connection BullMQ's queues share (see roleOptions). */
  readonly bullmq?: boolean;
}

const natMapSchema = z.record(
  z.string().regex(/^[^:]+:\d+$/, 'keys are "host:port" as the cluster announces its nodes'),
  z.object({ host: z.string().min(1), port: z.number().int().min(1).max(65_535) }).strict(),
);

/**
 * REDIS_NAT_MAP: JSON `{"10.0.0.5:6379": {"host": "redis-a.example.com", "port": 7000}, …}`,
 * the address each cluster node announces → the address this process reaches it at.
 */
export function parseNatMap(json: string): Record<string, RedisNode> {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    throw new Error('is not valid JSON; expected {"host:port": {"host": "…", "port": 6379}, …}');
  }
  const parsed = natMapSchema.safeParse(value);
  if (!parsed.success)
    throw new Error(
      `expected {"host:port": {"host": "…", "port": 6379}, …} (${parsed.error.issues[0]?.message ?? 'invalid'})`,
    );
  return parsed.data;
}

function tlsOptions(settings: RedisSettings): TlsOptions {
  return settings.REDIS_TLS_CA_FILE ? { ca: readFileSync(settings.REDIS_TLS_CA_FILE) } : {};
}

/** Managed TLS clusters announce IPs their certificates do not name: connect by the given name. */
const passthroughLookup: NonNullable<ClusterOptions['dnsLookup']> = (address, callback) =>
  callback(null, address);

/**
 * The one way Baton builds a Redis connection from its settings: a `Redis` for one node or a
 * Sentinel-managed master, a `Cluster` for `redis+cluster://` (REDIS_URL, see redis-url.ts), with
 * the role's behaviour during outages and failovers.
 */
export function createRedisClient(settings: RedisSettings, opts: RedisClientOptions): RedisClient {
  const target = parseRedisUrl(settings.REDIS_URL);
  const { role, connectionName, bullmq = false } = opts;
  if (target.kind === 'standalone') {
    const tls = /^rediss:/i.test(target.url) && settings.REDIS_TLS_CA_FILE;
    return new Redis(target.url, {
      ...roleOptions(role, { bullmq }),
      connectionName,
      ...(tls ? { tls: tlsOptions(settings) } : {}),
    });
  }
  const natMap = settings.REDIS_NAT_MAP ? parseNatMap(settings.REDIS_NAT_MAP) : undefined;
  const auth = {
    ...(target.username === undefined ? {} : { username: target.username }),
    ...(target.password === undefined ? {} : { password: target.password }),
  };
  if (target.kind === 'sentinel')
    return new Redis({
      ...roleOptions(role, { bullmq }),
      connectionName,
      sentinels: [...target.sentinels],
      name: target.name,
      ...auth,
      ...(target.db === undefined ? {} : { db: target.db }),
      ...(target.sentinelPassword === undefined
        ? {}
        : { sentinelPassword: target.sentinelPassword }),
      sentinelRetryStrategy: reconnectDelay,
      ...(target.tls ? { tls: tlsOptions(settings), enableTLSForSentinelMode: true } : {}),
      ...(natMap ? { natMap } : {}),
    });
  // A cluster node's connection is not retried by itself (ioredis refreshes the slots instead),
  // and always queues until it is connected: those two options are the Cluster's own.
  const {
    retryStrategy: _retry,
    enableOfflineQueue: _offline,
    replyMapping: _replies,
    ...node
  } = roleOptions(role, { cluster: true, bullmq });
  const options = {
    ...clusterRoleOptions(role, bullmq),
    redisOptions: {
      ...node,
      connectionName,
      ...auth,
      ...(target.tls ? { tls: tlsOptions(settings) } : {}),
    },
    ...(natMap ? { natMap } : {}),
    ...(settings.REDIS_CLUSTER_DNS_LOOKUP === 'passthrough'
      ? { dnsLookup: passthroughLookup }
      : {}),
  };
  // The API's fails fast as a whole once the cluster said it cannot serve (fail-fast-cluster.ts).
  return role === 'api'
    ? new FailFastCluster([...target.nodes], options)
    : new Cluster([...target.nodes], options);
}
