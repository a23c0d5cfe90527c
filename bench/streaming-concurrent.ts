/**
 * The `streaming` scenario's concurrent case: `runs` bench-streaming runs of one round (`deltas`
 * deltas `deltaMs` apart) submitted at once through the API on one worker process, each followed
 * over SSE, as many model calls in flight as a worker serves. Per run: submit → `run.finished`
 * frame ÷ the model's own pacing (deltas × deltaMs). The worker's RSS is sampled every 20 ms: its
 * peak minus its idle RSS right before the batch, over the steps in flight
 * (min(runs, WORKER_CONCURRENCY)), is the memory one in-flight step costs; WORKER_CONCURRENCY's
 * default is derived from that figure (apps/worker/src/worker-concurrency.ts).
 *
 * Three variants, each sample on a fresh stack (RSS does not shrink back after a batch):
 * `default` (every setting at its default, fairness admission included: one key, so its window
 * of 64 runs in progress, the next borrowing the worker's idle slots up to 256 less one window,
 * and the rest parked until a slot frees), `admitted` (the
 * fairness window raised to `runs` on API and worker, so no run is parked: what the worker's
 * streaming path alone does at its default concurrency) and `wide` (WORKER_CONCURRENCY = runs and
 * the same window: every run's step in flight at once, which is what the memory figure is
 * measured on). Worker CPU is also given per streamed delta (`workerCpuUsecPerDelta`: the batch's
 * worker CPU over runs × deltas, so the runs' own steps are spread over their deltas).
 */
import { performance } from 'node:perf_hooks';
import { defaultWorkerConcurrency } from '../apps/worker/src/worker-concurrency.ts';
import { processRssBytes, startStack, submitAndFollow, type Stack } from './http-stack.ts';
import { round, type BenchContext } from './lib.ts';
import { stats } from './stats.ts';

export interface ConcurrentStreamingKnobs {
  readonly runs: number;
  readonly deltas: number;
  readonly deltaMs: number;
  readonly samples: number;
  readonly runTimeoutMs: number;
  readonly logLevel: string;
  readonly startTimeoutMs: number;
}

interface Sample {
  /** Runs that finished (all of them: one that does not fails the bench). */
  readonly runs: number;
  readonly runMsOverPacing: { p50: number; max: number };
  readonly idleRssBytes: number | undefined;
  readonly peakRssBytes: number | undefined;
  readonly rssBytesPerInFlightStep: number | undefined;
  readonly workerCpuSeconds: number | undefined;
  readonly workerCpuUsecPerDelta: number | undefined;
  readonly batchSeconds: number;
}

interface Variant {
  /** WORKER_CONCURRENCY; undefined = the worker's default. */
  readonly concurrency: number | undefined;
  /** BATON_FAIRNESS of API and worker; undefined = the default (admission on, window 64). */
  readonly fairness: string | undefined;
}

async function sampleOnce(
  ctx: BenchContext,
  url: string,
  k: ConcurrentStreamingKnobs,
  variant: Variant,
): Promise<Sample> {
  const { concurrency, fairness } = variant;
  const fairnessEnv: Record<string, string> =
    fairness === undefined ? {} : { BATON_FAIRNESS: fairness };
  const directive = JSON.stringify({ deltas: k.deltas, deltaMs: k.deltaMs, steps: 1 });
  const body = {
    agent: 'bench-streaming',
    input: { messages: [{ role: 'user', content: directive }] },
  };
  let stack: Stack | undefined;
  try {
    stack = await startStack(ctx, url, {
      label: 'streaming-concurrent',
      logLevel: k.logLevel,
      startTimeoutMs: k.startTimeoutMs,
      maxSockets: k.runs * 2 + 16,
      apiEnv: { SSE_MAX_PER_TENANT: String(Math.max(100, k.runs * 2)), ...fairnessEnv },
      workerEnv: {
        ...fairnessEnv,
        ...(concurrency === undefined ? {} : { WORKER_CONCURRENCY: String(concurrency) }),
      },
    });
    const { client } = stack;
    const pid = stack.worker.process.pid;
    // Warm the code paths (and the connections) with a few concurrent runs first.
    await Promise.all(
      Array.from({ length: 8 }, () => submitAndFollow(client, body, k.runTimeoutMs)),
    );
    const idle = await processRssBytes(pid);
    let peak = idle;
    const sampler = setInterval(() => {
      void processRssBytes(pid).then((rss) => {
        if (rss !== undefined && (peak === undefined || rss > peak)) peak = rss;
      });
    }, 20);
    const cpu0 = (await stack.cpu()).worker;
    const t0 = performance.now();
    let runs;
    try {
      runs = await Promise.all(
        Array.from({ length: k.runs }, () => submitAndFollow(client, body, k.runTimeoutMs)),
      );
    } finally {
      clearInterval(sampler);
    }
    const batchSeconds = (performance.now() - t0) / 1000;
    const cpu1 = (await stack.cpu()).worker;
    const pacingMs = k.deltas * k.deltaMs;
    const runMs = stats(runs.map((r) => r.finishedAt - r.t0));
    const inFlight = Math.min(k.runs, concurrency ?? defaultWorkerConcurrency());
    return {
      runs: runs.length,
      runMsOverPacing: {
        p50: pacingMs > 0 ? round(runMs.p50 / pacingMs, 2) : Number.NaN,
        max: pacingMs > 0 ? round(runMs.max / pacingMs, 2) : Number.NaN,
      },
      idleRssBytes: idle,
      peakRssBytes: peak,
      rssBytesPerInFlightStep:
        idle === undefined || peak === undefined ? undefined : Math.round((peak - idle) / inFlight),
      workerCpuSeconds:
        cpu0 === undefined || cpu1 === undefined ? undefined : round(cpu1 - cpu0, 2),
      workerCpuUsecPerDelta:
        cpu0 === undefined || cpu1 === undefined
          ? undefined
          : round(((cpu1 - cpu0) * 1e6) / (runs.length * k.deltas), 1),
      batchSeconds: round(batchSeconds, 2),
    };
  } finally {
    await stack?.stop();
  }
}

function median(values: readonly (number | undefined)[]): number | undefined {
  const defined = values.filter((v): v is number => v !== undefined && !Number.isNaN(v));
  if (defined.length === 0) return undefined;
  return stats(defined).p50;
}

export async function concurrentStreaming(
  ctx: BenchContext,
  url: string,
  k: ConcurrentStreamingKnobs,
): Promise<Record<string, unknown>> {
  // A window of `runs` parks none of them (the tenant window defaults to the key window).
  const unparked = JSON.stringify({ window: k.runs });
  const variants: Record<string, Variant> = {
    default: { concurrency: undefined, fairness: undefined },
    admitted: { concurrency: undefined, fairness: unparked },
    wide: { concurrency: k.runs, fairness: unparked },
  };
  const out: Record<string, unknown> = {
    config: {
      runs: k.runs,
      deltasPerRound: k.deltas,
      deltaMs: k.deltaMs,
      modelPacingMs: k.deltas * k.deltaMs,
      samples: k.samples,
      defaultWorkerConcurrency: defaultWorkerConcurrency(),
      how: 'all runs submitted at once (POST + SSE to run.finished), one worker process, a fresh stack per sample; RSS from /proc every 20 ms, peak minus idle before the batch, over min(runs, WORKER_CONCURRENCY) steps in flight',
      variants:
        'default: every setting at its default (fairness admission on: one key, window 64 plus what it borrows of the idle pool, the pool less one window; the rest parked until slots free); admitted: BATON_FAIRNESS={"window":runs} on API and worker, nothing parked; wide: that and WORKER_CONCURRENCY = runs',
    },
  };
  for (const [name, variant] of Object.entries(variants)) {
    const { concurrency } = variant;
    const samples: Sample[] = [];
    for (let i = 0; i < k.samples; i += 1) {
      ctx.log(
        `streaming concurrent (${name}): ${k.runs} runs at once, sample ${i + 1}/${k.samples}`,
      );
      samples.push(await sampleOnce(ctx, url, k, variant));
    }
    out[name] = {
      workerConcurrency: concurrency ?? defaultWorkerConcurrency(),
      runMsOverModelPacing: {
        p50: median(samples.map((s) => s.runMsOverPacing.p50)),
        max: median(samples.map((s) => s.runMsOverPacing.max)),
      },
      rssBytesPerInFlightStep: median(samples.map((s) => s.rssBytesPerInFlightStep)),
      workerCpuSecondsPerBatch: median(samples.map((s) => s.workerCpuSeconds)),
      workerCpuUsecPerDelta: median(samples.map((s) => s.workerCpuUsecPerDelta)),
      samples,
    };
  }
  return out;
}
