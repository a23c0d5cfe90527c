/**
 * Scenario "streaming": a scripted model that streams BENCH_STREAM_DELTAS text deltas per
 * inference round, BENCH_STREAM_DELTA_MS apart (the `bench-streaming` agent; its shape travels in
 * the run's input), one run at a time through the API with an SSE client attached from the start.
 *
 * Per inference round: Redis commands (INFO commandstats delta, Lua-internal calls included) and
 * bytes clients sent to / received from Redis; per delta: commands; and what the SSE client got:
 * frames, text.delta frames, bytes, the text put back together (checked against what the model
 * emitted), delta lag (the event's `at` → its frame parsed here) and the gaps between delta
 * frames. Ratios: delta frames received ÷ deltas emitted (1 without coalescing), run time ÷ the
 * model's own pacing (rounds × deltas × deltaMs). Nothing asserts on timings.
 */
import { performance } from 'node:perf_hooks';
import {
  epochOf,
  meanStepMs,
  stackKnobs,
  startStack,
  submitAndFollow,
  type Stack,
} from './http-stack.ts';
import {
  BenchError,
  benchClient,
  envInt,
  redisDelta,
  redisSnapshot,
  round,
  type Scenario,
} from './lib.ts';
import { stats } from './stats.ts';
import { concurrentStreaming } from './streaming-concurrent.ts';

function knobs() {
  return {
    deltas: envInt('BENCH_STREAM_DELTAS', 500, 1),
    deltaMs: envInt('BENCH_STREAM_DELTA_MS', 3, 0),
    steps: envInt('BENCH_STREAM_STEPS', 2, 1),
    runs: envInt('BENCH_STREAM_RUNS', 5, 1),
    warmupRuns: envInt('BENCH_STREAM_WARMUP_RUNS', 1, 0),
    runTimeoutMs: envInt('BENCH_STREAM_RUN_TIMEOUT_MS', 120_000, 100),
    concurrentRuns: envInt('BENCH_STREAM_CONCURRENT_RUNS', 200, 0),
    concurrentDeltas: envInt('BENCH_STREAM_CONCURRENT_DELTAS', 200, 1),
    concurrentDeltaMs: envInt('BENCH_STREAM_CONCURRENT_DELTA_MS', 10, 0),
    concurrentSamples: envInt('BENCH_STREAM_CONCURRENT_SAMPLES', 3, 1),
    ...stackKnobs(),
  };
}

/** The text bench-streaming emits per round (see packages/testing/src/bench-agents.ts). */
function expectedText(deltas: number): string {
  let text = '';
  for (let i = 0; i < deltas; i += 1) text += `w${i % 1000} `;
  return text;
}

export const streaming: Scenario = {
  name: 'streaming',
  description:
    'a scripted model streaming 500 deltas per round at a realistic pace: Redis commands/bytes per round and per delta, what an SSE client receives',
  needsRedis: true,
  async run(ctx) {
    const url = ctx.redisUrl;
    if (url === undefined) throw new BenchError('streaming needs Redis');
    const k = knobs();
    const redis = benchClient(url, 'bench-streaming');
    let stack: Stack | undefined;
    const directive = JSON.stringify({ deltas: k.deltas, deltaMs: k.deltaMs, steps: k.steps });
    const body = {
      agent: 'bench-streaming',
      input: { messages: [{ role: 'user', content: directive }] },
    };
    try {
      stack = await startStack(ctx, url, {
        label: 'streaming',
        logLevel: k.logLevel,
        startTimeoutMs: k.startTimeoutMs,
      });
      const { client } = stack;
      for (let i = 0; i < k.warmupRuns; i += 1) await submitAndFollow(client, body, k.runTimeoutMs);
      ctx.log(`${k.runs} runs x ${k.steps} rounds x ${k.deltas} deltas, ${k.deltaMs} ms apart`);
      const before = await redisSnapshot(redis);
      const t0 = performance.now();
      const runs = [];
      for (let i = 0; i < k.runs; i += 1)
        runs.push(await submitAndFollow(client, body, k.runTimeoutMs));
      const elapsedMs = performance.now() - t0;
      const after = await redisSnapshot(redis);
      const rounds = k.runs * k.steps;
      const emitted = rounds * k.deltas;
      const lags: number[] = [];
      const gaps: number[] = [];
      let frames = 0;
      let deltaFrames = 0;
      let bytes = 0;
      let textOk = 0;
      const expected = expectedText(k.deltas);
      for (const run of runs) {
        frames += run.received.length;
        bytes += run.bytes;
        const text = new Map<number, string>();
        let previous: number | undefined;
        let previousStep: number | undefined;
        for (const { event, t } of run.received) {
          if (event.type !== 'text.delta') continue;
          const delta = event;
          deltaFrames += 1;
          text.set(delta.step, (text.get(delta.step) ?? '') + delta.delta);
          lags.push(epochOf(t) - event.at);
          if (previous !== undefined && previousStep === delta.step) gaps.push(t - previous);
          previous = t;
          previousStep = delta.step;
        }
        for (const s of text.values()) if (s === expected) textOk += 1;
      }
      if (textOk !== rounds)
        throw new BenchError(
          `streaming: ${rounds - textOk} of ${rounds} rounds lost or garbled text`,
        );
      const redisPerRound = redisDelta(before, after, rounds, elapsedMs);
      const pacingMs = k.steps * k.deltas * k.deltaMs;
      const runMs = stats(runs.map((r) => r.finishedAt - r.t0));
      ctx.log(
        `${round(deltaFrames / emitted, 3)} delta frames per delta, ${round(redisPerRound.commandsPerUnit / k.deltas, 2)} Redis commands per delta`,
      );
      await stack.stop();
      stack = undefined;
      const concurrent =
        k.concurrentRuns > 0
          ? await concurrentStreaming(ctx, url, {
              runs: k.concurrentRuns,
              deltas: k.concurrentDeltas,
              deltaMs: k.concurrentDeltaMs,
              samples: k.concurrentSamples,
              runTimeoutMs: k.runTimeoutMs,
              logLevel: k.logLevel,
              startTimeoutMs: k.startTimeoutMs,
            })
          : null;
      return {
        concurrent,
        config: {
          runs: k.runs,
          roundsPerRun: k.steps,
          deltasPerRound: k.deltas,
          deltaMs: k.deltaMs,
          agent:
            'bench-streaming (sequential; every round but the last also calls a no-op tool; a delta is one ~4-character word)',
          redis:
            'INFO commandstats / stats / cpu deltas over the measured runs (all clients: API, worker, bench; Lua-internal commands included), per inference round',
          client:
            "node:http SSE client attached right after the 202 with ?after=0; lag = the event's `at` (worker clock, ms) -> its frame parsed here (same machine clock); gaps = between consecutive delta frames of one round",
        },
        deltasEmitted: emitted,
        redisPerRound,
        redisCommandsPerDelta: round(redisPerRound.commandsPerUnit / k.deltas, 3),
        bytesToRedisPerDelta: round(redisPerRound.bytesToRedisPerUnit / k.deltas, 1),
        sseClient: {
          framesPerRound: round(frames / rounds, 1),
          deltaFramesPerRound: round(deltaFrames / rounds, 1),
          bytesPerRound: round(bytes / rounds, 0),
          bytesPerDelta: round(bytes / emitted, 1),
          textIntact: `${textOk}/${rounds} rounds`,
          deltaLagMs: stats(lags),
          deltaFrameGapMs: stats(gaps),
        },
        runMs,
        stepMs: round(runs.reduce((a, r) => a + meanStepMs(r.received), 0) / runs.length, 1),
        ratios: {
          deltaFramesReceivedOverDeltasEmitted: round(deltaFrames / emitted, 3),
          runMsOverModelPacing: pacingMs > 0 ? round(runMs.p50 / pacingMs, 3) : null,
        },
      };
    } finally {
      await stack?.stop();
      redis.disconnect();
    }
  },
};
