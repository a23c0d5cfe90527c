/**
 * Scenario "sse-fanout": BENCH_SSE_SUBSCRIBERS (default 10,000) concurrent SSE subscribers on ONE
 * API process. Subscribers are spread over BENCH_SSE_RUNS runs (a few each) plus BENCH_SSE_HOT_RUNS
 * hot runs that share BENCH_SSE_HOT_PERCENT of them, and held by BENCH_SSE_CLIENT_PROCS client
 * processes (bench/sse-fanout-client.ts). The runs are `bench-approval` runs parked on their
 * approval; every subscriber opens `?after=<lastSeq>`, so it gets only what follows. Once all are
 * connected, every run is approved at once and streams BENCH_SSE_DELTAS deltas; each frame's lag
 * (the event's `at` → parsed by the client) is recorded until every stream has ended.
 * Reported: lag p50/p99, API RSS before/after connecting (per subscriber), API and Redis CPU per
 * delivered frame, connect time.
 *
 * Baseline in the same run: raw Redis PUBLISH → a plain node:http SSE echo server
 * (bench/sse-echo-server.ts) with the same subscribers over the same channel layout, replaying
 * Baton's offered load: one message of the same average size per event, at the offset (from the
 * first decision) at which the run committed it, read back from the runs' streams afterwards.
 */
import { performance } from 'node:perf_hooks';
import { startFanoutClients, type FanoutResult, type Subscription } from './fanout-clients.ts';
import {
  childCpuSeconds,
  epochOf,
  openEvents,
  metricIn,
  metricValue,
  metricsText,
  processRssBytes,
  stackKnobs,
  startChild,
  startStack,
  TENANT,
  type Stack,
} from './http-stack.ts';
import {
  BenchError,
  benchClient,
  envInt,
  mapLimit,
  redisSnapshot,
  round,
  sleep,
  type BenchContext,
  type Scenario,
} from './lib.ts';
import { decide, parkRuns, ticketOf, type Ticket } from './parked-runs.ts';
import { stats, statsRatio, type Stats } from './stats.ts';
import { fileURLToPath } from 'node:url';

/** The API's V8 heap from its own default metrics: what of its RSS growth is heap. */
async function apiHeap(
  c: Stack['client'],
  timeoutMs: number,
): Promise<{ used: number; total: number }> {
  const text = await metricsText(c, timeoutMs);
  return {
    used: metricIn(text, 'baton_api_nodejs_heap_size_used_bytes', {}) ?? Number.NaN,
    total: metricIn(text, 'baton_api_nodejs_heap_size_total_bytes', {}) ?? Number.NaN,
  };
}

const ECHO_MAIN = fileURLToPath(new URL('./sse-echo-server.ts', import.meta.url));

function knobs() {
  return {
    subscribers: envInt('BENCH_SSE_SUBSCRIBERS', 10_000, 1),
    runs: envInt('BENCH_SSE_RUNS', 200, 1),
    hotRuns: envInt('BENCH_SSE_HOT_RUNS', 4, 0),
    hotPercent: envInt('BENCH_SSE_HOT_PERCENT', 50, 0),
    clientProcs: envInt('BENCH_SSE_CLIENT_PROCS', 4, 1),
    connectParallelism: envInt('BENCH_SSE_CONNECT_PARALLELISM', 200, 1),
    deltas: envInt('BENCH_SSE_DELTAS', 10, 0),
    deltaMs: envInt('BENCH_SSE_DELTA_MS', 10, 0),
    deliveryTimeoutMs: envInt('BENCH_SSE_TIMEOUT_MS', 300_000, 1000),
    ...stackKnobs(),
  };
}
type Knobs = ReturnType<typeof knobs>;

/** Subscribers per stream: hot streams share hotPercent, the rest spread evenly. */
function layout(k: Knobs): number[] {
  const hot = k.hotRuns > 0 ? Math.round((k.subscribers * Math.min(100, k.hotPercent)) / 100) : 0;
  const counts: number[] = [];
  for (let i = 0; i < k.hotRuns; i += 1)
    counts.push(Math.floor(hot / k.hotRuns) + (i < hot % k.hotRuns ? 1 : 0));
  const cold = k.subscribers - hot;
  for (let i = 0; i < k.runs; i += 1)
    counts.push(Math.floor(cold / k.runs) + (i < cold % k.runs ? 1 : 0));
  return counts;
}

function lagStats(results: readonly FanoutResult[]): Stats {
  const all: number[] = [];
  for (const r of results) for (const v of r.lagsCentiMs) all.push(v / 100);
  return stats(all);
}

function sum(
  results: readonly FanoutResult[],
  key: 'frames' | 'bytes' | 'errors' | 'connected',
): number {
  return results.reduce((a, r) => a + r[key], 0);
}

function firstError(results: readonly FanoutResult[]): string | undefined {
  return results.find((r) => r.firstError)?.firstError;
}

async function batonSide(ctx: BenchContext, url: string, k: Knobs, counts: number[]) {
  const redis = benchClient(url, 'bench-sse-fanout');
  let stack: Stack | undefined;
  let clients: Awaited<ReturnType<typeof startFanoutClients>> | undefined;
  try {
    stack = await startStack(ctx, url, {
      label: 'fanout',
      logLevel: k.logLevel,
      startTimeoutMs: k.startTimeoutMs,
      apiEnv: { SSE_MAX_PER_TENANT: String(k.subscribers + 1000) },
      apiFdLimit: k.subscribers + 4096,
    });
    const { client, api } = stack;
    const timeoutMs = Math.max(30_000, k.startTimeoutMs);
    ctx.log(`parking ${counts.length} bench-approval runs`);
    const runIds = await parkRuns(client, counts.length, {
      parallelism: 32,
      directive: { deltas: k.deltas, deltaMs: k.deltaMs },
      timeoutMs,
      log: (m) => ctx.log(m),
    });
    const tickets = await mapLimit(runIds, 32, (id) => ticketOf(client, id, timeoutMs));
    const subscriptions: Subscription[] = runIds.map((id, i) => ({
      path: `/v1/runs/${id}/events?after=${(tickets[i] as Ticket).lastSeq}`,
      count: counts[i] as number,
    }));
    await sleep(500);
    const rss0 = await processRssBytes(api.process.pid);
    const heap0 = await apiHeap(client, timeoutMs);
    ctx.log(`connecting ${k.subscribers} subscribers from ${k.clientProcs} processes`);
    const c0 = performance.now();
    clients = await startFanoutClients({
      base: client.base.href,
      headers: { authorization: `Bearer ${client.key}` },
      subscriptions,
      processes: k.clientProcs,
      parallelism: k.connectParallelism,
      timeoutMs: k.deliveryTimeoutMs,
      log: (m) => ctx.log(m),
    });
    const connectMs = performance.now() - c0;
    await sleep(500);
    const rss1 = await processRssBytes(api.process.pid);
    const heap1 = await apiHeap(client, timeoutMs);
    const openStreams = await metricValue(client, 'baton_sse_connections', {}, timeoutMs);
    ctx.log(
      `${clients.connected} connected in ${round(connectMs / 1000, 1)} s; API says ${openStreams} open`,
    );
    const api0 = await childCpuSeconds(api);
    const redis0 = await redisSnapshot(redis);
    const t0 = performance.now();
    // A decision answered 503 (the API's Redis commands timed out while its event loop was busy
    // writing frames; the decision may still have been committed) is retried by `decide` with
    // the same decisionId; the retries are reported.
    let decisionRetries = 0;
    await mapLimit(runIds, 16, async (id, i) => {
      decisionRetries += await decide(client, id, tickets[i] as Ticket, timeoutMs);
    });
    await clients.waitDone(k.deliveryTimeoutMs);
    const deliveryMs = performance.now() - t0;
    const api1 = await childCpuSeconds(api);
    const redis1 = await redisSnapshot(redis);
    const results = await clients.report(30_000);
    // One scrape: prom-client resets its event-loop histogram on every collect, so this covers
    // the time since the previous scrape (just before the decisions): the delivery.
    const scrape = await metricsText(client, timeoutMs);
    const loopLag = (name: string): number | null => {
      const v = metricIn(scrape, `baton_api_nodejs_eventloop_lag_${name}_seconds`);
      return v === undefined ? null : round(v * 1000, 1);
    };
    const apiEventLoopLagMs = {
      note: "the API's own nodejs_eventloop_lag_* (prom-client default metrics) over the delivery",
      p50: loopLag('p50'),
      p99: loopLag('p99'),
      max: loopLag('max'),
    };
    // The offered load, for the baseline to replay: when each run's events were committed,
    // relative to the first decision (read back from the runs' durable streams).
    const t0Epoch = epochOf(t0);
    const timeline = await mapLimit(runIds, 16, async (id, i) => {
      const sse = await openEvents(client, id, {
        after: (tickets[i] as Ticket).lastSeq,
        timeoutMs,
      });
      await sse.finished;
      await sse.ended;
      return sse.received.map((r) => Math.max(0, r.event.at - t0Epoch));
    });
    const frames = sum(results, 'frames');
    ctx.log(`baton: ${frames} frames delivered in ${round(deliveryMs / 1000, 1)} s`);
    return {
      timeline,
      subscribersConnected: sum(results, 'connected'),
      apiOpenStreamsMetric: openStreams,
      connectSeconds: round(connectMs / 1000, 2),
      errors: sum(results, 'errors'),
      ...(firstError(results) ? { firstError: firstError(results) } : {}),
      decisionRetries,
      apiEventLoopLagMs,
      framesDelivered: frames,
      framesPerSubscriber: round(frames / k.subscribers, 2),
      avgFrameBytes: round(sum(results, 'bytes') / Math.max(1, frames), 0),
      deliverySeconds: round(deliveryMs / 1000, 2),
      framesPerSec: round((frames / deliveryMs) * 1000, 0),
      lagMs: lagStats(results),
      apiRssBytes: { beforeSubscribers: rss0, withSubscribers: rss1 },
      apiRssBytesPerSubscriber:
        rss0 !== undefined && rss1 !== undefined ? round((rss1 - rss0) / k.subscribers, 0) : null,
      apiHeapBytesPerSubscriber: {
        note: "the API's V8 heap (baton_api_nodejs_heap_size_*_bytes), not collected first: used = live objects and garbage not yet collected, total = what V8 holds",
        used: round((heap1.used - heap0.used) / k.subscribers, 0),
        total: round((heap1.total - heap0.total) / k.subscribers, 0),
      },
      apiCpuMsPer1000Frames:
        api0 !== undefined && api1 !== undefined ? round(((api1 - api0) * 1e6) / frames, 2) : null,
      redisCpuMsPer1000Frames: round(((redis1.cpuSeconds - redis0.cpuSeconds) * 1e6) / frames, 3),
      clientCpuMsPer1000Frames: round(
        (results.reduce((a, r) => a + r.cpuMs, 0) * 1000) / frames,
        2,
      ),
    };
  } finally {
    await clients?.stop();
    await stack?.stop();
    redis.disconnect();
  }
}

async function echoSide(
  ctx: BenchContext,
  url: string,
  k: Knobs,
  counts: number[],
  timeline: readonly (readonly number[])[],
  frameBytes: number,
) {
  const redis = benchClient(url, 'bench-sse-echo-publisher');
  let clients: Awaited<ReturnType<typeof startFanoutClients>> | undefined;
  const server = await startChild(
    ctx,
    'echo',
    ECHO_MAIN,
    { REDIS_URL: url },
    'LISTENING ',
    k.startTimeoutMs,
    {
      fdLimit: k.subscribers + 4096,
    },
  );
  try {
    const tag = `bench-echo-${process.pid}`;
    const subscriptions = counts.map((count, i) => ({ path: `/s/${tag}.${i}`, count }));
    const rss0 = await processRssBytes(server.process.pid);
    const c0 = performance.now();
    clients = await startFanoutClients({
      base: server.ready,
      headers: {},
      subscriptions,
      processes: k.clientProcs,
      parallelism: k.connectParallelism,
      timeoutMs: k.deliveryTimeoutMs,
      log: (m) => ctx.log(m),
    });
    const connectMs = performance.now() - c0;
    await sleep(500);
    const rss1 = await processRssBytes(server.process.pid);
    const cpu0 = await childCpuSeconds(server);
    const redis0 = await redisSnapshot(redis);
    // Baton's offered load replayed: channel i gets a message whenever run i committed an event
    // (same offsets from the start), about the same size.
    const pad = 'x'.repeat(Math.max(0, frameBytes - 60));
    const t0 = performance.now();
    await Promise.all(
      timeline.map(async (offsets, i) => {
        for (const [m, offset] of offsets.entries()) {
          const wait = t0 + offset - performance.now();
          if (wait > 0) await sleep(wait);
          const last = m === offsets.length - 1;
          await redis.publish(
            `${tag}.${i}`,
            JSON.stringify({ at: Date.now(), seq: m + 1, pad, ...(last ? { last: true } : {}) }),
          );
        }
      }),
    );
    await clients.waitDone(k.deliveryTimeoutMs);
    const deliveryMs = performance.now() - t0;
    const cpu1 = await childCpuSeconds(server);
    const redis1 = await redisSnapshot(redis);
    const results = await clients.report(30_000);
    const frames = sum(results, 'frames');
    ctx.log(`echo: ${frames} frames delivered in ${round(deliveryMs / 1000, 1)} s`);
    return {
      subscribersConnected: sum(results, 'connected'),
      connectSeconds: round(connectMs / 1000, 2),
      errors: sum(results, 'errors'),
      ...(firstError(results) ? { firstError: firstError(results) } : {}),
      framesDelivered: frames,
      avgFrameBytes: round(sum(results, 'bytes') / Math.max(1, frames), 0),
      deliverySeconds: round(deliveryMs / 1000, 2),
      lagMs: lagStats(results),
      serverRssBytes: { beforeSubscribers: rss0, withSubscribers: rss1 },
      serverRssBytesPerSubscriber:
        rss0 !== undefined && rss1 !== undefined ? round((rss1 - rss0) / k.subscribers, 0) : null,
      serverCpuMsPer1000Frames:
        cpu0 !== undefined && cpu1 !== undefined ? round(((cpu1 - cpu0) * 1e6) / frames, 2) : null,
      redisCpuMsPer1000Frames: round(((redis1.cpuSeconds - redis0.cpuSeconds) * 1e6) / frames, 3),
    };
  } finally {
    await clients?.stop();
    await server.stop();
    redis.disconnect();
  }
}

export const sseFanout: Scenario = {
  name: 'sse-fanout',
  description:
    '10,000 SSE subscribers on one API process over many runs and a few hot ones: delivery lag, API RSS and CPU per subscriber, vs a plain Redis PUBLISH -> node:http SSE echo server',
  needsRedis: true,
  async run(ctx) {
    const url = ctx.redisUrl;
    if (url === undefined) throw new BenchError('sse-fanout needs Redis');
    const k = knobs();
    const counts = layout(k);
    const baton = await batonSide(ctx, url, k, counts);
    const { timeline, ...batonResult } = baton;
    const echo = await echoSide(ctx, url, k, counts, timeline, baton.avgFrameBytes);
    const perSub = (a: number | null, b: number | null): number | null =>
      a !== null && b !== null && b > 0 ? round(a / b, 2) : null;
    return {
      config: {
        subscribers: k.subscribers,
        tenant: TENANT,
        runs: k.runs,
        hotRuns: k.hotRuns,
        subscribersPerHotRun: counts.slice(0, k.hotRuns),
        subscribersPerOtherRun: `${Math.min(...counts.slice(k.hotRuns))}-${Math.max(...counts.slice(k.hotRuns))}`,
        clientProcesses: k.clientProcs,
        deltasPerRun: k.deltas,
        deltaMs: k.deltaMs,
        api: 'one API process (apps/api/src/main.ts), SSE_MAX_PER_TENANT raised to subscribers + 1000, open-files limit raised with ulimit -n; defaults otherwise (EVENT_METRICS on)',
        measured:
          "bench-approval runs parked on their approval; subscribers open ?after=<lastSeq>; all runs approved at once (16 decisions in flight); lag = the event's `at` (worker Date.now) -> frame parsed by a client process, until every stream ended (run.finished)",
        baseline: `Baton's offered load replayed: PUBLISH to one channel per run, one message (~${baton.avgFrameBytes} B) at each offset from the first decision at which that run committed an event (read back from its stream) -> bench/sse-echo-server.ts (node:http, one SUBSCRIBE per channel) -> the same client processes and subscriber layout`,
      },
      baton: batonResult,
      echoBaseline: echo,
      ratios: {
        lagBatonOverEcho: statsRatio(baton.lagMs, echo.lagMs),
        rssPerSubscriberBatonOverEcho: perSub(
          baton.apiRssBytesPerSubscriber,
          echo.serverRssBytesPerSubscriber,
        ),
        cpuPerFrameBatonApiOverEcho: perSub(
          baton.apiCpuMsPer1000Frames,
          echo.serverCpuMsPer1000Frames,
        ),
      },
    };
  },
};
