/**
 * Scenario "fairness" (docs/fairness.md): what admission per fairness key and run priorities buy,
 * through the production topology (bench/http-stack.ts: one API, one worker process, its default
 * concurrencies), one tenant whose runs name their fairness key. "No admission" below is
 * BATON_FAIRNESS=off (admission is on by default).
 *
 * - flood: key A posts BENCH_FAIRNESS_FLOOD_RUNS (2,000) slow runs (one ~1.5 s step each) while
 *   keys B and C each submit BENCH_FAIRNESS_STEADY_RUNS `bench` runs at a steady rate; their
 *   latency (POST → run.finished frame) under the flood ÷ the same alone, with
 *   BATON_FAIRNESS={"window":W}. For contrast, the same under a smaller flood
 *   (BENCH_FAIRNESS_CONTRAST_FLOOD, 200) without admission (today's FIFO path).
 * - shares: keys `heavy` (weight 2) and `light` (weight 1) both flood ~0.2 s runs; runs admitted
 *   per key over BENCH_FAIRNESS_SHARE_WINDOW_MS (20 s, a shorter window than the 60 s)
 *   from GET /metrics (baton_fairness_runs{state="dispatched"}), each key's share vs its weight.
 * - priority: a backlog of BENCH_FAIRNESS_PRIORITY_BACKLOG (1000: several times a default worker's 256 step slots) slow priority-3 runs, then one
 *   priority-1 and one priority-3 `bench-sequential` run: POST → run.started of each.
 * - single key: runs/s of `bench` runs of one key in a closed loop, no admission vs the default
 *   deployment (no BATON_FAIRNESS; BATON_FAIRNESS={"window":W} if BENCH_FAIRNESS_WINDOW is set),
 *   alternated; and raw BullMQ chains with and without a job
 *   priority (what BullMQ's prioritized set costs by itself), alternated.
 */
import { performance } from 'node:perf_hooks';
import {
  metricSamples,
  mustPost,
  openEvents,
  runBody,
  stackKnobs,
  startStack,
  submitAndFollow,
  type Client,
  type Stack,
} from './http-stack.ts';
import {
  BenchError,
  envInt,
  mapLimit,
  round,
  sleep,
  type BenchContext,
  type Scenario,
} from './lib.ts';
import { rawChains } from './raw-bullmq-chains.ts';
import { lanes, median, stats, statsRatio, type Stats } from './stats.ts';

function knobs() {
  return {
    // Admission's default window (docs/fairness.md): a quarter of a default worker's steps.
    window: envInt('BENCH_FAIRNESS_WINDOW', 64, 1),
    /** BENCH_FAIRNESS_WINDOW unset: the single-key phase measures the default deployment. */
    windowSet: process.env['BENCH_FAIRNESS_WINDOW'] !== undefined,
    floodRuns: envInt('BENCH_FAIRNESS_FLOOD_RUNS', 2000, 1),
    contrastFlood: envInt('BENCH_FAIRNESS_CONTRAST_FLOOD', 200, 0),
    slowMs: envInt('BENCH_FAIRNESS_SLOW_MS', 1500, 3),
    steadyRuns: envInt('BENCH_FAIRNESS_STEADY_RUNS', 20, 1),
    intervalMs: envInt('BENCH_FAIRNESS_INTERVAL_MS', 250, 1),
    shareRuns: envInt('BENCH_FAIRNESS_SHARE_RUNS', 1500, 1),
    shareWindowMs: envInt('BENCH_FAIRNESS_SHARE_WINDOW_MS', 20_000, 1000),
    /** How long each run of the shares phase takes: longer runs keep both keys backlogged longer. */
    shareRunMs: envInt('BENCH_FAIRNESS_SHARE_RUN_MS', 200, 3),
    // Several times a default worker's step slots (256), so the backlog really queues.
    priorityBacklog: envInt('BENCH_FAIRNESS_PRIORITY_BACKLOG', 1000, 1),
    tpRuns: envInt('BENCH_FAIRNESS_TP_RUNS', 300, 1),
    tpInFlight: envInt('BENCH_FAIRNESS_TP_IN_FLIGHT', 32, 1),
    tpRounds: envInt('BENCH_FAIRNESS_TP_ROUNDS', 2, 1),
    parallelism: envInt('BENCH_CREATE_PARALLELISM', 32, 1),
    runTimeoutMs: envInt('BENCH_FAIRNESS_RUN_TIMEOUT_MS', 300_000, 100),
    /** Comma-separated phases to run (default all): flood,contrast,shares,priority,single-key. */
    phases: new Set(
      (process.env['BENCH_FAIRNESS_PHASES'] ?? 'flood,contrast,shares,priority,single-key')
        .split(',')
        .map((p) => p.trim()),
    ),
    ...stackKnobs(),
  };
}
type Knobs = ReturnType<typeof knobs>;

/** A run of one inference round that streams for `ms` (bench-streaming: 3 deltas). */
function slowRun(ms: number, options: Record<string, unknown>) {
  const directive = JSON.stringify({ deltas: 3, deltaMs: Math.round(ms / 3), steps: 1 });
  return runBody('bench-streaming', directive, { options });
}

/** Admission off: every run enqueued at once (the path before admission existed). */
const NO_ADMISSION = { BATON_FAIRNESS: 'off' };

function fairnessEnv(window: number): Record<string, string> {
  // Keys named in the configuration are the ones /metrics reports on their own (A's backlog).
  const weights = { heavy: 2, light: 1, A: 1, B: 1, C: 1 };
  const settings = { window, tenants: { '*': { weights } } };
  return { BATON_FAIRNESS: JSON.stringify(settings) };
}

async function stackWith(
  ctx: BenchContext,
  url: string,
  k: Knobs,
  label: string,
  env: Record<string, string>,
): Promise<Stack> {
  return startStack(ctx, url, {
    label,
    logLevel: k.logLevel,
    startTimeoutMs: k.startTimeoutMs,
    apiEnv: { ...env, SSE_MAX_PER_TENANT: '2000' },
    workerEnv: env,
  });
}

/** Posts `n` runs (not followed), `parallelism` at a time; returns the ms it took. */
async function post(c: Client, n: number, body: unknown, k: Knobs): Promise<number> {
  const t0 = performance.now();
  await mapLimit(Array.from({ length: n }), k.parallelism, () =>
    mustPost(c, '/v1/runs', body, k.runTimeoutMs),
  );
  return performance.now() - t0;
}

/** `n` runs of `key`, one every intervalMs, each followed to its end: their latencies (ms). */
async function steady(c: Client, key: string, k: Knobs): Promise<number[]> {
  const runs: Promise<number>[] = [];
  for (let i = 0; i < k.steadyRuns; i += 1) {
    runs.push(
      submitAndFollow(
        c,
        runBody('bench', `steady ${key} ${String(i)}`, { options: { fairnessKey: key } }),
        k.runTimeoutMs,
      ).then((f) => f.finishedAt - f.t0),
    );
    await sleep(k.intervalMs);
  }
  return Promise.all(runs);
}

async function keysBandC(c: Client, k: Knobs): Promise<{ B: Stats; C: Stats }> {
  const [b, cc] = await Promise.all([steady(c, 'B', k), steady(c, 'C', k)]);
  return { B: stats(b), C: stats(cc) };
}

/** baton_fairness_runs samples of one state, by key. */
async function fairnessGauge(c: Client, state: string, k: Knobs): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const [labels, value] of await metricSamples(c, 'baton_fairness_runs', k.runTimeoutMs)) {
    if (!labels.includes(`state="${state}"`)) continue;
    const key = /key="([^"]+)"/.exec(labels)?.[1];
    if (key !== undefined) out.set(key, value);
  }
  return out;
}

async function floodPhase(ctx: BenchContext, url: string, k: Knobs) {
  const stack = await stackWith(ctx, url, k, 'fair-flood', fairnessEnv(k.window));
  try {
    ctx.log(`flood: keys B and C alone, ${k.steadyRuns} runs each every ${k.intervalMs} ms`);
    const alone = await keysBandC(stack.client, k);
    ctx.log(`flood: key A posts ${k.floodRuns} slow runs (~${k.slowMs} ms each)`);
    const postMs = await post(
      stack.client,
      k.floodRuns,
      slowRun(k.slowMs, { fairnessKey: 'A' }),
      k,
    );
    ctx.log('flood: keys B and C again, under the flood');
    const flooded = await keysBandC(stack.client, k);
    const backlog = (await fairnessGauge(stack.client, 'backlog', k)).get('A') ?? 0;
    const inProgress = (await fairnessGauge(stack.client, 'in_progress', k)).get('A') ?? 0;
    return {
      window: k.window,
      floodRuns: k.floodRuns,
      slowRunMs: k.slowMs,
      floodPostSeconds: round(postMs / 1000, 1),
      keyAAfter: { backlog, inProgress },
      aloneMs: alone,
      underFloodMs: flooded,
      ratios: { B: statsRatio(flooded.B, alone.B), C: statsRatio(flooded.C, alone.C) },
    };
  } finally {
    await stack.stop();
  }
}

async function contrastPhase(ctx: BenchContext, url: string, k: Knobs) {
  if (k.contrastFlood === 0) return null;
  const stack = await stackWith(ctx, url, k, 'fair-fifo', NO_ADMISSION);
  try {
    ctx.log(`contrast (no admission): key A posts ${k.contrastFlood} slow runs, then B runs`);
    await post(stack.client, k.contrastFlood, slowRun(k.slowMs, { fairnessKey: 'A' }), k);
    const one = await submitAndFollow(
      stack.client,
      runBody('bench', 'contrast B', { options: { fairnessKey: 'B' } }),
      k.runTimeoutMs,
    );
    return { floodRuns: k.contrastFlood, keyBLatencyMs: round(one.finishedAt - one.t0, 1) };
  } finally {
    await stack.stop();
  }
}

async function sharesPhase(ctx: BenchContext, url: string, k: Knobs) {
  const stack = await stackWith(ctx, url, k, 'fair-shares', fairnessEnv(k.window));
  try {
    const body = (key: string) => slowRun(k.shareRunMs, { fairnessKey: key });
    ctx.log(`shares: heavy (weight 2) and light (weight 1) post ${k.shareRuns} runs each`);
    await Promise.all([
      post(stack.client, k.shareRuns, body('heavy'), k),
      post(stack.client, k.shareRuns, body('light'), k),
    ]);
    const d0 = await fairnessGauge(stack.client, 'dispatched', k);
    const t0 = performance.now();
    await sleep(k.shareWindowMs);
    const d1 = await fairnessGauge(stack.client, 'dispatched', k);
    const seconds = (performance.now() - t0) / 1000;
    const backlog = await fairnessGauge(stack.client, 'backlog', k);
    // /metrics names a key only while it has runs in progress or queued: a key missing at the
    // end drained inside the window, and the shares would not be what the weights give.
    const drained = ['heavy', 'light'].filter((key) => !d1.has(key) || !backlog.get(key));
    if (drained.length > 0)
      throw new BenchError(
        `shares: ${drained.join(' and ')} drained before the ${k.shareWindowMs} ms window ended; raise BENCH_FAIRNESS_SHARE_RUNS (${k.shareRuns})`,
      );
    const heavy = (d1.get('heavy') ?? 0) - (d0.get('heavy') ?? 0);
    const light = (d1.get('light') ?? 0) - (d0.get('light') ?? 0);
    if (heavy + light === 0) throw new BenchError('shares: no run was admitted in the window');
    const ratio = light === 0 ? Number.POSITIVE_INFINITY : heavy / light;
    return {
      windowSeconds: round(seconds, 1),
      admitted: { heavy, light },
      shares: {
        heavy: round(heavy / (heavy + light), 3),
        light: round(light / (heavy + light), 3),
      },
      weightShares: { heavy: round(2 / 3, 3), light: round(1 / 3, 3) },
      ratio: round(ratio, 3),
      deviationFrom2to1Pct: round((ratio / 2 - 1) * 100, 1),
      // Both must still have had a backlog at the end, or the window measured a drained key.
      backlogAtEnd: { heavy: backlog.get('heavy') ?? 0, light: backlog.get('light') ?? 0 },
    };
  } finally {
    await stack.stop();
  }
}

/** POST → run.started frame, and → run.finished, of one run. */
async function startDelay(c: Client, body: unknown, k: Knobs) {
  const t0 = performance.now();
  const { runId } = await mustPost<{ runId: string }>(c, '/v1/runs', body, k.runTimeoutMs);
  const sse = await openEvents(c, runId, { timeoutMs: k.runTimeoutMs });
  const finished = await sse.finished;
  await sse.ended;
  const started = sse.received.find((r) => r.event.type === 'run.started');
  return {
    startMs: round((started?.t ?? Number.NaN) - t0, 1),
    finishMs: round(finished - t0, 1),
  };
}

async function priorityPhase(ctx: BenchContext, url: string, k: Knobs) {
  const stack = await stackWith(ctx, url, k, 'fair-prio', NO_ADMISSION);
  try {
    ctx.log(`priority: ${k.priorityBacklog} slow priority-3 runs, then one of priority 1 and 3`);
    await post(stack.client, k.priorityBacklog, slowRun(k.slowMs, { priority: 3 }), k);
    await sleep(500);
    const [p1, p3] = await Promise.all([
      startDelay(stack.client, runBody('bench-sequential', 'p1', { options: { priority: 1 } }), k),
      startDelay(stack.client, runBody('bench-sequential', 'p3', { options: { priority: 3 } }), k),
    ]);
    return { backlogRuns: k.priorityBacklog, stepMs: k.slowMs, priority1: p1, priority3: p3 };
  } finally {
    await stack.stop();
  }
}

async function throughputPhase(ctx: BenchContext, url: string, k: Knobs) {
  const sample = async (label: string, env: Record<string, string>): Promise<number> => {
    const stack = await stackWith(ctx, url, k, label, env);
    try {
      const body = (i: number) =>
        runBody('bench', `tp ${String(i)}`, { options: { fairnessKey: 'solo' } });
      await lanes(Math.min(50, k.tpRuns), k.tpInFlight, (i) =>
        submitAndFollow(stack.client, body(i), k.runTimeoutMs),
      );
      const t0 = performance.now();
      await lanes(k.tpRuns, k.tpInFlight, (i) =>
        submitAndFollow(stack.client, body(i), k.runTimeoutMs),
      );
      return (k.tpRuns / (performance.now() - t0)) * 1000;
    } finally {
      await stack.stop();
    }
  };
  const today: number[] = [];
  const admitted: number[] = [];
  const unparked: number[] = [];
  const rawPlain: number[] = [];
  const rawPrioritized: number[] = [];
  for (let r = 0; r < k.tpRounds; r += 1) {
    ctx.log(`single key, round ${String(r + 1)}: ${k.tpRuns} runs, ${k.tpInFlight} in flight`);
    today.push(await sample('fair-tp-fifo', NO_ADMISSION));
    admitted.push(await sample('fair-tp-adm', k.windowSet ? fairnessEnv(k.window) : {}));
    // A window as large as the runs in flight: admission's own cost, no run ever parked.
    unparked.push(await sample('fair-tp-big', fairnessEnv(k.tpInFlight)));
    const raw = {
      total: 2000,
      warmup: 200,
      inFlight: 32,
      length: 3,
      concurrency: 16,
      timeoutMs: k.runTimeoutMs,
    };
    rawPlain.push((await rawChains(url, raw)).jobsPerSec);
    rawPrioritized.push((await rawChains(url, { ...raw, priority: 3 })).jobsPerSec);
  }
  const ratios = today.map((t, i) => (admitted[i] ?? Number.NaN) / t);
  const unparkedRatios = today.map((t, i) => (unparked[i] ?? Number.NaN) / t);
  const rawRatios = rawPlain.map((p, i) => (rawPrioritized[i] ?? Number.NaN) / p);
  return {
    runs: k.tpRuns,
    inFlight: k.tpInFlight,
    runsPerSec: {
      todaysPath: today.map((v) => round(v, 1)),
      admissionWindow: admitted.map((v) => round(v, 1)),
      admissionWindowAsInFlight: unparked.map((v) => round(v, 1)),
    },
    window: k.window,
    ratioAdmissionOverToday: round(median(ratios), 3),
    ratioAdmissionNoParkingOverToday: round(median(unparkedRatios), 3),
    rawBullmqJobsPerSec: {
      plain: rawPlain.map((v) => round(v, 1)),
      priority3: rawPrioritized.map((v) => round(v, 1)),
    },
    ratioPrioritizedOverPlain: round(median(rawRatios), 3),
  };
}

export const fairness: Scenario = {
  name: 'fairness',
  description:
    'fairness keys, weights and priorities: B/C latency under a 2,000-run flood of key A ÷ alone, 2:1 dispatch shares, a priority-1 run behind a priority-3 backlog, single-key runs/s vs today',
  needsRedis: true,
  async run(ctx) {
    const url = ctx.redisUrl;
    if (url === undefined) throw new BenchError('fairness needs Redis');
    const k = knobs();
    const phase = async <T>(name: string, run: () => Promise<T>): Promise<T | null> =>
      k.phases.has(name) ? run() : null;
    return {
      flood: await phase('flood', () => floodPhase(ctx, url, k)),
      contrastWithoutAdmission: await phase('contrast', () => contrastPhase(ctx, url, k)),
      shares: await phase('shares', () => sharesPhase(ctx, url, k)),
      priority: await phase('priority', () => priorityPhase(ctx, url, k)),
      singleKey: await phase('single-key', () => throughputPhase(ctx, url, k)),
    };
  },
};
