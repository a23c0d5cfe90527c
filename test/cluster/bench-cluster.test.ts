/**
 * `npm run -s bench -- --scenario=cluster` (bench/cluster.ts) on tiny knobs: it starts its own
 * cluster, runs the batch on it and on one Redis, and reports every figure issue 22 asks for.
 * Counts and shapes only; no timing is asserted.
 */
import { describe, expect, it } from 'vitest';
import { runBench } from '@baton/testing/bench-run';

interface ClusterReport {
  runsPerSec: { cluster: number; standalone: number };
  commandsPerMaster: Record<string, number>;
  maxMasterCommandShare: number;
  redisCpuSecondsPerMaster: Record<string, number>;
  eventsPublished: number;
  busMessagesPerPublish: number | null;
  idleWorker: { redisConnections: number; idleCommandsPerSec: number };
}

describe('npm run bench: the cluster scenario', () => {
  it('completes on tiny knobs and reports per-master and bus figures', async () => {
    const { code, out, err } = await runBench(['cluster'], {
      BENCH_CLUSTER_RUNS: '6',
      BENCH_CLUSTER_WARMUP_RUNS: '2',
      BENCH_CLUSTER_IN_FLIGHT: '3',
      BENCH_CLUSTER_REPLICAS: '0',
      BENCH_CLUSTER_IDLE_MS: '1000',
    });
    expect(code, err.slice(-3000)).toBe(0);
    const r = (JSON.parse(out) as { scenarios: { cluster: ClusterReport } }).scenarios.cluster;
    expect(r.runsPerSec.cluster).toBeGreaterThan(0);
    expect(r.runsPerSec.standalone).toBeGreaterThan(0);
    expect(Object.keys(r.commandsPerMaster)).toHaveLength(3);
    expect(r.maxMasterCommandShare).toBeGreaterThan(0);
    expect(r.maxMasterCommandShare).toBeLessThanOrEqual(1);
    expect(Object.keys(r.redisCpuSecondsPerMaster)).toHaveLength(3);
    expect(r.eventsPublished).toBeGreaterThan(0);
    expect(typeof r.busMessagesPerPublish).toBe('number');
    expect(r.idleWorker.redisConnections).toBeGreaterThan(0);
    expect(r.idleWorker.idleCommandsPerSec).toBeGreaterThanOrEqual(0);
  }, 240_000);
});
