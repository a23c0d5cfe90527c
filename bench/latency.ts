/**
 * Scenario "latency": submit → `run.finished` received over SSE, per run, for a 3-step run.
 *
 * Topology (production-like): the API (apps/api/src/main.ts, i.e. startApi) and one worker
 * (apps/worker/src/main.ts, BATON_AGENTS=bench) each run in their own child process on the
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
 * Breakdown: client-side milestones (202, SSE headers, first frame, run.started frame) and
 * server-side segments from the events' own `at` stamps (worker Date.now(), 1 ms resolution,
 * same machine clock as the client), averaged over the runs.
 *
 * Nothing here asserts on timings.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { Agent, request, type IncomingMessage } from 'node:http';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { InProcessRunner } from '@baton/core';
import type { RunEvent } from '@baton/protocol';
import { systemClock } from '@baton/runtime';
import { loadAgents } from '@baton/worker/testing';
import { SseParser } from '../test/support/sse-client.ts';
import {
  BenchError,
  envInt,
  processCpuSeconds,
  round,
  withTimeout,
  type BenchContext,
  type Scenario,
} from './lib.ts';

const AGENTS = ['bench', 'bench-sequential'] as const;
type AgentName = (typeof AGENTS)[number];
const TENANT = 'bench';
const API_MAIN = fileURLToPath(new URL('../apps/api/src/main.ts', import.meta.url));
const WORKER_MAIN = fileURLToPath(new URL('../apps/worker/src/main.ts', import.meta.url));

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

// ---------------------------------------------------------------------------------------------
// Statistics
// ---------------------------------------------------------------------------------------------

/** Nearest-rank percentile of an ascending array. */
function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1] as number;
}

interface Stats {
  readonly n: number;
  readonly p50: number;
  readonly p95: number;
  readonly p99: number;
  readonly mean: number;
  readonly min: number;
  readonly max: number;
}

function stats(values: readonly number[]): Stats {
  const sorted = [...values].sort((a, b) => a - b);
  const sum = sorted.reduce((a, b) => a + b, 0);
  return {
    n: sorted.length,
    p50: round(percentile(sorted, 50), 3),
    p95: round(percentile(sorted, 95), 3),
    p99: round(percentile(sorted, 99), 3),
    mean: round(sum / Math.max(1, sorted.length), 3),
    min: round(sorted[0] ?? Number.NaN, 3),
    max: round(sorted[sorted.length - 1] ?? Number.NaN, 3),
  };
}

function mean(values: readonly number[]): number {
  return values.length === 0 ? Number.NaN : values.reduce((a, b) => a + b, 0) / values.length;
}

/** Lanes run `fn` one after another; at most `lanes` in flight; results in index order. */
async function lanes<R>(n: number, width: number, fn: (i: number) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(n);
  let next = 0;
  const lane = async (): Promise<void> => {
    for (;;) {
      const i = next++;
      if (i >= n) return;
      out[i] = await fn(i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(width, n) }, lane));
  return out;
}

// ---------------------------------------------------------------------------------------------
// Child processes (API, worker)
// ---------------------------------------------------------------------------------------------

interface Child {
  readonly process: ChildProcess;
  /** The rest of the line that started with the ready marker (e.g. the API's URL). */
  readonly ready: string;
  stop(): Promise<void>;
}

async function startChild(
  ctx: BenchContext,
  label: string,
  script: string,
  env: Record<string, string>,
  readyMarker: string,
  timeoutMs: number,
): Promise<Child> {
  const child = spawn(process.execPath, [script], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
    await exited.finally(() => clearTimeout(timer));
  };
  const ready = new Promise<string>((resolve, reject) => {
    let buffered = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      buffered += chunk.toString('utf8');
      let nl: number;
      while ((nl = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
        if (line.startsWith(readyMarker)) resolve(line.slice(readyMarker.length).trim());
        else if (line.trim() !== '') ctx.log(`${label}: ${line}`);
      }
    });
    child.stderr?.on('data', (chunk: Buffer) =>
      ctx.log(`${label} stderr: ${chunk.toString('utf8').trimEnd()}`),
    );
    child.once('exit', (code, signal) =>
      reject(new BenchError(`${label} exited (code ${code}, signal ${signal}) before ready`)),
    );
  });
  try {
    const rest = await withTimeout(ready, timeoutMs, `${label} to print ${readyMarker.trim()}`);
    return { process: child, ready: rest, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

// ---------------------------------------------------------------------------------------------
// HTTP client: node:http with keep-alive (the lightest honest client; sockets are reused)
// ---------------------------------------------------------------------------------------------

interface Client {
  readonly base: URL;
  readonly key: string;
  readonly agent: Agent;
}

function postJson(
  c: Client,
  path: string,
  body: unknown,
  timeoutMs: number,
): Promise<{ status: number; body: unknown }> {
  const payload = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: c.base.hostname,
        port: c.base.port,
        path,
        method: 'POST',
        agent: c.agent,
        timeout: timeoutMs,
        headers: {
          authorization: `Bearer ${c.key}`,
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(payload),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          try {
            resolve({
              status: res.statusCode ?? 0,
              body: text === '' ? undefined : JSON.parse(text),
            });
          } catch (error) {
            reject(error instanceof Error ? error : new BenchError(String(error)));
          }
        });
      },
    );
    req.on('timeout', () => req.destroy(new BenchError(`POST ${path} timed out`)));
    req.on('error', reject);
    req.end(payload);
  });
}

interface Received {
  readonly event: RunEvent;
  /** performance.now() when its frame was parsed. */
  readonly t: number;
}

interface SseRun {
  /** performance.now() when the response headers arrived. */
  readonly headersAt: number;
  readonly received: Received[];
  /** Resolves when run.finished arrives (with its performance.now()). */
  readonly finished: Promise<number>;
  /** Resolves when the server has ended the response (socket back in the pool). */
  readonly ended: Promise<void>;
}

/** GET the event stream; resolves once the response headers are in. */
function openEvents(c: Client, runId: string, timeoutMs: number): Promise<SseRun> {
  return new Promise((resolveOpen, rejectOpen) => {
    const req = request({
      host: c.base.hostname,
      port: c.base.port,
      path: `/v1/runs/${encodeURIComponent(runId)}/events?after=0`,
      method: 'GET',
      agent: c.agent,
      headers: { authorization: `Bearer ${c.key}`, accept: 'text/event-stream' },
    });
    const timer = setTimeout(
      () => req.destroy(new BenchError(`run ${runId}: no run.finished within ${timeoutMs} ms`)),
      timeoutMs,
    );
    req.on('error', (err) => {
      clearTimeout(timer);
      rejectOpen(err);
    });
    req.on('response', (res: IncomingMessage) => {
      const headersAt = performance.now();
      if (res.statusCode !== 200) {
        clearTimeout(timer);
        res.resume();
        rejectOpen(new BenchError(`GET events of ${runId}: HTTP ${res.statusCode}`));
        return;
      }
      const parser = new SseParser();
      const received: Received[] = [];
      let onFinished!: (t: number) => void;
      let onFail!: (err: Error) => void;
      const finished = new Promise<number>((resolve, reject) => {
        onFinished = resolve;
        onFail = reject;
      });
      const ended = new Promise<void>((resolve) => {
        res.on('end', () => {
          clearTimeout(timer);
          onFail(new BenchError(`run ${runId}: stream ended without run.finished`));
          resolve();
        });
        res.on('close', () => resolve());
      });
      finished.catch(() => undefined); // observed by the caller
      res.on('error', (err) => onFail(err));
      req.on('error', (err) => onFail(err));
      res.setEncoding('utf8');
      res.on('data', (text: string) => {
        const t = performance.now();
        for (const m of parser.push(text)) {
          const event = JSON.parse(m.data) as RunEvent;
          received.push({ event, t });
          if (event.type === 'run.finished') {
            if (event.status !== 'done' || event.termination.kind !== 'natural_end')
              onFail(
                new BenchError(
                  `run ${runId} finished with ${event.status} / ${JSON.stringify(event.termination)}`,
                ),
              );
            else onFinished(t);
          }
        }
      });
      resolveOpen({ headersAt, received, finished, ended });
    });
    req.end();
  });
}

interface DistributedSample {
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

async function distributedRun(
  c: Client,
  agent: AgentName,
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
  const sse = await openEvents(c, runId, timeoutMs);
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

async function inProcessLatencies(
  agent: AgentName,
  runs: number,
  warmupRuns: number,
  width: number,
  timeoutMs: number,
): Promise<number[]> {
  const runner = new InProcessRunner({
    agents: loadAgents(['bench'], systemClock),
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

function ratios(distributed: Stats, inProcess: Stats): Record<string, number> {
  return {
    p50: round(distributed.p50 / inProcess.p50, 2),
    p95: round(distributed.p95 / inProcess.p95, 2),
    p99: round(distributed.p99 / inProcess.p99, 2),
    mean: round(distributed.mean / inProcess.mean, 2),
  };
}

export const latency: Scenario = {
  name: 'latency',
  description:
    'submit -> run.finished over SSE per 3-step run (API + worker processes), p50/p95/p99 vs InProcessRunner',
  needsRedis: true,
  async run(ctx) {
    const url = ctx.redisUrl;
    if (url === undefined) throw new BenchError('latency needs Redis');
    const k = knobs();
    const prefix = `bench-latency-${randomBytes(3).toString('hex')}`;
    const key = `bench-latency-${randomBytes(12).toString('hex')}`;
    const common = { REDIS_URL: url, BATON_PREFIX: prefix, LOG_LEVEL: k.logLevel };
    const children: Child[] = [];
    const agent = new Agent({ keepAlive: true, maxSockets: 256 });
    const results: Record<string, unknown> = {};
    const cpuOf = async (c: Child | undefined): Promise<number | undefined> =>
      c?.process.pid === undefined ? undefined : processCpuSeconds(c.process.pid);
    try {
      ctx.log('starting worker process (apps/worker/src/main.ts, BATON_AGENTS=bench)');
      const worker = await startChild(
        ctx,
        'worker',
        WORKER_MAIN,
        { ...common, BATON_AGENTS: 'bench', RECONCILER: '0', WORKER_ID: `${prefix}-w0` },
        'READY ',
        k.startTimeoutMs,
      );
      children.push(worker);
      ctx.log('starting API process (apps/api/src/main.ts)');
      const api = await startChild(
        ctx,
        'api',
        API_MAIN,
        { ...common, PORT: '0', HOST: '127.0.0.1', API_KEYS: `${TENANT}:${key}` },
        'LISTENING ',
        k.startTimeoutMs,
      );
      children.push(api);
      const client: Client = { base: new URL(api.ready), key, agent };
      ctx.log(`api at ${api.ready}`);

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
          const [apiCpu0, workerCpu0] = [await cpuOf(api), await cpuOf(worker)];
          const benchCpu0 = process.cpuUsage();
          const started = performance.now();
          const samples = await lanes(k.runs, v.width, (i) =>
            distributedRun(client, name, `${v.label} ${i}`, k.runTimeoutMs),
          );
          const elapsedMs = performance.now() - started;
          const benchCpu = process.cpuUsage(benchCpu0);
          const [apiCpu1, workerCpu1] = [await cpuOf(api), await cpuOf(worker)];
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
            distributedOverInProcess: ratios(dist, inProc),
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
      agent.destroy();
      for (const c of children.reverse()) await c.stop();
    }
    return {
      config: {
        runs: k.runs,
        warmupRuns: k.warmupRuns,
        concurrencyVariant: k.concurrency > 1 ? k.concurrency : 'off',
        topology:
          'API (apps/api/src/main.ts -> startApi) and 1 worker (apps/worker/src/main.ts, BATON_AGENTS=bench) in separate child processes; this process is the HTTP client (node:http keep-alive agent). Worker: default WORKER_CONCURRENCY/TOOL_CONCURRENCY, RECONCILER=0; API: defaults (EVENT_METRICS on); LOG_LEVEL=' +
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
