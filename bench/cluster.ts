/**
 * Scenario "cluster": Baton on a local Redis Cluster (issue 22). It starts its own cluster
 * (BENCH_CLUSTER_MASTERS masters, BENCH_CLUSTER_REPLICAS replicas each; the fixture of
 * packages/testing/src/redis-cluster.ts) and, in one run, measures:
 * - runs/s of one batch of `bench` runs through API + worker (HTTP + SSE, closed loop of
 *   BENCH_CLUSTER_IN_FLIGHT lanes) on the cluster, and the same batch on the standalone Redis of
 *   the bench run;
 * - on the cluster, per master: commands (INFO commandstats deltas) and their share
 *   (`maxMasterCommandShare`), Redis CPU (INFO cpu deltas);
 * - `busMessagesPerPublish`: cluster-bus messages (CLUSTER INFO cluster_stats_messages_sent,
 *   every node: each message once) during the batch, minus the gossip of a quiet window of the same
 *   length, per event published (PUBLISH + SPUBLISH calls on the masters, Lua's included);
 * - a worker process serving 31 agents (demo, matrix, children and the bench agents) with
 *   BATON_QUEUE_SHARDS=K (default 16): its Redis connections (CLIENT LIST on every node) and its
 *   commands per second while idle.
 * K comes from BATON_QUEUE_SHARDS (default 16) and is passed to the cluster's API and worker;
 * without sharded queues it is ignored. Nothing asserts on timings.
 */
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { BENCH_AGENTS_MODULE } from '@baton/testing/bench-agents';
import {
  startRedisCluster,
  type NodeCommandStats,
  type NodeCpu,
  type RedisCluster,
} from '@baton/testing/redis-cluster';
import { startChild, stackKnobs, startStack, type Stack } from './http-stack.ts';
import { distributedRun } from './latency.ts';
import { BenchError, envInt, round, sleep, type BenchContext, type Scenario } from './lib.ts';
import { lanes, stats } from './stats.ts';

const AGENT = 'bench';
const WORKER_MAIN = fileURLToPath(new URL('../apps/worker/src/main.ts', import.meta.url));
/** demo + matrix + children + the bench module: the 31 agents of issue 22's worker figure. */
const WORKER_AGENTS = `demo,matrix,children,${BENCH_AGENTS_MODULE}`;
/** The bench's own accounting commands, not the system's. */
const OWN_COMMANDS = new Set(['info', 'client|list', 'cluster|nodes', 'cluster|info']);

function knobs() {
  return {
    masters: envInt('BENCH_CLUSTER_MASTERS', 3, 1),
    replicas: envInt('BENCH_CLUSTER_REPLICAS', 1, 0),
    runs: envInt('BENCH_CLUSTER_RUNS', 400, 1),
    warmupRuns: envInt('BENCH_CLUSTER_WARMUP_RUNS', 50, 0),
    inFlight: envInt('BENCH_CLUSTER_IN_FLIGHT', 32, 1),
    idleMs: envInt('BENCH_CLUSTER_IDLE_MS', 10_000, 1000),
    shards: envInt('BATON_QUEUE_SHARDS', 16, 1),
    runTimeoutMs: envInt('BENCH_API_RUN_TIMEOUT_MS', 60_000, 100),
    ...stackKnobs(),
  };
}
type Knobs = ReturnType<typeof knobs>;

async function batch(
  ctx: BenchContext,
  stack: Stack,
  k: Knobs,
  label: string,
): Promise<{ runsPerSec: number; elapsedMs: number; latencyMs: ReturnType<typeof stats> }> {
  ctx.log(`${label}: warm-up ${k.warmupRuns} runs`);
  await lanes(k.warmupRuns, k.inFlight, (i) =>
    distributedRun(stack.client, AGENT, `${label} warm-up ${i}`, k.runTimeoutMs),
  );
  ctx.log(`${label}: ${k.runs} runs, ${k.inFlight} in flight`);
  const t0 = performance.now();
  const samples = await lanes(k.runs, k.inFlight, (i) =>
    distributedRun(stack.client, AGENT, `${label} ${i}`, k.runTimeoutMs),
  );
  const elapsedMs = performance.now() - t0;
  const runsPerSec = round((k.runs / elapsedMs) * 1000, 1);
  ctx.log(`${label}: ${runsPerSec} runs/s`);
  return { runsPerSec, elapsedMs, latencyMs: stats(samples.map((s) => s.totalMs)) };
}

function systemCommands(s: NodeCommandStats): number {
  let n = 0;
  for (const [cmd, calls] of Object.entries(s.byCommand)) if (!OWN_COMMANDS.has(cmd)) n += calls;
  return n;
}

function publishes(s: NodeCommandStats): number {
  return (s.byCommand['publish'] ?? 0) + (s.byCommand['spublish'] ?? 0);
}

/** Per master (by port, as masters at the end of the phase): after − before of `f`. */
function deltaPerMaster<T extends { port: number; role: string }>(
  before: readonly T[],
  after: readonly T[],
  f: (t: T) => number,
): Record<string, number> {
  const out: Record<string, number> = {};
  for (const a of after) {
    if (a.role !== 'master') continue;
    const b = before.find((x) => x.port === a.port);
    out[String(a.port)] = f(a) - (b ? f(b) : 0);
  }
  return out;
}

/** Client connections on every node (by port): not replication links, not our own. */
async function clientConnections(cluster: RedisCluster): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const port of cluster.ports) {
    const list = String(await cluster.nodeCommand(port, 'CLIENT', 'LIST'));
    out[String(port)] = list
      .split('\n')
      .filter((line) => line.startsWith('id='))
      .filter((line) => {
        const flags = /\bflags=(\S*)/.exec(line)?.[1] ?? '';
        const cmd = /\bcmd=(\S*)/.exec(line)?.[1] ?? '';
        return !flags.includes('S') && !flags.includes('M') && cmd !== 'client|list';
      }).length;
  }
  return out;
}

async function idleWorker(
  ctx: BenchContext,
  cluster: RedisCluster,
  k: Knobs,
): Promise<Record<string, unknown>> {
  const base = await clientConnections(cluster);
  ctx.log(`idle worker: 31 agents, BATON_QUEUE_SHARDS=${k.shards}`);
  const worker = await startChild(
    ctx,
    'idle-worker',
    WORKER_MAIN,
    {
      REDIS_URL: cluster.url,
      BATON_PREFIX: `bench-idle-${process.pid}`,
      BATON_AGENTS: WORKER_AGENTS,
      BATON_QUEUE_SHARDS: String(k.shards),
      LOG_LEVEL: k.logLevel,
    },
    'READY ',
    k.startTimeoutMs,
  );
  try {
    // Connections open lazily after READY (queue by queue): let them settle first.
    await sleep(3000);
    const conns = await clientConnections(cluster);
    const before = await cluster.perNodeCommandStats();
    const t0 = performance.now();
    await sleep(k.idleMs);
    const after = await cluster.perNodeCommandStats();
    const seconds = (performance.now() - t0) / 1000;
    const perMaster = deltaPerMaster(before, after, systemCommands);
    const total = Object.values(perMaster).reduce((a, b) => a + b, 0);
    const roles = new Map((await cluster.nodes()).map((n) => [String(n.port), n.role]));
    const byRole = { master: 0, replica: 0 };
    for (const [port, n] of Object.entries(conns))
      byRole[roles.get(port) ?? 'master'] += n - (base[port] ?? 0);
    const connections = byRole.master + byRole.replica;
    return {
      agents: 31,
      queueShards: k.shards,
      redisConnections: connections,
      redisConnectionsByRole: byRole,
      idleCommandsPerSec: round(total / seconds, 1),
      idleCommandsPerSecPerMaster: Object.fromEntries(
        Object.entries(perMaster).map(([p, n]) => [p, round(n / seconds, 1)]),
      ),
      idleWindowSeconds: round(seconds, 1),
    };
  } finally {
    await worker.stop();
  }
}

export const cluster: Scenario = {
  name: 'cluster',
  description:
    'a local Redis Cluster: runs/s vs one Redis, commands and CPU per master, bus messages per publish, an idle 31-agent worker',
  needsRedis: true,
  async run(ctx) {
    const standaloneUrl = ctx.redisUrl;
    if (standaloneUrl === undefined) throw new BenchError('cluster needs a standalone Redis too');
    const k = knobs();
    const stackOpts = (label: string, env: Record<string, string>) => ({
      label,
      logLevel: k.logLevel,
      startTimeoutMs: k.startTimeoutMs,
      apiEnv: { SSE_MAX_PER_TENANT: String(Math.max(100, k.inFlight * 2)), ...env },
      workerEnv: env,
      maxSockets: k.inFlight * 2 + 8,
    });

    // One Redis, as deployed today (no shard setting).
    let stack = await startStack(ctx, standaloneUrl, stackOpts('cl-solo', {}));
    let standalone: Awaited<ReturnType<typeof batch>>;
    try {
      standalone = await batch(ctx, stack, k, 'standalone');
    } finally {
      await stack.stop();
    }

    ctx.log(`starting a Redis Cluster: ${k.masters} masters, ${k.replicas} replica(s) each`);
    const rc = await startRedisCluster({ masters: k.masters, replicasPerMaster: k.replicas });
    try {
      const shardEnv = { BATON_QUEUE_SHARDS: String(k.shards) };
      stack = await startStack(ctx, rc.url, stackOpts('cl', shardEnv));
      let measured;
      let cmd0: NodeCommandStats[], cmd1: NodeCommandStats[];
      let cpu0: NodeCpu[], cpu1: NodeCpu[];
      let bus0: number, bus1: number;
      const busSent = async (): Promise<number> => (await rc.busMessages()).sent;
      try {
        // The warm-up is outside the deltas: snapshot after it.
        await batch(ctx, stack, { ...k, runs: 1 }, 'cluster warm-up');
        [cmd0, cpu0, bus0] = await Promise.all([
          rc.perNodeCommandStats(),
          rc.perNodeCpu(),
          busSent(),
        ]);
        measured = await batch(ctx, stack, { ...k, warmupRuns: 0 }, 'cluster');
        [cmd1, cpu1, bus1] = await Promise.all([
          rc.perNodeCommandStats(),
          rc.perNodeCpu(),
          busSent(),
        ]);
      } finally {
        await stack.stop();
      }
      // The cluster's own gossip over a quiet window as long as the batch.
      ctx.log(`quiet window of ${round(measured.elapsedMs / 1000, 1)} s for the idle gossip`);
      const quiet0 = await busSent();
      const q0 = performance.now();
      await sleep(measured.elapsedMs);
      const quiet1 = await busSent();
      const idleBusPerMs = (quiet1 - quiet0) / (performance.now() - q0);

      const commandsPerMaster = deltaPerMaster(cmd0, cmd1, systemCommands);
      const totalCommands = Object.values(commandsPerMaster).reduce((a, b) => a + b, 0);
      const published = Object.values(deltaPerMaster(cmd0, cmd1, publishes)).reduce(
        (a, b) => a + b,
        0,
      );
      const busDuringBatch = bus1 - bus0;
      // Each bus message counts once (as sent by its node); gossip goes on without Baton.
      const busAboveIdle = busDuringBatch - idleBusPerMs * measured.elapsedMs;
      const cpuPerMaster = deltaPerMaster(cpu0, cpu1, (c) => c.seconds);
      const idle = await idleWorker(ctx, rc, k);
      return {
        config: {
          masters: k.masters,
          replicasPerMaster: k.replicas,
          queueShards: k.shards,
          runs: k.runs,
          warmupRuns: k.warmupRuns,
          runsInFlight: k.inFlight,
          agent: AGENT,
          measured:
            'the same batch (closed loop, POST /v1/runs then its SSE stream to run.finished) through API + 1 worker processes, first on the standalone Redis of this bench run (no shard setting), then on the cluster with BATON_QUEUE_SHARDS=queueShards; per-master figures are INFO commandstats / cpu deltas over the measured batch (warm-up excluded), without the bench’s own INFO/CLIENT/CLUSTER calls',
        },
        runsPerSec: { cluster: measured.runsPerSec, standalone: standalone.runsPerSec },
        clusterOverStandalone: round(measured.runsPerSec / standalone.runsPerSec, 3),
        latencyMs: { cluster: measured.latencyMs, standalone: standalone.latencyMs },
        commandsPerRun: round(totalCommands / k.runs, 1),
        commandsPerMaster,
        maxMasterCommandShare: round(
          Math.max(...Object.values(commandsPerMaster)) / Math.max(1, totalCommands),
          3,
        ),
        redisCpuSecondsPerMaster: Object.fromEntries(
          Object.entries(cpuPerMaster).map(([p, s]) => [p, round(s, 3)]),
        ),
        eventsPublished: published,
        busMessages: {
          duringBatch: busDuringBatch,
          idleGossipPerSecond: round(idleBusPerMs * 1000, 1),
          aboveIdle: Math.round(busAboveIdle),
        },
        busMessagesPerPublish: published === 0 ? null : round(busAboveIdle / published, 3),
        idleWorker: idle,
      };
    } finally {
      await rc.stop();
    }
  },
};
