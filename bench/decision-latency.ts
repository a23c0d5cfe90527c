/**
 * Scenario "decision-latency": POST /v1/runs/:id/decisions → the first event of the resumed run
 * on an SSE stream opened (after the run's last event) before the decision was sent, one decision
 * at a time. Runs are `bench-approval` runs parked on their approval first (bench/parked-runs.ts);
 * after the decision the tool runs inline and a second round streams one text delta.
 *
 * Baseline in the same run, same stack: a plain run's submit → first event the worker produced
 * (`run.started` frame; the stream is opened right after the 202, so `run.created` is backlog)
 * and submit → run.finished, for `bench-streaming` with one round of one delta (the resumed run's
 * tail without the approval). Nothing asserts on timings.
 */
import { distributedRun } from './latency.ts';
import { stackKnobs, startStack, type Stack } from './http-stack.ts';
import { BenchError, envInt, type Scenario } from './lib.ts';
import { parkRuns, resumeOne, ticketOf } from './parked-runs.ts';
import { lanes, stats, statsRatio } from './stats.ts';

function knobs() {
  return {
    runs: envInt('BENCH_DECISION_RUNS', 200, 1),
    warmupRuns: envInt('BENCH_DECISION_WARMUP_RUNS', 20, 0),
    runTimeoutMs: envInt('BENCH_DECISION_RUN_TIMEOUT_MS', 30_000, 100),
    ...stackKnobs(),
  };
}

export const decisionLatency: Scenario = {
  name: 'decision-latency',
  description:
    'decision POST -> first event of the resumed run on an open SSE stream, p50/p99, vs a plain run submit -> first event',
  needsRedis: true,
  async run(ctx) {
    const url = ctx.redisUrl;
    if (url === undefined) throw new BenchError('decision-latency needs Redis');
    const k = knobs();
    let stack: Stack | undefined;
    try {
      stack = await startStack(ctx, url, {
        label: 'decision',
        logLevel: k.logLevel,
        startTimeoutMs: k.startTimeoutMs,
      });
      const { client } = stack;
      const total = k.runs + k.warmupRuns;
      ctx.log(`parking ${total} bench-approval runs`);
      const runIds = await parkRuns(client, total, {
        parallelism: 16,
        directive: { deltas: 1 },
        timeoutMs: Math.max(k.runTimeoutMs, k.startTimeoutMs),
        log: (m) => ctx.log(m),
      });
      const resume = async (runId: string) =>
        resumeOne(client, runId, await ticketOf(client, runId, k.runTimeoutMs), k.runTimeoutMs);
      ctx.log(`warm-up: ${k.warmupRuns} decisions and plain runs`);
      for (const runId of runIds.slice(0, k.warmupRuns)) await resume(runId);
      await lanes(k.warmupRuns, 1, (i) =>
        distributedRun(client, 'bench-streaming', `warm-up ${i}`, k.runTimeoutMs),
      );
      ctx.log(`${k.runs} decisions, one at a time`);
      const decided = [];
      for (const runId of runIds.slice(k.warmupRuns)) decided.push(await resume(runId));
      ctx.log(`${k.runs} plain runs, one at a time`);
      const plain = await lanes(k.runs, 1, (i) =>
        distributedRun(client, 'bench-streaming', `plain ${i}`, k.runTimeoutMs),
      );
      const toFirst = stats(decided.map((d) => d.toFirstEventMs));
      const plainFirst = stats(plain.map((p) => p.toRunStartedFrameMs));
      const toFinished = stats(decided.map((d) => d.toFinishedMs));
      const plainFinished = stats(plain.map((p) => p.totalMs));
      ctx.log(`decision -> first event p50 ${toFirst.p50} ms p99 ${toFirst.p99} ms`);
      const types = new Map<string, number>();
      for (const d of decided) types.set(d.firstEventType, (types.get(d.firstEventType) ?? 0) + 1);
      return {
        config: {
          decisions: k.runs,
          warmup: k.warmupRuns,
          measured:
            "t0 before POST /v1/runs/:id/decisions (resume the approval), the run's stream already open with ?after=<its lastSeq>; first event = first frame parsed after t0; finished = the run.finished frame",
          baseline:
            'plain bench-streaming run (1 round, 1 delta): t0 before POST /v1/runs, stream opened after the 202 with ?after=0; first event = the run.started frame (the first event a worker commits)',
        },
        decisionToFirstEventMs: toFirst,
        decisionTo202Ms: stats(decided.map((d) => d.to202Ms)),
        decisionToRunFinishedMs: toFinished,
        firstEventTypes: Object.fromEntries(types),
        eventsAfterDecision: decided[0]?.received.map((r) => r.event.type) ?? [],
        plainRun: {
          submitToRunStartedFrameMs: plainFirst,
          submitTo202Ms: stats(plain.map((p) => p.to202Ms)),
          submitToRunFinishedMs: plainFinished,
        },
        ratios: {
          firstEventOverPlainRunStarted: statsRatio(toFirst, plainFirst),
          finishedOverPlainFinished: statsRatio(toFinished, plainFinished),
        },
      };
    } finally {
      await stack?.stop();
    }
  },
};
