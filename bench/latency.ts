/**
 * Scenario "latency": submit → `run.finished` received over SSE, per run, for a 3-step run.
 *
 * Topology (production-like): the API (apps/api/src/main.ts, i.e. startApi) and one worker
 * (apps/worker/src/main.ts, BATON_AGENTS=<bench agents module>) each run in their own child process on the
 * isolated Redis; this process is only the HTTP client. So client, API and worker do not share
 * an event loop, and every hop (HTTP, Redis, BullMQ, pub/sub, SSE) is a real one.
 *
 * Per run: t0 = just before POST /v1/runs; right after the 202, GET /v1/runs/:id/events?after=0
 * (SSE); t1 = when the `run.finished` frame (status done) arrives. Runs go one at a time
 * (latency, not throughput), then optionally with BENCH_LATENCY_CONCURRENCY runs in flight.
 * Both the 'bench' agent (parallel_streaming: tool calls as BullMQ child jobs) and
 * 'bench-sequential' (tools inline in the step job) are measured.
 *
 * Baseline: the same agents through packages/core's InProcessRunner (in-memory, no Redis) with
 * the real clock: runner.start → the run.finished event seen by runner.onEvent.
 *
 * Baselines before the Baton stack: raw BullMQ 3-job chains (raw-bullmq-chains.ts) and the HTTP
 * floor (http-floor.ts: the same chain behind a minimal node:http + SSE + pub/sub API, the same
 * client flow), both one run at a time.
 *
 * Breakdown: client-side milestones (202, SSE headers, first frame, run.started frame) and
 * server-side segments from the events' own `at` stamps (worker Date.now(), 1 ms resolution,
 * same machine clock as the client), averaged over the runs.
 *
 * Nothing here asserts on timings.
 */
import { performance } from 'node:perf_hooks';
import { InProcessRunner } from '@baton/core';
import type { RunEvent } from '@baton/protocol';
import { systemClock } from '@baton/runtime';
import { benchAgents } from '@baton/testing/bench-agents';
import {
  childCpuSeconds,
  openEvents,
  postJson,
  startStack,
  type Client,
  type Received,
  type Stack,
} from './http-stack.ts';
import {
  HTTP_FLOOR_WHY,
  measureHttpFloor,
  startHttpFloor,
  type HttpFloorResult,
} from './http-floor.ts';
import { BenchError, budgetCheck, envInt, round, withTimeout, type Scenario } from './lib.ts';
import { rawChains, type RawChainsResult } from './raw-bullmq-chains.ts';
import { lanes, mean, stats, statsRatio } from './stats.ts';

const AGENTS = ['bench', 'bench-sequential'] as const;

interface Knobs {
  readonly runs: number;
  readonly warmupRuns: number;
  readonly concurrency: number;
  readonly runTimeoutMs: number;
  readonly startTimeoutMs: number;
  readonly logLevel: string;
}

function knobs(): Knobs {
  return {
    runs: envInt('BENCH_LATENCY_RUNS', 200, 1),
    warmupRuns: envInt('BENCH_LATENCY_WARMUP_RUNS', 30, 0),
    concurrency: envInt('BENCH_LATENCY_CONCURRENCY', 8, 0),
    runTimeoutMs: envInt('BENCH_LATENCY_RUN_TIMEOUT_MS', 10_000, 100),
    startTimeoutMs: envInt('BENCH_TIMEOUT_MS', 120_000, 1000),
    logLevel: process.env['BENCH_LATENCY_LOG'] ?? 'warn',
  };
}

export interface DistributedSample {
  readonly totalMs: number;
  readonly to202Ms: number;
  readonly toSseHeadersMs: number;
  readonly toFirstFrameMs: number;
  readonly toRunStartedFrameMs: number;
  /** Epoch ms (fractional) of t0, to line up with the events' `at`. */
  readonly t0Epoch: number;
  readonly t0: number;
  readonly received: readonly Received[];
}

export async function distributedRun(
  c: Client,
  agent: string,
  label: string,
  timeoutMs: number,
): Promise<DistributedSample> {
  const t0 = performance.now();
  const t0Epoch = performance.timeOrigin + t0;
  const created = await postJson(
    c,
    '/v1/runs',
    { agent, input: { messages: [{ role: 'user', content: `latency ${label}` }] } },
    timeoutMs,
  );
  const t202 = performance.now();
  if (created.status !== 202)
    throw new BenchError(`POST /v1/runs: HTTP ${created.status} ${JSON.stringify(created.body)}`);
  const { runId } = created.body as { runId: string };
  const sse = await openEvents(c, runId, { timeoutMs });
  const t1 = await sse.finished;
  await sse.ended; // outside the timing: lets the keep-alive socket go back to the pool
  const first = sse.received[0];
  const started = sse.received.find((r) => r.event.type === 'run.started');
  return {
    totalMs: t1 - t0,
    to202Ms: t202 - t0,
    toSseHeadersMs: sse.headersAt - t0,
    toFirstFrameMs: (first?.t ?? Number.NaN) - t0,
    toRunStartedFrameMs: (started?.t ?? Number.NaN) - t0,
    t0Epoch,
    t0,
    received: sse.received,
  };
}

/**
 * Server-side segments of one run from the events' `at` (worker/API Date.now(), integer ms):
 * created → started (first step job enqueued and picked up), each step's duration, the gaps
 * between steps (tool jobs + next step job's enqueue and pickup), and run.finished `at` → frame
 * received by this client (pub/sub + API + SSE + client parse).
 */
function segments(s: DistributedSample): Record<string, number> {
  const find = (pred: (e: RunEvent) => boolean): Received | undefined =>
    s.received.find((r) => pred(r.event));
  const out: Record<string, number> = {};
  const created = find((e) => e.type === 'run.created');
  const started = find((e) => e.type === 'run.started');
  const finished = find((e) => e.type === 'run.finished');
  const epochOf = (r: Received): number => s.t0Epoch + (r.t - s.t0);
  if (created) out['t0 → run.created at (POST, createRun)'] = created.event.at - s.t0Epoch;
  if (created && started)
    out['run.created → run.started (step job enqueue + pickup)'] =
      started.event.at - created.event.at;
  const steps = s.received.filter((r) => r.event.type === 'step.started');
  const stepEnds = s.received.filter((r) => r.event.type === 'step.finished');
  for (let i = 0; i < steps.length; i += 1) {
    const st = steps[i] as Received;
    const en = stepEnds[i];
    if (en) out[`step ${i + 1}: step.started → step.finished`] = en.event.at - st.event.at;
    const next = steps[i + 1];
    if (en && next)
      out[`step ${i + 1} → ${i + 2}: step.finished → step.started (tools, next step job)`] =
        next.event.at - en.event.at;
  }
  const last = stepEnds[stepEnds.length - 1];
  if (last && finished)
    out['last step.finished → run.finished'] = finished.event.at - last.event.at;
  if (finished) out['run.finished at → frame at client'] = epochOf(finished) - finished.event.at;
  return out;
}

function breakdown(samples: readonly DistributedSample[]): Record<string, unknown> {
  const keys = new Map<string, number[]>();
  for (const s of samples)
    for (const [k, v] of Object.entries(segments(s))) {
      const list = keys.get(k) ?? [];
      list.push(v);
      keys.set(k, list);
    }
  const firstEvents = samples[0]?.received.map((r) => r.event.type) ?? [];
  return {
    clientMilestonesMs: {
      note: 'client clock (performance.now), from t0 = before POST',
      to202: stats(samples.map((s) => s.to202Ms)),
      toSseResponseHeaders: stats(samples.map((s) => s.toSseHeadersMs)),
      toFirstFrame: stats(samples.map((s) => s.toFirstFrameMs)),
      toRunStartedFrame: stats(samples.map((s) => s.toRunStartedFrameMs)),
      toRunFinishedFrame: stats(samples.map((s) => s.totalMs)),
    },
    serverSegmentsMeanMs: {
      note: "from the events' `at` (Date.now in API/worker, integer ms: each mean is +-0.5 ms); same machine clock as the client",
      ...Object.fromEntries([...keys].map(([k, v]) => [k, round(mean(v), 2)])),
    },
    eventsPerRun: firstEvents.length,
    eventTypesOfOneRun: firstEvents,
  };
}

// ---------------------------------------------------------------------------------------------
// In-process baseline
// ---------------------------------------------------------------------------------------------

export async function inProcessLatencies(
  agent: string,
  runs: number,
  warmupRuns: number,
  width: number,
  timeoutMs: number,
): Promise<number[]> {
  const runner = new InProcessRunner({
    agents: benchAgents(systemClock),
    clock: systemClock,
  });
  const waiting = new Map<string, (t: number) => void>();
  const early = new Map<string, number>();
  runner.onEvent((event) => {
    if (event.type !== 'run.finished') return;
    const t = performance.now(); // status is checked on the checkpoint below
    const resolve = waiting.get(event.runId);
    if (resolve) resolve(t);
    else early.set(event.runId, t);
  });
  const one = async (i: number): Promise<number> => {
    const t0 = performance.now();
    const handle = await runner.start({
      agent,
      input: [{ role: 'user', content: `latency in-process ${i}` }],
    });
    const t1 =
      early.get(handle.runId) ??
      (await withTimeout(
        new Promise<number>((resolve) => waiting.set(handle.runId, resolve)),
        timeoutMs,
        `in-process run ${handle.runId} to finish`,
      ));
    early.delete(handle.runId);
    waiting.delete(handle.runId);
    const cp = await handle.finished;
    if (cp.status !== 'done' || cp.termination?.kind !== 'natural_end')
      throw new BenchError(`in-process run ${handle.runId}: ${JSON.stringify(cp.termination)}`);
    return t1 - t0;
  };
  await lanes(warmupRuns, width, one);
  return lanes(runs, width, one);
}

// ---------------------------------------------------------------------------------------------

export const latency: Scenario = {
  name: 'latency',
  description:
    'submit -> run.finished over SSE per 3-step run (API + worker processes), p50/p95/p99 vs InProcessRunner',
  needsRedis: true,
  async run(ctx) {
    const url = ctx.redisUrl;
    if (url === undefined) throw new BenchError('latency needs Redis');
    const k = knobs();
    let stack: Stack | undefined;
    const results: Record<string, unknown> = {};
    // Baseline: raw BullMQ chains of 3 jobs (one per inference round), one at a time, the
    // Worker in this process at the worker's concurrency: the job model alone, no Baton.
    ctx.log(`raw BullMQ: ${k.runs} chains of 3 jobs, one at a time`);
    const raw: RawChainsResult = await rawChains(url, {
      total: k.runs,
      warmup: k.warmupRuns,
      inFlight: 1,
      length: 3,
      concurrency: 16,
      timeoutMs: k.runTimeoutMs,
    });
    ctx.log(`raw BullMQ: p50 ${raw.latencyMs.p50} ms`);
    // Baseline: the HTTP floor (bench/http-floor.ts), the same chain behind a minimal API.
    ctx.log(`HTTP floor: ${k.warmupRuns} warm-up + ${k.runs} runs, one at a time`);
    const floorStack = await startHttpFloor(ctx, url, {
      startTimeoutMs: k.startTimeoutMs,
      concurrency: 16,
    });
    let floor: HttpFloorResult;
    try {
      floor = await measureHttpFloor(floorStack, {
        runs: k.runs,
        warmupRuns: k.warmupRuns,
        inFlight: 1,
        timeoutMs: k.runTimeoutMs,
      });
    } finally {
      await floorStack.stop();
    }
    ctx.log(`HTTP floor: p50 ${floor.latencyMs.p50} ms`);
    try {
      stack = await startStack(ctx, url, {
        label: 'latency',
        logLevel: k.logLevel,
        startTimeoutMs: k.startTimeoutMs,
      });
      const { client, api, worker } = stack;

      const variants = [
        { label: 'sequential', width: 1 },
        ...(k.concurrency > 1
          ? [{ label: `concurrency-${k.concurrency}`, width: k.concurrency }]
          : []),
      ];
      for (const name of AGENTS) {
        const perAgent: Record<string, unknown> = {};
        for (const v of variants) {
          // In-process first (same agent, same in-flight width), then distributed.
          ctx.log(`${name} [${v.label}]: in-process ${k.warmupRuns} warm-up + ${k.runs} runs`);
          const inProc = stats(
            await inProcessLatencies(name, k.runs, k.warmupRuns, v.width, k.runTimeoutMs),
          );
          ctx.log(`${name} [${v.label}]: distributed warm-up ${k.warmupRuns} runs`);
          await lanes(k.warmupRuns, v.width, (i) =>
            distributedRun(client, name, `warm-up ${i}`, k.runTimeoutMs),
          );
          ctx.log(`${name} [${v.label}]: distributed ${k.runs} runs`);
          const [apiCpu0, workerCpu0] = [await childCpuSeconds(api), await childCpuSeconds(worker)];
          const benchCpu0 = process.cpuUsage();
          const started = performance.now();
          const samples = await lanes(k.runs, v.width, (i) =>
            distributedRun(client, name, `${v.label} ${i}`, k.runTimeoutMs),
          );
          const elapsedMs = performance.now() - started;
          const benchCpu = process.cpuUsage(benchCpu0);
          const [apiCpu1, workerCpu1] = [await childCpuSeconds(api), await childCpuSeconds(worker)];
          const dist = stats(samples.map((s) => s.totalMs));
          ctx.log(
            `${name} [${v.label}]: distributed p50 ${dist.p50} ms p95 ${dist.p95} ms p99 ${dist.p99} ms; in-process p50 ${inProc.p50} ms p95 ${inProc.p95} ms`,
          );
          const perRunCpu = (a: number | undefined, b: number | undefined): number | undefined =>
            a === undefined || b === undefined ? undefined : round(((b - a) * 1000) / k.runs, 3);
          perAgent[v.label] = {
            runsInFlight: v.width,
            distributedMs: dist,
            inProcessMs: inProc,
            distributedOverInProcess: statsRatio(dist, inProc),
            ...(v.width === 1
              ? {
                  distributedOverRawBullmqChain: statsRatio(dist, raw.latencyMs),
                  distributedOverHttpFloor: statsRatio(dist, floor.latencyMs),
                }
              : {}),
            runsPerSec: round((k.runs / elapsedMs) * 1000, 1),
            cpuMsPerRun: {
              api: perRunCpu(apiCpu0, apiCpu1),
              worker: perRunCpu(workerCpu0, workerCpu1),
              benchClient: round((benchCpu.user + benchCpu.system) / 1000 / k.runs, 3),
            },
            breakdown: breakdown(samples),
          };
        }
        results[name] = perAgent;
      }
    } finally {
      await stack?.stop();
    }
    return {
      rawBullmqChain: {
        what: 'chains of 3 BullMQ jobs (each processor adds the next), one chain at a time, Worker (concurrency 16) in the bench process: add of the first job -> completed event of the third',
        latencyMs: raw.latencyMs,
      },
      httpFloor: {
        what: 'bench/http-floor.ts: minimal node:http API + raw BullMQ worker process running the same 3-job chain, one run at a time, client flow as below (POST, SSE until run.finished)',
        why: HTTP_FLOOR_WHY,
        ...floor,
        overRawBullmqChain: statsRatio(floor.latencyMs, raw.latencyMs),
        // met: false = even this floor misses the issue-24 budget, so no API of this design meets it.
        floorAgainstBudget: budgetCheck(round(floor.latencyMs.p50 / raw.latencyMs.p50, 2), 4),
      },
      config: {
        runs: k.runs,
        warmupRuns: k.warmupRuns,
        concurrencyVariant: k.concurrency > 1 ? k.concurrency : 'off',
        topology:
          'API (apps/api/src/main.ts -> startApi) and 1 worker (apps/worker/src/main.ts, BATON_AGENTS=<bench agents module>) in separate child processes; this process is the HTTP client (node:http keep-alive agent). Worker: default WORKER_CONCURRENCY/TOOL_CONCURRENCY, RECONCILER=0; API: defaults (EVENT_METRICS on); LOG_LEVEL=' +
          k.logLevel,
        measured:
          't0 before POST /v1/runs; GET /v1/runs/:id/events?after=0 right after the 202; t1 when the run.finished frame (status done) is parsed',
        inProcessBaseline:
          'InProcessRunner (packages/core, in-memory stores) with systemClock in this process: runner.start -> run.finished via runner.onEvent; same agent and runs in flight',
        agents: {
          bench:
            'parallel_streaming: 3 inference rounds, 2 no-op tools in rounds 1-2 as BullMQ child jobs (flow)',
          'bench-sequential': 'sequential: same script, tools run inline in the step job',
        },
      },
      ...results,
    };
  },
};
