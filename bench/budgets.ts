/**
 * The issue-24 budgets in one table, from the scenarios that ran before it (run it last): each row
 * is a figure measured in this run, its limit, whether it holds, and the JSON path it was read
 * from; where the run also measured a floor (the same figure for a minimal design without Baton's
 * code), the floor and whether it meets the budget. A row whose scenario did not run (or failed)
 * shows `measured: null, met: null`.
 *
 * The counts and CPU rows are per step of the `bench` agent on one in-process worker
 * (`throughput`); the HTTP rows are `api-throughput` and `latency` (one API + one worker
 * process); the thread rows `thread-growth`; the fan-out rows `sse-fanout`; the streaming row
 * `streaming`'s concurrent case. Every ratio's two sides were measured in the same run.
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
}

/** Issue 24's table, row by row, in its order. */
const ROWS: Record<string, Row> = {
  batonRedisCommandsPerStep: {
    from: 'throughput.profile.perStepByOrigin.baton.commands',
    limit: 35,
    floorFrom: 'throughput.jobModelFloor.perStep.floor.ownCommands',
  },
  batonRoundTripsPerStep: {
    from: 'throughput.profile.perStepByOrigin.baton.roundTrips',
    limit: 6,
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
    limit: 4.5,
    floorFrom: 'throughput.jobModelFloor.perStep.floor.workerCpuOverRawJob',
  },
  apiRunsPerSecOverRawChains_bench: {
    from: 'api-throughput.bench.ratios.runsPerSecOverRawBullmq',
    limit: 0.25,
    kind: 'min',
    floorFrom: 'api-throughput.httpFloor.ratios.runsPerSecOverRawBullmq',
  },
  apiRunsPerSecOverRawChains_benchSequential: {
    from: 'api-throughput.bench-sequential.ratios.runsPerSecOverRawBullmq',
    limit: 0.35,
    kind: 'min',
    floorFrom: 'api-throughput.httpFloor.ratios.runsPerSecOverRawBullmq',
  },
  apiCpuPerRunOverRawChainCpu_bench: {
    from: 'api-throughput.bench.ratios.apiCpuPerRunOverRawChainCpu',
    limit: 1.5,
    floorFrom: 'api-throughput.httpFloor.ratios.apiCpuPerRunOverRawChainCpu',
  },
  apiCpuPerRunOverRawChainCpu_benchSequential: {
    from: 'api-throughput.bench-sequential.ratios.apiCpuPerRunOverRawChainCpu',
    limit: 1.5,
    floorFrom: 'api-throughput.httpFloor.ratios.apiCpuPerRunOverRawChainCpu',
  },
  latencyOverRawChain_bench: {
    from: 'latency.bench.sequential.distributedOverRawBullmqChain.p50',
    limit: 4,
    floorFrom: 'latency.httpFloor.overRawBullmqChain.p50',
  },
  latencyOverRawChain_benchSequential: {
    from: 'latency.bench-sequential.sequential.distributedOverRawBullmqChain.p50',
    limit: 4,
    floorFrom: 'latency.httpFloor.overRawBullmqChain.p50',
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
  sseRssPerSubscriberOverEcho: {
    from: 'sse-fanout.ratios.rssPerSubscriberBatonOverEcho',
    limit: 1.5,
  },
  concurrentStreamsOverModelPacing_p50: {
    from: 'streaming.concurrent.default.runMsOverModelPacing.p50',
    limit: 1.5,
  },
  concurrentStreamsOverModelPacing_max: {
    from: 'streaming.concurrent.default.runMsOverModelPacing.max',
    limit: 1.5,
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
  description: 'the issue-24 budgets from the scenarios that ran before it (run it last)',
  needsRedis: false,
  run(ctx) {
    const results = withLongest(ctx.results);
    const table: Json = {};
    for (const [name, row] of Object.entries(ROWS)) {
      const floor = row.floorFrom === undefined ? undefined : at(results, row.floorFrom);
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
      };
    }
    const status = (met: unknown): string[] =>
      Object.entries(table)
        .filter(([, v]) => (v as Json)['met'] === met)
        .map(([key]) => key);
    return Promise.resolve({
      note: 'issue 24: figures of this run; bench/README.md "Budgets (issue 24)" has the floors of the unmet ones',
      budgets: table,
      met: status(true),
      unmet: status(false),
      notMeasured: status(null),
    });
  },
};
