/**
 * Sharded pub/sub on a real Redis Cluster (3 masters + 3 replicas, started here): run events are
 * SPUBLISHed by the commit scripts and SSUBSCRIBEd on the master that owns the run, so a
 * published event costs about one cluster-bus message (the master tells its replica) instead of
 * a broadcast to every node (PUBLISH: one message to each of the 5 other nodes). And a failover
 * of the master that owns a followed run loses no event for its subscribers.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunEvent } from '@baton/protocol';
import { RedisRunStore, RunEventSubscriber } from '@baton/runtime/internal';
import { findRedisServer, freePort, uniquePrefix } from '@baton/testing/redis';
import { createdRun, nextCheckpoint, trickyBodies } from '@baton/testing/redis-runs';

interface Node {
  readonly port: number;
  readonly proc: ChildProcess;
  readonly exited: Promise<void>;
}

interface LocalCluster {
  readonly nodes: Node[];
  readonly dir: string;
  client(): Redis[];
  stop(): Promise<void>;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function clusterInfo(port: number): Promise<Record<string, string>> {
  const conn = new Redis(port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 0 });
  try {
    await conn.connect();
    const info = (await conn.call('CLUSTER', 'INFO')) as string;
    return Object.fromEntries(
      info
        .split(/\r?\n/)
        .filter((line) => line.includes(':'))
        .map((line) => line.split(':', 2) as [string, string]),
    );
  } finally {
    conn.disconnect();
  }
}

function run(cmd: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`${cmd} exited ${String(code)}: ${stderr}`)),
    );
  });
}

/** 3 masters + 3 replicas on free ports (bus ports chosen too), cluster_state:ok on every node. */
async function startCluster(): Promise<LocalCluster> {
  const bin = await findRedisServer();
  if (!bin) throw new Error('redis-server is needed on PATH for this test');
  const dir = await mkdtemp(join(tmpdir(), 'baton-cluster-pubsub-'));
  const nodes: Node[] = [];
  for (let i = 0; i < 6; i += 1) {
    const [port, busPort] = [await freePort(), await freePort()];
    const proc = spawn(
      bin,
      [
        ...['--port', String(port), '--cluster-port', String(busPort), '--bind', '127.0.0.1'],
        ...['--cluster-enabled', 'yes', '--cluster-config-file', `nodes-${port}.conf`],
        ...['--cluster-node-timeout', '2000', '--dir', dir, '--save', '', '--appendonly', 'no'],
      ],
      { stdio: 'ignore' },
    );
    nodes.push({ port, proc, exited: new Promise((r) => proc.once('exit', () => r())) });
  }
  const kill = (): void => nodes.forEach((n) => n.proc.kill('SIGKILL'));
  process.on('exit', kill);
  for (const node of nodes)
    for (let tries = 0; ; tries += 1) {
      const up = await clusterInfo(node.port).then(
        () => true,
        () => false,
      );
      if (up) break;
      if (tries > 100) throw new Error(`redis-server on ${node.port} did not start`);
      await sleep(50);
    }
  const cli = bin.replace(/redis-server$/, 'redis-cli');
  await run(cli, [
    '--cluster',
    'create',
    ...nodes.map((n) => `127.0.0.1:${n.port}`),
    '--cluster-replicas',
    '1',
    '--cluster-yes',
  ]);
  await untilClusterOk(nodes);
  return {
    nodes,
    dir,
    client: () => nodes.map((n) => new Redis(n.port, '127.0.0.1')),
    stop: async () => {
      kill();
      await Promise.all(nodes.map((n) => n.exited));
      process.off('exit', kill);
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** A node's ROLE reply: a replica's says whether its link to its master is up. */
async function role(port: number): Promise<string[]> {
  const conn = new Redis(port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 0 });
  try {
    await conn.connect();
    return ((await conn.call('ROLE')) as unknown[]).map(String);
  } catch {
    return [];
  } finally {
    conn.disconnect();
  }
}

/**
 * Every node says cluster_state:ok and knows every other node, and every replica is connected
 * to its master (a manual failover needs that).
 */
async function untilClusterOk(nodes: readonly Node[]): Promise<void> {
  for (let tries = 0; ; tries += 1) {
    const infos = await Promise.all(
      nodes.map((n) => clusterInfo(n.port).catch((): Record<string, string> => ({}))),
    );
    const roles = await Promise.all(nodes.map((n) => role(n.port)));
    const replicas = roles.filter((r) => r[0] === 'slave');
    if (
      infos.every(
        (i) => i.cluster_state === 'ok' && i.cluster_known_nodes === String(nodes.length),
      ) &&
      replicas.length === nodes.length / 2 &&
      replicas.every((r) => r[3] === 'connected')
    )
      return;
    if (tries > 600) throw new Error('the cluster did not reach cluster_state:ok');
    await sleep(100);
  }
}

/** Cluster-bus messages so far, each counted once (sent by one node, received by another). */
async function busMessages(ports: readonly number[]): Promise<number> {
  let total = 0;
  for (const port of ports) {
    const info = await clusterInfo(port);
    total +=
      Number(info.cluster_stats_messages_sent ?? 0) +
      Number(info.cluster_stats_messages_received ?? 0);
  }
  return total / 2;
}

/**
 * Bus messages per publish of `publish()` (which publishes `count` messages), minus the ping/pong
 * traffic the cluster sends anyway, measured at the same rate just before.
 */
async function perPublish(
  ports: readonly number[],
  count: number,
  publish: () => Promise<void>,
): Promise<number> {
  const idleFrom = await busMessages(ports);
  const idleStart = performance.now();
  await sleep(1_500);
  const idleRate = ((await busMessages(ports)) - idleFrom) / (performance.now() - idleStart);
  const from = await busMessages(ports);
  const start = performance.now();
  await publish();
  // Replicas receive a shard message a moment after its master sent it.
  await sleep(200);
  const spent = (await busMessages(ports)) - from;
  return (spent - idleRate * (performance.now() - start)) / count;
}

function collector(): { events: RunEvent[]; onEvent: (e: RunEvent) => void } {
  const events: RunEvent[] = [];
  return { events, onEvent: (e) => void events.push(e) };
}

describe('sharded pub/sub on a Redis Cluster (3 masters + 3 replicas)', () => {
  let cluster: LocalCluster;
  let redis: Cluster;
  let store: RedisRunStore;
  let subscriber: RunEventSubscriber;
  let clock = 1_000;

  beforeAll(async () => {
    cluster = await startCluster();
    redis = new Cluster(
      cluster.nodes.map((n) => ({ host: '127.0.0.1', port: n.port })),
      {
        redisOptions: { maxRetriesPerRequest: null },
        // Patient through a failover (what a worker's client does; not under test here).
        maxRedirections: 200,
        retryDelayOnClusterDown: 200,
        retryDelayOnFailover: 200,
        retryDelayOnMoved: 100,
      },
    );
    store = new RedisRunStore({ redis, prefix: uniquePrefix('cps'), now: () => clock++ });
    subscriber = new RunEventSubscriber({ redis, source: store });
  }, 60_000);

  afterAll(async () => {
    await subscriber?.close();
    await redis?.quit().catch(() => undefined);
    await cluster?.stop();
  });

  /** Master port of each slot, from CLUSTER SLOTS. */
  async function masterOf(key: string): Promise<number> {
    const slot = (await redis.call('CLUSTER', 'KEYSLOT', key)) as number;
    const slots = (await redis.call('CLUSTER', 'SLOTS')) as [number, number, [string, number]][];
    const range = slots.find(([from, to]) => slot >= from && slot <= to);
    if (!range) throw new Error(`no master for slot ${slot}`);
    return range[2][1];
  }

  /** A created run and a writer that commits `commits` more events, one commit each. */
  async function newRun() {
    const created = createdRun();
    const runId = created.checkpoint.identity.runId;
    const first = await store.create(created.checkpoint, created.events);
    let cp = created.checkpoint;
    let version = first.version;
    const commit = async (): Promise<readonly RunEvent[]> => {
      cp = nextCheckpoint(cp, { status: 'running' });
      const r = await store.commit(runId, version, cp, trickyBodies(cp.step).slice(0, 1), null);
      version = r.version;
      return r.events;
    };
    return { runId, commit };
  }

  it('delivers the runs of every master, at about one bus message per published event (PUBLISH: one per other node)', async () => {
    const ports = cluster.nodes.map((n) => n.port);
    // Two runs on each master.
    const runs: Awaited<ReturnType<typeof newRun>>[] = [];
    const perMaster = new Map<number, number>();
    while (runs.length < 6) {
      const r = await newRun();
      const master = await masterOf(store.channelOf(r.runId));
      if ((perMaster.get(master) ?? 0) >= 2) continue;
      perMaster.set(master, (perMaster.get(master) ?? 0) + 1);
      runs.push(r);
    }
    expect(perMaster.size).toBe(3);
    const heard = await Promise.all(
      runs.map(async (r) => {
        const c = collector();
        await subscriber.subscribe(r.runId, 0, c.onEvent);
        return c;
      }),
    );
    const ROUNDS = 100;
    const sharded = await perPublish(ports, ROUNDS * runs.length, async () => {
      for (let i = 0; i < ROUNDS; i += 1) await Promise.all(runs.map((r) => r.commit()));
    });
    for (const [i, r] of runs.entries()) {
      const log = await store.readEvents(r.runId);
      expect(log.length).toBeGreaterThan(ROUNDS);
      await expect.poll(() => heard[i]!.events.length).toBe(log.length);
      expect(heard[i]!.events).toEqual(log);
    }
    // The same number of messages with a plain PUBLISH, for comparison.
    const broadcast = await perPublish(ports, ROUNDS * runs.length, async () => {
      for (let i = 0; i < ROUNDS; i += 1)
        await Promise.all(runs.map((r) => redis.publish(store.channelOf(r.runId), '{}')));
    });
    console.log(
      `cluster-bus messages per published event: SPUBLISH ${sharded.toFixed(2)}, PUBLISH ${broadcast.toFixed(2)}`,
    );
    expect(sharded).toBeLessThanOrEqual(1.2);
    expect(broadcast).toBeGreaterThan(3);
  }, 60_000);

  it('follows a run across a failover of its master: every event delivered once, in order', async () => {
    const r = await newRun();
    const c = collector();
    const unsub = await subscriber.subscribe(r.runId, 0, c.onEvent);
    for (let i = 0; i < 5; i += 1) await r.commit();
    await expect.poll(() => c.events.length).toBe(await store.lastSeq(r.runId));

    // Promote the replica of the run's master (CLUSTER FAILOVER: the old master becomes its
    // replica, and Redis ends the shard subscriptions it held with a pushed SUNSUBSCRIBE).
    const oldMaster = await masterOf(store.channelOf(r.runId));
    const nodesOf = async (port: number): Promise<string> => {
      const conn = new Redis(port, '127.0.0.1');
      try {
        return (await conn.call('CLUSTER', 'NODES')) as string;
      } finally {
        conn.disconnect();
      }
    };
    // The replica's line names its master's id (it may take the cluster a moment to show it).
    let replicaPort = 0;
    await expect
      .poll(async () => {
        const lines = (await nodesOf(oldMaster)).split('\n');
        const masterId = lines.find((l) => l.includes('myself'))?.split(' ')[0];
        const line = lines.find((l) => l.includes(`slave ${masterId}`));
        replicaPort = Number(/:(\d+)@/.exec(line ?? '')?.[1] ?? 0);
        return replicaPort;
      })
      .toBeGreaterThan(0);
    const replica = new Redis(replicaPort, '127.0.0.1');
    await replica.call('CLUSTER', 'FAILOVER');
    replica.disconnect();
    // Commits go on throughout (the client follows the slot to its new master).
    for (let i = 0; i < 40; i += 1) {
      await r.commit();
      await sleep(25);
    }
    expect(await masterOf(store.channelOf(r.runId))).toBe(replicaPort);
    const log = await store.readEvents(r.runId);
    await expect.poll(() => c.events.length, { timeout: 15_000 }).toBe(log.length);
    expect(c.events).toEqual(log);
    // …and live delivery resumed on the new master (not only the catch-up read).
    const more = await r.commit();
    await expect.poll(() => c.events.at(-1)?.seq).toBe(more.at(-1)?.seq);
    await unsub();
  }, 60_000);

  it('a killed master: the events committed once its replica took over reach the subscriber, with nothing published after them', async () => {
    const r = await newRun();
    const c = collector();
    const unsub = await subscriber.subscribe(r.runId, 0, c.onEvent);
    await r.commit();
    await expect.poll(() => c.events.length).toBe(await store.lastSeq(r.runId));
    const port = await masterOf(store.channelOf(r.runId));
    const node = cluster.nodes.find((n) => n.port === port)!;
    node.proc.kill('SIGKILL');
    await node.exited;
    // These wait for the promotion (the client retries through CLUSTERDOWN), and may well be
    // published before the subscriber is subscribed on the new master: only the catch-up from the
    // stream, once it is, can deliver them.
    await r.commit();
    await r.commit();
    const log = await store.readEvents(r.runId);
    await expect.poll(() => c.events.length, { timeout: 20_000 }).toBe(log.length);
    expect(c.events).toEqual(log);
    await unsub();
  }, 60_000);
});
