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

  it('follows a failover: the promoted master (no replica yet) acknowledges on its own disk, then waits for the old master once it is back as its replica', async () => {
    const client = await apiClient();
    const durability = new Durability(client, 'strict');
    await durability.check();
    const key = '{durable-failover}:cp';
    const old = await cluster.masterForKey(key);
    const live = cluster.ports.filter((p) => p !== old);
    await cluster.kill(old);
    let restarted = false;
    try {
      // The replica is promoted, and every live node says cluster_state:ok again.
      const deadline = Date.now() + 60_000;
      for (;;) {
        const infos = await Promise.all(
          live.map((p) => cluster.nodeCommand(p, 'CLUSTER', 'INFO').catch(() => '')),
        );
        const owner = await cluster.masterForKey(key).catch(() => old);
        if (owner !== old && infos.every((i) => /^cluster_state:ok/m.test(String(i)))) break;
        if (Date.now() > deadline) throw new Error('no promotion within 60 s');
        await new Promise((r) => setTimeout(r, 100));
      }
      const promoted = await cluster.masterForKey(key);
      // A write there is acknowledged (it used to wait for a replica the master no longer has,
      // and every strict write to it answered 503 until the old master came back).
      const acknowledged = async (value: string): Promise<unknown> => {
        for (let attempt = 0; ; attempt += 1) {
          try {
            await client.set(key, value);
            return await durability.acknowledge().then(() => 'ok');
          } catch (error) {
            // The first commands after the promotion may still meet the old slot map.
            if (attempt >= 20) return error;
            await new Promise((r) => setTimeout(r, 100));
          }
        }
      };
      expect(await acknowledged('alone')).toBe('ok');
      expect(await acknowledged('alone-2')).toBe('ok');
      expect(durability.unreplicatedAcknowledgements).toBeGreaterThan(0);

      // The old master comes back as the promoted one's replica: writes wait for it again.
      await cluster.restart(old);
      restarted = true;
      const before = await waitCalls(promoted);
      const until = Date.now() + 30_000;
      let waited = false;
      while (!waited && Date.now() < until) {
        expect(await acknowledged(`paired-${String(Date.now())}`)).toBe('ok');
        waited = (await waitCalls(promoted)) > before;
        if (!waited) await new Promise((r) => setTimeout(r, 200));
      }
      expect(waited).toBe(true);
      const counted = durability.unreplicatedAcknowledgements;
      expect(await acknowledged('paired-again')).toBe('ok');
      expect(durability.unreplicatedAcknowledgements).toBe(counted);
    } finally {
      if (!restarted) await cluster.restart(old);
    }
  }, 150_000);

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
