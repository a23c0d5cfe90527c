/**
 * Test and bench clients for a Redis URL, standalone or cluster alike: `redis+cluster://h:p,…`
 * gives an ioredis Cluster, anything else a Redis. For a test's or a bench's own reads (audits,
 * TTL checks, accounting), never for the system under test, which builds its clients from
 * REDIS_URL itself. Whole-keyspace reads (SCAN, INFO) go to every master of a cluster.
 */
import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';

export type AnyRedis = Redis | Cluster;

const CLUSTER_SCHEME = 'redis+cluster:';

export function isClusterUrl(url: string): boolean {
  return url.startsWith(`${CLUSTER_SCHEME}//`) || url.startsWith('rediss+cluster://');
}

/** The seed nodes of a `redis+cluster://h1:p1,h2:p2` URL. */
export function clusterSeeds(url: string): { host: string; port: number }[] {
  const rest = url.replace(/^rediss?\+cluster:\/\//, '').replace(/[/?#].*$/, '');
  const hosts = rest.includes('@') ? rest.slice(rest.lastIndexOf('@') + 1) : rest;
  return hosts.split(',').map((hostPort) => {
    const i = hostPort.lastIndexOf(':');
    return i < 0
      ? { host: hostPort, port: 6379 }
      : { host: hostPort.slice(0, i), port: Number(hostPort.slice(i + 1)) };
  });
}

/**
 * A client for `url`. Patient on a cluster (a test reads through a failover too): it waits for
 * the cluster to answer again rather than giving up after ioredis' 16 redirections.
 */
export function testRedis(url: string, options: RedisOptions = {}): AnyRedis {
  if (!isClusterUrl(url)) return new Redis(url, options);
  const clusterOptions: ClusterOptions = {
    redisOptions: options,
    maxRedirections: 1000,
    retryDelayOnClusterDown: 200,
    retryDelayOnFailover: 200,
    retryDelayOnTryAgain: 200,
    clusterRetryStrategy: () => 200,
  };
  return new Cluster(clusterSeeds(url), clusterOptions);
}

/** Every master of a cluster client (each a plain Redis), or the client itself. */
export function mastersOf(client: AnyRedis): Redis[] {
  return client instanceof Cluster ? client.nodes('master') : [client];
}

/** Every key matching `pattern`, on every master (SCAN is per node on a cluster). */
export async function scanKeys(client: AnyRedis, pattern: string): Promise<string[]> {
  const out: string[] = [];
  for (const node of mastersOf(client)) {
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      cursor = next;
      out.push(...keys);
    } while (cursor !== '0');
  }
  return out;
}
