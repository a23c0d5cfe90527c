/**
 * Baseline "HTTP floor" of the latency and api-throughput scenarios: what the design minimally
 * requires of an API for one run, with no Baton code, measured in the same run as Baton and the
 * raw BullMQ chain. A bare node:http server (bench/http-floor-server.ts: bearer check, JSON parse
 * and hand validation, first job of a raw 3-job chain, 202; SSE = SUBSCRIBE the run's channel,
 * XRANGE its stream after the cursor, forward pub/sub frames, end on the run's last event) and a
 * raw BullMQ worker process (bench/http-floor-worker.ts: per job one event XADDed + PUBLISHed in
 * one script, then the next job). The client is the Baton scenarios' own: POST /v1/runs, then
 * GET /v1/runs/:id/events?after=0 until the `run.finished` frame.
 */
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import {
  childCpuSeconds,
  processGroup,
  cpuMsPer,
  runBody,
  startChild,
  submitAndFollow,
  type Child,
  type Client,
} from './http-stack.ts';
import type { Redis } from 'ioredis';
import { redisSnapshot, round, type BenchContext } from './lib.ts';
import { lanes, stats, type Stats } from './stats.ts';

const SERVER_MAIN = fileURLToPath(new URL('./http-floor-server.ts', import.meta.url));
const WORKER_MAIN = fileURLToPath(new URL('./http-floor-worker.ts', import.meta.url));

export const HTTP_FLOOR_WHY =
  "the least a correct API for one run does, no Baton code: bare node:http, bearer compared, JSON body parsed and checked by hand, the first job of the raw 3-job chain added, 202; SSE: SUBSCRIBE the run's channel, XRANGE its durable stream after the cursor (replay, no gap), pub/sub frames de-duplicated by seq, end on run.finished. Worker process: raw BullMQ, per job one event XADD + PUBLISH (one script), then the next job. If this floor is already above a budget, the budget cannot be met by any API of this design";

export interface HttpFloor {
  readonly client: Client;
  readonly server: Child;
  readonly worker: Child;
  stop(): Promise<void>;
}

export async function startHttpFloor(
  ctx: BenchContext,
  url: string,
  opts: {
    readonly startTimeoutMs: number;
    readonly concurrency: number;
    readonly maxSockets?: number;
  },
): Promise<HttpFloor> {
  const id = randomBytes(3).toString('hex');
  const token = `floor-${randomBytes(12).toString('hex')}`;
  const env = {
    REDIS_URL: url,
    FLOOR_BULL_PREFIX: `{bench-floor-${id}-bull}`,
    FLOOR_KEY_PREFIX: `bench-floor-${id}`,
    FLOOR_TENANT: 'bench',
    FLOOR_TOKEN: token,
    FLOOR_CHAIN_LENGTH: '3',
    FLOOR_CONCURRENCY: String(opts.concurrency),
  };
  const { agent, children, stop } = processGroup(opts.maxSockets);
  try {
    const worker = await startChild(
      ctx,
      'floor-worker',
      WORKER_MAIN,
      env,
      'READY ',
      opts.startTimeoutMs,
    );
    children.push(worker);
    const server = await startChild(
      ctx,
      'floor-api',
      SERVER_MAIN,
      env,
      'LISTENING ',
      opts.startTimeoutMs,
    );
    children.push(server);
    return { client: { base: new URL(server.ready), key: token, agent }, server, worker, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

export interface HttpFloorResult {
  readonly runs: number;
  readonly runsInFlight: number;
  readonly runsPerSec: number;
  readonly latencyMs: Stats;
  /** SSE frames of a run (one event per job). */
  readonly framesPerRun: number;
  readonly cpuMsPerRun: {
    readonly api: number | undefined;
    readonly worker: number | undefined;
    readonly redis?: number;
    readonly benchClient: number;
  };
  readonly redisCommandsPerRun?: number;
}

/** Warm-up, then `runs` runs with `inFlight` lanes (closed loop), timed like Baton's runs. */
export async function measureHttpFloor(
  floor: HttpFloor,
  opts: {
    readonly runs: number;
    readonly warmupRuns: number;
    readonly inFlight: number;
    readonly timeoutMs: number;
    /** For Redis CPU and commands per run (a bench client). */
    readonly redis?: Redis;
  },
): Promise<HttpFloorResult> {
  let framesPerRun = 0;
  const one = async (label: string): Promise<number> => {
    const r = await submitAndFollow(floor.client, runBody('bench', label), opts.timeoutMs);
    framesPerRun = r.received.length;
    return r.finishedAt - r.t0;
  };
  await lanes(opts.warmupRuns, opts.inFlight, (i) => one(`floor warm-up ${i}`));
  const [api0, worker0] = [
    await childCpuSeconds(floor.server),
    await childCpuSeconds(floor.worker),
  ];
  const redis0 = opts.redis === undefined ? undefined : await redisSnapshot(opts.redis);
  const client0 = process.cpuUsage();
  const started = performance.now();
  const latencies = await lanes(opts.runs, opts.inFlight, (i) => one(`floor ${i}`));
  const elapsedMs = performance.now() - started;
  const clientCpu = process.cpuUsage(client0);
  const redis1 = opts.redis === undefined ? undefined : await redisSnapshot(opts.redis);
  const [api1, worker1] = [
    await childCpuSeconds(floor.server),
    await childCpuSeconds(floor.worker),
  ];
  const redisPart =
    redis0 === undefined || redis1 === undefined
      ? {}
      : { redis: round(((redis1.cpuSeconds - redis0.cpuSeconds) * 1000) / opts.runs, 3) };
  return {
    runs: opts.runs,
    runsInFlight: opts.inFlight,
    runsPerSec: round((opts.runs / elapsedMs) * 1000, 1),
    latencyMs: stats(latencies),
    framesPerRun,
    cpuMsPerRun: {
      api: cpuMsPer(api0, api1, opts.runs),
      worker: cpuMsPer(worker0, worker1, opts.runs),
      ...redisPart,
      benchClient: round((clientCpu.user + clientCpu.system) / 1000 / opts.runs, 3),
    },
    ...(redis0 === undefined || redis1 === undefined
      ? {}
      : {
          redisCommandsPerRun: round((redis1.totalCommands - redis0.totalCommands) / opts.runs, 1),
        }),
  };
}
