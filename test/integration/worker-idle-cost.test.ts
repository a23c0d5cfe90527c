/**
 * What one stock worker costs Redis while nothing happens: a worker serving 31 agents (demo,
 * matrix, bench, children) with BATON_QUEUE_SHARDS = 16 holds at most 40 connections and sends
 * at most 20 commands per second while idle (before queue shards: 138 connections and 171
 * commands/s with K = 1, two BullMQ Workers per agent, each Queue on its own connection).
 * Counts, not times: CLIENT LIST, and INFO commandstats (commands inside scripts included) over
 * a 35 s window. Its own Redis, so
 * no other test's clients are counted.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { childAgents, createDemoAgents, matrixAgents } from '@baton/core/testing';
import type { AgentDefinition } from '@baton/core';
import { systemClock } from '@baton/runtime';
import { BatonWorker, loadWorkerConfig } from '@baton/worker';
import { benchAgents } from '@baton/testing/bench-agents';
import { startRedisServer, type RedisHandle } from '@baton/testing/redis';
import { silentLogger } from '@baton/testing/worker-harness';

/** Longer than every periodic task of an idle worker (polls, stall checks, the reconciler). */
const WINDOW_MS = 35_000;

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

/** Calls per command, without what the measurement itself sends (INFO, CLIENT). */
async function commandCalls(redis: Redis): Promise<number> {
  return [...(await commandHistogram(redis)).values()].reduce((a, b) => a + b, 0);
}

/** Calls by command name, so a failure says which periodic task grew. */
async function commandHistogram(redis: Redis): Promise<Map<string, number>> {
  const text = await redis.info('commandstats');
  const byName = new Map<string, number>();
  for (const m of text.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm))
    if (!['info', 'client|list', 'client', 'ping'].includes(m[1] ?? ''))
      byName.set(m[1] ?? '', Number(m[2]));
  return byName;
}

describe('an idle worker', () => {
  let server: RedisHandle;
  let worker: BatonWorker;
  let probe: Redis;

  beforeAll(async () => {
    server = await startRedisServer();
    probe = new Redis(server.url);
  });

  afterAll(async () => {
    await worker?.stop(500);
    probe?.disconnect();
    await server?.stop();
  });

  it(
    'serving 31 agents on 16 queue shards: at most 40 connections and 20 commands/s',
    { timeout: 90_000 },
    async () => {
      const agents = stockAgents();
      expect(agents.length).toBeGreaterThanOrEqual(31);
      const config = loadWorkerConfig({
        REDIS_URL: server.url,
        BATON_QUEUE_SHARDS: '16',
        LOG_LEVEL: 'silent',
      });
      worker = new BatonWorker({ config, agents, logger: silentLogger });
      await worker.start();
      // Past start-up (adverts, the first drain check, Workers' first fetches).
      await new Promise((r) => setTimeout(r, 2_000));
      const beforeByName = await commandHistogram(probe);
      const before = await commandCalls(probe);
      await new Promise((r) => setTimeout(r, WINDOW_MS));
      const afterByName = await commandHistogram(probe);
      const after = await commandCalls(probe);
      const delta = [...afterByName]
        .map(([name, n]) => [name, n - (beforeByName.get(name) ?? 0)] as const)
        .filter(([, n]) => n > 0)
        .sort((a, b) => b[1] - a[1]);
      console.info(
        `[worker-idle-cost] calls in ${String(WINDOW_MS / 1000)} s: ${delta.map(([name, n]) => `${name}=${String(n)}`).join(' ')}`,
      );
      const clients = (await probe.client('LIST')) as string;
      // Everyone but the probe itself.
      const connections = clients.trim().split('\n').length - 1;
      const perSecond = ((after - before) * 1000) / WINDOW_MS;
      console.info(
        `[worker-idle-cost] ${String(agents.length)} agents, K=16: ${String(connections)} connections, ${perSecond.toFixed(1)} commands/s idle`,
      );
      expect(connections).toBeLessThanOrEqual(40);
      expect(after - before).toBeLessThanOrEqual((20 * WINDOW_MS) / 1000);
    },
  );
});
