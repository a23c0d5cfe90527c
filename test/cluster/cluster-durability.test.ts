/**
 * Issue 22: BATON_DURABILITY=strict on a Redis Cluster. It used to check persistence and send
 * WAITAOF on one arbitrary node. Now every master must persist every write (the check names the
 * one that does not), and a write is acknowledged only once the master that took it has it on a
 * replica too (a failover promotes a replica, and replication is asynchronous): WAIT (WAITAOF on
 * Redis 7.2+) goes to each master on the connection that sent its writes. A real cluster of
 * 3 masters + 3 replicas with appendfsync always.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisClient, type RedisClient } from '@baton/runtime';
import { Durability } from '@baton/runtime/internal';
import { startRedisCluster, type RedisCluster } from '@baton/testing/redis-cluster';

let cluster: RedisCluster;
const clients: RedisClient[] = [];

beforeAll(async () => {
  cluster = await startRedisCluster({ masters: 3, replicasPerMaster: 1, aof: 'always' });
}, 60_000);

afterAll(async () => {
  for (const c of clients) c.disconnect();
  await cluster.stop();
});

async function apiClient(): Promise<RedisClient> {
  const client = createRedisClient(
    { REDIS_URL: cluster.url },
    { role: 'api', connectionName: 'd' },
  );
  client.on('error', () => undefined);
  clients.push(client);
  // A fail-fast client refuses commands until the cluster is ready (the API waits the same way).
  await new Promise((resolve) => client.once('ready', resolve));
  return client;
}

async function waitCalls(port: number): Promise<number> {
  const info = String(await cluster.nodeCommand(port, 'INFO', 'commandstats'));
  return Number(/^cmdstat_wait:calls=(\d+)/m.exec(info)?.[1] ?? '0');
}

describe('strict durability on a Redis Cluster', () => {
  it('checks every master, and waits for a replica of the master that took the write', async () => {
    const client = await apiClient();
    const durability = new Durability(client, 'strict');
    expect(await durability.check()).toBe('fsync-always');
    expect(durability.replicas).toBe(1);

    const key = '{durable-run}:cp';
    const owner = await cluster.masterForKey(key);
    const before = await waitCalls(owner);
    await client.set(key, 'v');
    await durability.acknowledge();
    // The master that took the write was asked (so was every other master, on its connection).
    expect(await waitCalls(owner)).toBe(before + 1);

    // Its replica gone: the write is on one machine only, so it is not acknowledged (503).
    const replica = (await cluster.nodes()).find(
      (n) => n.role === 'replica' && n.masterPort === owner,
    );
    expect(replica).toBeDefined();
    await cluster.kill(replica!.port);
    await client.set(key, 'w');
    const refused = await durability.acknowledge().catch((error: unknown) => error);
    expect(refused).toMatchObject({ code: 'unavailable' });
    expect(String(refused)).toMatch(/no replica confirmed the write/);
    await cluster.restart(replica!.port);
  }, 90_000);

  it('refuses to start when one master does not fsync every write, naming it', async () => {
    const client = await apiClient();
    const masters = (await cluster.nodes()).filter((n) => n.role === 'master' && n.alive);
    const lax = masters[1]!.port;
    await cluster.nodeCommand(lax, 'CONFIG', 'SET', 'appendfsync', 'everysec');
    try {
      await expect(new Durability(client, 'strict').check()).rejects.toThrow(
        new RegExp(
          `appendfsync everysec on cluster master 127\\.0\\.0\\.1:${lax}\\).*BATON_DURABILITY=relaxed`,
        ),
      );
    } finally {
      await cluster.nodeCommand(lax, 'CONFIG', 'SET', 'appendfsync', 'always');
    }
  }, 60_000);
});
