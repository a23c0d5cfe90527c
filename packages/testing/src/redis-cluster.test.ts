import { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedisCluster, type RedisCluster } from './redis-cluster.ts';

describe('Redis Cluster test fixture', () => {
  let cluster: RedisCluster;
  let client: Cluster;

  beforeAll(async () => {
    cluster = await startRedisCluster({ nodeTimeoutMs: 2000 });
    client = new Cluster(
      cluster.ports.map((port) => ({ host: '127.0.0.1', port })),
      { clusterRetryStrategy: () => 200, retryDelayOnClusterDown: 200, maxRedirections: 64 },
    );
  }, 60_000);

  afterAll(async () => {
    client?.disconnect();
    await cluster?.stop();
  });

  it('starts 3 masters, each with one replica, on the ports its URL names', async () => {
    const nodes = await cluster.nodes();
    expect(nodes.filter((n) => n.role === 'master')).toHaveLength(3);
    const replicas = nodes.filter((n) => n.role === 'replica');
    expect(replicas).toHaveLength(3);
    const masterPorts = new Set(nodes.filter((n) => n.role === 'master').map((n) => n.port));
    expect(new Set(replicas.map((r) => r.masterPort))).toEqual(masterPorts);
    expect(nodes.every((n) => n.alive && typeof n.pid === 'number')).toBe(true);
    expect(cluster.url).toBe(
      `redis+cluster://${cluster.ports.map((p) => `127.0.0.1:${p}`).join(',')}`,
    );
  });

  it('says which master holds a key, and counts commands, CPU and bus messages per node', async () => {
    const key = '{fixture-key}:a';
    const master = await cluster.masterForKey(key);
    expect(await cluster.keySlot(key)).toBe(await cluster.keySlot('fixture-key'));
    const before = await cluster.perNodeCommandStats();
    const busBefore = await cluster.busMessages();
    for (let i = 0; i < 50; i += 1) await client.set(key, String(i));
    expect(await cluster.nodeCommand(master, 'GET', key)).toBe('49');
    const after = await cluster.perNodeCommandStats();
    const sets = (port: number, stats: typeof before): number =>
      stats.find((s) => s.port === port)?.byCommand['set'] ?? 0;
    expect(sets(master, after) - sets(master, before)).toBe(50);
    for (const other of cluster.ports.filter((p) => p !== master))
      expect(sets(other, after) - sets(other, before)).toBeLessThanOrEqual(
        // a replica of the master replays the writes; no other master takes them
        (await cluster.nodes()).find((n) => n.port === other)?.masterPort === master ? 50 : 0,
      );
    expect(after.every((s) => s.total > 0)).toBe(true);
    expect((await cluster.perNodeCpu()).every((c) => c.seconds >= 0)).toBe(true);
    // A PUBLISH on a cluster is broadcast over the bus to every other node (5 of them here).
    await client.publish('fixture-channel', 'hello');
    for (let i = 0; i < 200; i += 1) {
      if ((await cluster.busMessages()).sent >= busBefore.sent + 5) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect((await cluster.busMessages()).sent).toBeGreaterThanOrEqual(busBefore.sent + 5);
  });

  it('promotes the replica when a master is killed, and takes the old master back as a replica', async () => {
    const key = '{failover-key}:x';
    await client.set(key, 'kept');
    await client.wait(1, 2000); // the replica has the write before its master dies
    const old = await cluster.masterForKey(key);
    const replica = (await cluster.nodes()).find((n) => n.masterPort === old);
    expect(replica).toBeDefined();
    await cluster.kill(old);
    expect((await cluster.nodes()).find((n) => n.port === old)?.alive).toBe(false);
    await cluster.waitHealthy();
    expect(await cluster.masterForKey(key)).toBe(replica?.port);
    expect(await client.get(key)).toBe('kept');

    await cluster.restart(old);
    const back = (await cluster.nodes()).find((n) => n.port === old);
    expect(back).toMatchObject({ alive: true, role: 'replica', masterPort: replica?.port });
  }, 60_000);

  it('stop() kills every node', async () => {
    const second = await startRedisCluster({ masters: 3, replicasPerMaster: 0 });
    const nodes = await second.nodes();
    expect(nodes.map((n) => n.role)).toEqual(['master', 'master', 'master']);
    await second.stop();
    await expect(second.nodeCommand(second.ports[0] ?? 0, 'PING')).rejects.toThrow();
  }, 60_000);
});
