/**
 * Scenario "api-throughput": runs/s through the public surface (POST /v1/runs, then the run's SSE
 * stream until run.finished) with N runs in flight (closed loop: a lane starts its next run when
 * the previous one's run.finished frame arrived), for `bench` (parallel tools as BullMQ child
 * jobs) and `bench-sequential` (tools inline). API and worker are child processes (http-stack).
 *
 * Per agent: runs/s, submit → run.finished p50/p99, CPU ms per run of API, worker, Redis (INFO
 * used_cpu_sys+user delta) and this client. Baselines measured in the same run, same runs in
 * flight: InProcessRunner (the engine alone, no Redis, no HTTP) and raw BullMQ chains of 3 jobs
 * (one job per inference round, no Baton, no HTTP), and the HTTP floor (http-floor.ts: that chain
 * behind a minimal node:http + SSE + pub/sub API, same client flow). Nothing asserts on timings.
 */
import { performance } from 'node:perf_hooks';
import { childCpuSeconds, cpuMsPer, stackKnobs, startStack, type Stack } from './http-stack.ts';
import {
  HTTP_FLOOR_WHY,
  measureHttpFloor,
  startHttpFloor,
  type HttpFloorResult,
} from './http-floor.ts';
import { distributedRun, inProcessLatencies } from './latency.ts';
import { rawChains, type RawChainsResult } from './raw-bullmq-chains.ts';
import {
  BenchError,
  benchClient,
  budgetCheck,
  envInt,
  redisSnapshot,
  round,
  type Scenario,
} from './lib.ts';
import { lanes, stats, statsRatio } from './stats.ts';

const AGENTS = ['bench', 'bench-sequential'] as const;
const STEPS_PER_RUN = 3;

function knobs() {
  return {
    runs: envInt('BENCH_API_RUNS', 1000, 1),
    warmupRuns: envInt('BENCH_API_WARMUP_RUNS', 100, 0),
    inFlight: envInt('BENCH_API_IN_FLIGHT', 50, 1),
    runTimeoutMs: envInt('BENCH_API_RUN_TIMEOUT_MS', 60_000, 100),
    rawConcurrency: envInt('BENCH_API_RAW_CONCURRENCY', 16, 1),
    ...stackKnobs(),
  };
}

export const apiThroughput: Scenario = {
  name: 'api-throughput',
  description:
    'runs/s through HTTP + SSE with N runs in flight, p50/p99, CPU per run of API/worker/Redis, vs InProcessRunner and raw BullMQ',
  needsRedis: true,
  async run(ctx) {
    const url = ctx.redisUrl;
    if (url === undefined) throw new BenchError('api-throughput needs Redis');
    const k = knobs();
    const redis = benchClient(url, 'bench-api-throughput');
    let stack: Stack | undefined;
    const perAgent: Record<string, unknown> = {};
    let raw: RawChainsResult | undefined;
    let floor: HttpFloorResult | undefined;
    try {
      ctx.log(`raw BullMQ: chains of ${STEPS_PER_RUN} jobs, ${k.inFlight} in flight`);
      raw = await rawChains(url, {
        total: k.runs,
        warmup: k.warmupRuns,
        inFlight: k.inFlight,
        length: STEPS_PER_RUN,
        concurrency: k.rawConcurrency,
        timeoutMs: k.runTimeoutMs,
      });
      ctx.log(`raw BullMQ: ${raw.runsPerSec} chains/s`);
      ctx.log(`HTTP floor: ${k.warmupRuns} warm-up + ${k.runs} runs, ${k.inFlight} in flight`);
      const floorStack = await startHttpFloor(ctx, url, {
        startTimeoutMs: k.startTimeoutMs,
        concurrency: k.rawConcurrency,
        maxSockets: k.inFlight * 2 + 8,
      });
      try {
        floor = await measureHttpFloor(floorStack, {
          runs: k.runs,
          warmupRuns: k.warmupRuns,
          inFlight: k.inFlight,
          timeoutMs: k.runTimeoutMs,
          redis,
        });
      } finally {
        await floorStack.stop();
      }
      ctx.log(`HTTP floor: ${floor.runsPerSec} runs/s, p50 ${floor.latencyMs.p50} ms`);
      stack = await startStack(ctx, url, {
        label: 'api-tp',
        logLevel: k.logLevel,
        startTimeoutMs: k.startTimeoutMs,
        // Every run in flight holds one SSE stream.
        apiEnv: { SSE_MAX_PER_TENANT: String(Math.max(100, k.inFlight * 2)) },
        maxSockets: k.inFlight * 2 + 8,
      });
      const { client, api, worker } = stack;
      for (const agent of AGENTS) {
        ctx.log(
          `${agent}: in-process ${k.warmupRuns} warm-up + ${k.runs} runs, ${k.inFlight} in flight`,
        );
        await inProcessLatencies(agent, k.warmupRuns, 0, k.inFlight, k.runTimeoutMs);
        const ip0 = performance.now();
        const inProc = stats(
          await inProcessLatencies(agent, k.runs, 0, k.inFlight, k.runTimeoutMs),
        );
        const inProcRunsPerSec = (k.runs / (performance.now() - ip0)) * 1000;
        ctx.log(`${agent}: distributed warm-up ${k.warmupRuns} runs`);
        await lanes(k.warmupRuns, k.inFlight, (i) =>
          distributedRun(client, agent, `warm-up ${i}`, k.runTimeoutMs),
        );
        ctx.log(`${agent}: distributed ${k.runs} runs, ${k.inFlight} in flight`);
        const [api0, worker0] = [await childCpuSeconds(api), await childCpuSeconds(worker)];
        const redis0 = await redisSnapshot(redis);
        const client0 = process.cpuUsage();
        const started = performance.now();
        const samples = await lanes(k.runs, k.inFlight, (i) =>
          distributedRun(client, agent, `api-tp ${i}`, k.runTimeoutMs),
        );
        const elapsedMs = performance.now() - started;
        const clientCpu = process.cpuUsage(client0);
        const redis1 = await redisSnapshot(redis);
        const [api1, worker1] = [await childCpuSeconds(api), await childCpuSeconds(worker)];
        const latency = stats(samples.map((s) => s.totalMs));
        const runsPerSec = (k.runs / elapsedMs) * 1000;
        ctx.log(
          `${agent}: ${round(runsPerSec, 1)} runs/s, p50 ${latency.p50} ms, p99 ${latency.p99} ms`,
        );
        perAgent[agent] = {
          runsInFlight: k.inFlight,
          runsPerSec: round(runsPerSec, 1),
          stepsPerSec: round(runsPerSec * STEPS_PER_RUN, 1),
          latencyMs: latency,
          cpuMsPerRun: {
            api: cpuMsPer(api0, api1, k.runs),
            worker: cpuMsPer(worker0, worker1, k.runs),
            redis: round(((redis1.cpuSeconds - redis0.cpuSeconds) * 1000) / k.runs, 3),
            benchClient: round((clientCpu.user + clientCpu.system) / 1000 / k.runs, 3),
          },
          redisCommandsPerRun: round((redis1.totalCommands - redis0.totalCommands) / k.runs, 1),
          inProcess: { runsPerSec: round(inProcRunsPerSec, 1), latencyMs: inProc },
          ratios: {
            runsPerSecOverInProcess: round(runsPerSec / inProcRunsPerSec, 3),
            runsPerSecOverRawBullmq: round(runsPerSec / raw.runsPerSec, 3),
            // The API's CPU per run over all a raw chain costs its worker and client per run.
            apiCpuPerRunOverRawChainCpu:
              api0 === undefined || api1 === undefined || raw.cpuMsPerRun.workerAndClient <= 0
                ? null
                : round(((api1 - api0) * 1000) / k.runs / raw.cpuMsPerRun.workerAndClient, 2),
            latencyOverInProcess: statsRatio(latency, inProc),
            latencyOverRawBullmq: statsRatio(latency, raw.latencyMs),
            runsPerSecOverHttpFloor: round(runsPerSec / floor.runsPerSec, 3),
            apiCpuPerRunOverHttpFloorApiCpu:
              api0 === undefined || api1 === undefined || !floor.cpuMsPerRun.api
                ? null
                : round(((api1 - api0) * 1000) / k.runs / floor.cpuMsPerRun.api, 2),
            latencyOverHttpFloor: statsRatio(latency, floor.latencyMs),
          },
        };
      }
    } finally {
      await stack?.stop();
      redis.disconnect();
    }
    return {
      config: {
        runs: k.runs,
        warmupRuns: k.warmupRuns,
        runsInFlight: k.inFlight,
        measured:
          'closed loop of runsInFlight lanes: t0 before POST /v1/runs, GET /v1/runs/:id/events?after=0 after the 202, t1 at the run.finished frame; runsPerSec = runs / wall time of the batch',
        topology:
          'API and 1 worker (BATON_AGENTS=<bench agents module>, RECONCILER=0, default WORKER_CONCURRENCY 16 / TOOL_CONCURRENCY 32) as child processes; this process is the node:http keep-alive client',
        cpu: 'API and worker from /proc/<pid>/stat, Redis from INFO cpu (used_cpu_sys + used_cpu_user), client from process.cpuUsage; each delta over the measured batch divided by its runs',
        baselines: {
          inProcess:
            'InProcessRunner in this process (real clock), same agent, same runs in flight, after its own warm-up',
          rawBullmq: `chains of ${STEPS_PER_RUN} BullMQ jobs (one per inference round), same runs in flight, Worker concurrency ${k.rawConcurrency} in this process, no HTTP`,
          httpFloor: 'httpFloor.what / .why; measured after rawBullmq, before the Baton stack',
        },
      },
      rawBullmq: raw,
      httpFloor:
        floor === undefined || raw === undefined
          ? null
          : floorSummary(floor, raw, k.rawConcurrency),
      ...perAgent,
    };
  },
};

/** The HTTP floor's figures, over the raw chain, and against the issue-24 budgets. */
function floorSummary(floor: HttpFloorResult, raw: RawChainsResult, concurrency: number) {
  const runsPerSecOverRaw = round(floor.runsPerSec / raw.runsPerSec, 3);
  const apiCpuOverRaw =
    floor.cpuMsPerRun.api === undefined || raw.cpuMsPerRun.workerAndClient <= 0
      ? null
      : round(floor.cpuMsPerRun.api / raw.cpuMsPerRun.workerAndClient, 2);
  return {
    what: `bench/http-floor.ts: minimal node:http API + raw BullMQ worker process (concurrency ${concurrency}) running the same 3-job chain, same runs in flight, same client flow`,
    why: HTTP_FLOOR_WHY,
    ...floor,
    ratios: {
      runsPerSecOverRawBullmq: runsPerSecOverRaw,
      apiCpuPerRunOverRawChainCpu: apiCpuOverRaw,
      latencyOverRawBullmq: statsRatio(floor.latencyMs, raw.latencyMs),
    },
    // met: false = even this floor misses the budget, so no API of this design meets it.
    floorAgainstBudgets: {
      runsPerSecOverRawBullmqBench: budgetCheck(runsPerSecOverRaw, 0.25, 'min'),
      runsPerSecOverRawBullmqSequential: budgetCheck(runsPerSecOverRaw, 0.35, 'min'),
      apiCpuPerRunOverRawChainCpu: budgetCheck(apiCpuOverRaw, 1.5),
    },
  };
}
