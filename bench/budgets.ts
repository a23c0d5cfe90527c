/**
 * The issue-38 budgets in one table, from the scenarios that ran before it (run it last): each row
 * is a figure measured in this run, its limit, whether it holds, and the JSON path it was read
 * from; where the run also measured a floor (the same figure for a minimal design without Baton's
 * code), the floor and whether it meets the budget, and where the row is itself a ratio to a floor
 * or baseline, that baseline's own figure of this run (`base`). A row whose scenario did not run
 * (or failed) shows `measured: null, met: null`.
 *
 * The counts and CPU rows are per step of the `bench` agent on one in-process worker
 * (`throughput`, floor: the job-model floor); the HTTP rows are `api-throughput` and `latency`
 * over the HTTP floor (one API + one worker process vs bench/http-floor*.ts); the thread rows
 * `thread-growth`; the fan-out rows `sse-fanout`; the streaming rows `streaming`'s concurrent
 * case. Every ratio's two sides were measured in the same run.
 */
import type { Scenario } from './lib.ts';
import { budgetCheck } from './lib.ts';

type Json = Record<string, unknown>;

function at(value: unknown, path: string): unknown {
  let v = value;
  for (const p of path.split('.')) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<string, unknown>)[p];
  }
  return v;
}

interface Row {
  /**
   * Dotted path under `scenarios` (a key with a dot in it is not supported), or paths in order of
   * preference: the first that holds a number is read.
   */
  readonly from: string | readonly string[];
  readonly limit: number;
  readonly kind?: 'max' | 'min';
  /**
   * Where this run measured the same figure for a minimal design with no Baton code (a floor):
   * a floor that misses the budget means no implementation of the design can meet it.
   */
  readonly floorFrom?: string;
  /** The denominator's own figure in this run (a ratio row's floor or baseline), for reading. */
  readonly baseFrom?: string;
}

/** Issue 38's table, row by row, in its order, then issue 24's rows that still hold. */
const ROWS: Record<string, Row> = {
  apiRunsPerSecOverHttpFloor_bench: {
    from: 'api-throughput.bench.ratios.runsPerSecOverHttpFloor',
    limit: 0.5,
    kind: 'min',
    baseFrom: 'api-throughput.httpFloor.runsPerSec',
  },
  apiRunsPerSecOverHttpFloor_benchSequential: {
    from: 'api-throughput.bench-sequential.ratios.runsPerSecOverHttpFloor',
    limit: 0.6,
    kind: 'min',
    baseFrom: 'api-throughput.httpFloor.runsPerSec',
  },
  // One run at a time (latency); api-throughput's 50-in-flight figure when latency did not run.
  latencyOverHttpFloor_bench: {
    from: [
      'latency.bench.sequential.distributedOverHttpFloor.p50',
      'api-throughput.bench.ratios.latencyOverHttpFloor.p50',
    ],
    limit: 2,
    baseFrom: 'latency.httpFloor.latencyMs.p50',
  },
  latencyOverHttpFloor_benchSequential: {
    from: [
      'latency.bench-sequential.sequential.distributedOverHttpFloor.p50',
      'api-throughput.bench-sequential.ratios.latencyOverHttpFloor.p50',
    ],
    limit: 2,
    baseFrom: 'latency.httpFloor.latencyMs.p50',
  },
  apiCpuPerRunOverHttpFloor_bench: {
    from: 'api-throughput.bench.ratios.apiCpuPerRunOverHttpFloorApiCpu',
    limit: 2,
    baseFrom: 'api-throughput.httpFloor.cpuMsPerRun.api',
  },
  apiCpuPerRunOverHttpFloor_benchSequential: {
    from: 'api-throughput.bench-sequential.ratios.apiCpuPerRunOverHttpFloorApiCpu',
    limit: 2,
    baseFrom: 'api-throughput.httpFloor.cpuMsPerRun.api',
  },
  batonRedisCommandsPerStep: {
    from: 'throughput.profile.perStepByOrigin.baton.commands',
    limit: 40,
    floorFrom: 'throughput.jobModelFloor.perStep.floor.ownCommands',
  },
  batonRoundTripsPerStep: {
    from: 'throughput.profile.perStepByOrigin.baton.roundTrips',
    limit: 10,
    floorFrom: 'throughput.jobModelFloor.perStep.floor.ownRoundTrips',
  },
  // With the job-model floor on, Baton's figure is the one measured in the same raw / Baton / floor
  // triples as the floor's (median of per-triple ratios), so the two compare like for like.
  redisCpuPerStepOverRawJob: {
    from: [
      'throughput.jobModelFloor.perStep.baton.redisCpuOverRawJob',
      'throughput.budgets.redisCpuMsPerStep.why.stepOverRawJob',
    ],
    limit: 3.5,
    floorFrom: 'throughput.jobModelFloor.perStep.floor.redisCpuOverRawJob',
  },
  workerCpuPerStepOverRawJob: {
    from: [
      'throughput.jobModelFloor.perStep.baton.workerCpuOverRawJob',
      'throughput.budgets.workerCpuMsPerStep.why.stepOverRawJob',
    ],
    limit: 6,
    floorFrom: 'throughput.jobModelFloor.perStep.floor.workerCpuOverRawJob',
  },
  // Default settings: fairness admission on, so one key's 200 runs go in at most 64 at a time.
  // The floor is the same batch with nothing parked (window raised to the runs): the worker's
  // streaming path alone.
  concurrentStreamsOverModelPacing_p50: {
    from: 'streaming.concurrent.default.runMsOverModelPacing.p50',
    limit: 1.5,
    floorFrom: 'streaming.concurrent.admitted.runMsOverModelPacing.p50',
  },
  concurrentStreamsOverModelPacing_max: {
    from: 'streaming.concurrent.default.runMsOverModelPacing.max',
    limit: 2,
    floorFrom: 'streaming.concurrent.admitted.runMsOverModelPacing.max',
  },
  // What would have caught the regression of issue 38: 20 µs when WORKER_CONCURRENCY's default
  // was derived (0.8 s per batch of 200 × 200 deltas), 60 µs at 451cb4a (2.4 s).
  workerCpuUsecPerStreamedDelta: {
    from: 'streaming.concurrent.default.workerCpuUsecPerDelta',
    limit: 40,
    floorFrom: 'streaming.concurrent.admitted.workerCpuUsecPerDelta',
  },
  sseRssPerSubscriberOverEcho: {
    from: 'sse-fanout.ratios.rssPerSubscriberBatonOverEcho',
    limit: 1.5,
  },
  bytesToRedisPerStep1000Over0: {
    from: 'thread-growth.ratiosAtLongest.bytesToRedisPerStep',
    limit: 1.2,
  },
  runKeyBytes1000Over0: {
    from: 'thread-growth.ratiosAtLongest.runKeyBytes',
    limit: 1.5,
  },
  sseLagOverEcho_p50: { from: 'sse-fanout.ratios.lagBatonOverEcho.p50', limit: 1.5 },
  sseLagOverEcho_p99: { from: 'sse-fanout.ratios.lagBatonOverEcho.p99', limit: 1.3 },
  sseApiCpuPerFrameOverEcho: {
    from: 'sse-fanout.ratios.cpuPerFrameBatonApiOverEcho',
    limit: 1.3,
  },
};

/** thread-growth's ratios at its longest thread (1,000 messages by default) over length 0. */
function withLongest(results: Json): Json {
  const ratios = at(results, 'thread-growth.ratiosToLength0');
  if (!Array.isArray(ratios) || ratios.length === 0) return results;
  const longest = (ratios as Json[]).reduce((a, b) =>
    Number(b['length']) > Number(a['length']) ? b : a,
  );
  return {
    ...results,
    'thread-growth': { ...(results['thread-growth'] as Json), ratiosAtLongest: longest },
  };
}

export const budgets: Scenario = {
  name: 'budgets',
  description: 'the issue-38 budgets from the scenarios that ran before it (run it last)',
  needsRedis: false,
  run(ctx) {
    const results = withLongest(ctx.results);
    const table: Json = {};
    for (const [name, row] of Object.entries(ROWS)) {
      const floor = row.floorFrom === undefined ? undefined : at(results, row.floorFrom);
      const base = row.baseFrom === undefined ? undefined : at(results, row.baseFrom);
      const paths = typeof row.from === 'string' ? [row.from] : row.from;
      const from = paths.find((p) => typeof at(results, p) === 'number') ?? paths[0];
      table[name] = {
        ...budgetCheck(from === undefined ? undefined : at(results, from), row.limit, row.kind),
        from,
        ...(row.floorFrom === undefined
          ? {}
          : {
              floor: typeof floor === 'number' ? floor : null,
              floorMeetsBudget: budgetCheck(floor, row.limit, row.kind).met,
              floorFrom: row.floorFrom,
            }),
        ...(row.baseFrom === undefined
          ? {}
          : { base: typeof base === 'number' ? base : null, baseFrom: row.baseFrom }),
      };
    }
    const status = (met: unknown): string[] =>
      Object.entries(table)
        .filter(([, v]) => (v as Json)['met'] === met)
        .map(([key]) => key);
    return Promise.resolve({
      note: 'issue 38: figures of this run, each floor or base from this run; bench/README.md "Budgets (issue 38)" has the profiles of the unmet ones',
      budgets: table,
      met: status(true),
      unmet: status(false),
      notMeasured: status(null),
    });
  },
};
