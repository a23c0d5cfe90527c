import { Cluster } from 'ioredis';
import { RedisTopologyError } from '../errors/redis-topology-error.ts';
import { isRedisUnavailable } from './connection.ts';
import type { RedisClient } from './scripts.ts';

/**
 * Refuses a one-node client connected to a Redis Cluster node: every key outside that node's
 * slots would answer MOVED (the worker used to exit with `MOVED 8105 …`, the API to answer 500).
 * INFO may be renamed or disabled on a managed Redis: then there is nothing to check.
 */
export async function checkTopology(redis: RedisClient): Promise<void> {
  if (redis instanceof Cluster) return;
  let info: string;
  try {
    info = await redis.info('cluster');
  } catch (error) {
    if (isRedisUnavailable(error)) throw error;
    return;
  }
  if (/^cluster_enabled:1\b/m.test(info))
    throw new RedisTopologyError(
      'REDIS_URL points at a Redis Cluster node; set REDIS_URL=redis+cluster://host:port[,host:port…] (its nodes, rediss+cluster:// for TLS)',
    );
}
