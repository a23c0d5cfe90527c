/**
 * Issue 22: what one stock worker costs a Redis Cluster while nothing happens. A worker serving
 * 31 agents (demo, matrix, bench, children) with BATON_QUEUE_SHARDS = 16 on a real cluster of
 * 3 masters + 3 replicas holds at most 40 connections (CLIENT LIST on every node, replication
 * links left out) and sends at most 20 commands per second while idle (INFO commandstats of the
 * masters, commands inside scripts included, over a 35 s window). Each shard's BullMQ Worker
 * used to block on a Cluster client of its own, which connected to most nodes: 111 connections.
 * Its own cluster, so no other test's clients are counted.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { childAgents, createDemoAgents, matrixAgents } from '@baton/core/testing';
import type { AgentDefinition } from '@baton/core';
import { systemClock } from '@baton/runtime';
import { BatonWorker, loadWorkerConfig } from '@baton/worker';
import { benchAgents } from '@baton/testing/bench-agents';
import { startRedisCluster, type RedisCluster } from '@baton/testing/redis-cluster';
import { silentLogger } from '@baton/testing/worker-harness';

/** Longer than every periodic task of an idle worker (polls, stall checks, the reconciler). */
const WINDOW_MS = 35_000;
/**
 * What the measurement sends (INFO, CLIENT LIST, CLUSTER NODES) and what is not the worker's:
 * the replicas' REPLCONF ACK to their masters, every second.
 */
const NOT_THE_WORKERS = new Set(['info', 'client|list', 'cluster|nodes', 'replconf', 'ping']);

function stockAgents(): AgentDefinition[] {
  const byName = new Map<string, AgentDefinition>();
  for (const a of [
    ...createDemoAgents(systemClock),
    ...matrixAgents(),
    ...benchAgents(systemClock),
    ...childAgents(),
  ])
    if (!byName.has(a.name)) byName.set(a.name, a);
  return [...byName.values()];
}

/** Client connections on every node, by name: not replication links, not the listing's own. */
async function connections(cluster: RedisCluster): Promise<Map<string, number>> {
  const byName = new Map<string, number>();
  for (const port of cluster.ports) {
    const list = String(await cluster.nodeCommand(port, 'CLIENT', 'LIST'));
    for (const line of list.split('\n')) {
      if (!line.startsWith('id=')) continue;
      const flags = /\bflags=(\S*)/.exec(line)?.[1] ?? '';
      const cmd = /\bcmd=(\S*)/.exec(line)?.[1] ?? '';
      if (flags.includes('S') || flags.includes('M') || cmd === 'client|list') continue;
      const name = `${/\bname=(\S*)/.exec(line)?.[1] || '(none)'} @${String(port)}`;
      byName.set(name, (byName.get(name) ?? 0) + 1);
    }
  }
  return byName;
}

/** Calls of every command on the masters, without what is not the worker's. */
async function masterCalls(cluster: RedisCluster): Promise<number> {
  let calls = 0;
  for (const stats of await cluster.perNodeCommandStats()) {
    if (stats.role !== 'master') continue;
    for (const [cmd, n] of Object.entries(stats.byCommand))
      if (!NOT_THE_WORKERS.has(cmd)) calls += n;
  }
  return calls;
}

const total = (m: Map<string, number>): number => [...m.values()].reduce((a, b) => a + b, 0);

describe('an idle worker on a Redis Cluster', () => {
  let cluster: RedisCluster;
  let worker: BatonWorker | undefined;

  beforeAll(async () => {
    cluster = await startRedisCluster({ masters: 3, replicasPerMaster: 1 });
  }, 60_000);

  afterAll(async () => {
    await worker?.stop(500);
    await cluster?.stop();
  });

  it(
    'serving 31 agents on 16 queue shards: at most 40 connections and 20 commands/s',
    { timeout: 120_000 },
    async () => {
      const agents = stockAgents();
      expect(agents.length).toBeGreaterThanOrEqual(31);
      const before = await connections(cluster);
      const config = loadWorkerConfig({
        REDIS_URL: cluster.url,
        BATON_QUEUE_SHARDS: '16',
        LOG_LEVEL: 'silent',
      });
      worker = new BatonWorker({ config, agents, logger: silentLogger });
      await worker.start();
      // Past start-up (adverts, the first drain check, Workers' first fetches).
      await new Promise((r) => setTimeout(r, 3_000));
      const calls0 = await masterCalls(cluster);
      await new Promise((r) => setTimeout(r, WINDOW_MS));
      const calls1 = await masterCalls(cluster);
      const after = await connections(cluster);
      const held = total(after) - total(before);
      const perSecond = ((calls1 - calls0) * 1000) / WINDOW_MS;
      const names = [...after.entries()]
        .filter(([name]) => !before.has(name))
        .map(([name, n]) => `${name}${n > 1 ? ` ×${String(n)}` : ''}`);
      console.info(
        `[cluster-idle-cost] ${String(agents.length)} agents, K=16: ${String(held)} connections, ${perSecond.toFixed(1)} commands/s idle`,
      );
      expect(held, names.join('\n')).toBeLessThanOrEqual(40);
      expect(calls1 - calls0).toBeLessThanOrEqual((20 * WINDOW_MS) / 1000);
    },
  );
});
