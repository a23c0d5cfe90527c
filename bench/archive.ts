/**
 * Scenario "archive": the PostgreSQL archive (ARCHIVE_URL) against the same stack without it,
 * measured in the same run. Per side: N runs through the API (POST + SSE to run.finished, N in
 * flight), completion rate. With the archive: how fast the archive drains (runs archived per
 * second, from the batch's start until nothing is pending), its lag p50/p99/max sampled from
 * /metrics during the batch, PostgreSQL bytes and rows per run, Redis bytes per finished run
 * while hot and after the (short) retention let the keys go, vs the same without the archive;
 * read latency of GET /v1/runs/:id and the event replay hot vs archived; and the check that
 * every run's body and events read back after Redis let it go are identical to what was seen
 * live (mismatches counted). `BENCH_ARCHIVE_RUNS=10000 BENCH_ARCHIVE_RETENTION_S=60` is the
 * acceptance run.
 */
import { performance } from 'node:perf_hooks';
import type { Redis } from 'ioredis';
import type { RunEvent } from '@baton/protocol';
import { PgArchive } from '@baton/runtime/internal';
import { createTestDatabase, type TestDatabase } from '@baton/testing/postgres';
import { silentLogger } from '@baton/testing/worker-harness';
import {
  httpJson,
  metricValue,
  openEvents,
  stackKnobs,
  startStack,
  type Client,
  type Stack,
} from './http-stack.ts';
import { distributedRun } from './latency.ts';
import { BenchError, benchClient, envInt, round, type Scenario } from './lib.ts';
import { lanes, stats } from './stats.ts';

const AGENT = 'bench-sequential';

function knobs() {
  return {
    runs: envInt('BENCH_ARCHIVE_RUNS', 500, 1),
    inFlight: envInt('BENCH_ARCHIVE_IN_FLIGHT', 32, 1),
    retentionSeconds: envInt('BENCH_ARCHIVE_RETENTION_S', 5, 1),
    readSamples: envInt('BENCH_ARCHIVE_READ_SAMPLES', 200, 1),
    runTimeoutMs: envInt('BENCH_ARCHIVE_RUN_TIMEOUT_MS', 60_000, 100),
    ...stackKnobs(),
  };
}

/** Bytes (MEMORY USAGE) and count of the keys under the stack's prefix. */
async function prefixMemory(
  redis: Redis,
  prefix: string,
): Promise<{ bytes: number; keys: number }> {
  let bytes = 0;
  let keys = 0;
  let cursor = '0';
  do {
    const [next, batch] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
    cursor = next;
    for (const key of batch) {
      bytes += (await redis.memory('USAGE', key)) ?? 0;
      keys += 1;
    }
  } while (cursor !== '0');
  return { bytes, keys };
}

async function getRun(
  c: Client,
  runId: string,
  timeoutMs: number,
): Promise<{ ms: number; text: string }> {
  const t0 = performance.now();
  const reply = await httpJson(c, 'GET', `/v1/runs/${runId}`, undefined, timeoutMs);
  if (reply.status !== 200) throw new BenchError(`GET /v1/runs/${runId}: HTTP ${reply.status}`);
  return { ms: performance.now() - t0, text: reply.text };
}

/** GET /v1/threads/:id of the run's thread (every bench run has a thread of its own). */
async function getThread(
  c: Client,
  runId: string,
  live: Map<string, RunEvent[]>,
  timeoutMs: number,
): Promise<string> {
  const threadId = live.get(runId)?.[0]?.threadId;
  const reply = await httpJson(c, 'GET', `/v1/threads/${threadId ?? ''}`, undefined, timeoutMs);
  return `${String(reply.status)} ${reply.text}`;
}

async function replay(
  c: Client,
  runId: string,
  timeoutMs: number,
): Promise<{ ms: number; events: RunEvent[] }> {
  const t0 = performance.now();
  const sse = await openEvents(c, runId, { timeoutMs });
  await sse.finished;
  await sse.ended;
  return { ms: performance.now() - t0, events: sse.received.map((r) => r.event) };
}

interface Side {
  readonly runsPerSec: number;
  readonly runIds: string[];
  readonly live: Map<string, RunEvent[]>;
  readonly elapsedMs: number;
}

async function batch(
  stack: Stack,
  k: ReturnType<typeof knobs>,
  onTick?: () => Promise<void>,
): Promise<Side> {
  const live = new Map<string, RunEvent[]>();
  let sampling = true;
  const sampler = (async () => {
    while (sampling && onTick) {
      await onTick();
      await new Promise((r) => setTimeout(r, 200));
    }
  })();
  const started = performance.now();
  const samples = await lanes(k.runs, k.inFlight, async (i) => {
    const s = await distributedRun(stack.client, AGENT, `archive ${i}`, k.runTimeoutMs);
    const events = s.received.map((r) => r.event);
    live.set(events[0]!.runId, events);
    return events[0]!.runId;
  });
  const elapsedMs = performance.now() - started;
  sampling = false;
  await sampler;
  return { runsPerSec: round((k.runs / elapsedMs) * 1000, 1), runIds: samples, live, elapsedMs };
}

export const archive: Scenario = {
  name: 'archive',
  description:
    'PostgreSQL archive on vs off: completion rate, archive drain rate and lag, PG bytes/rows per run, Redis bytes per finished run, read latency hot vs archived, identical bodies',
  needsRedis: true,
  async run(ctx) {
    const url = ctx.redisUrl;
    if (url === undefined) throw new BenchError('archive needs Redis');
    const k = knobs();
    const redis = benchClient(url, 'bench-archive');
    let db: TestDatabase | undefined;
    let stack: Stack | undefined;
    let pg: PgArchive | undefined;
    const env = {
      EVENT_RETENTION_SECONDS: String(k.retentionSeconds),
      THREAD_TTL_SECONDS: String(k.retentionSeconds),
    };
    try {
      // Without the archive (baseline: today's defaults, 24 h retention).
      stack = await startStack(ctx, url, {
        label: 'arch-off',
        logLevel: k.logLevel,
        startTimeoutMs: k.startTimeoutMs,
        apiEnv: { SSE_MAX_PER_TENANT: String(k.inFlight * 4) },
        maxSockets: k.inFlight * 2 + 8,
      });
      ctx.log(`archive off: ${k.runs} runs, ${k.inFlight} in flight`);
      await lanes(Math.min(50, k.runs), k.inFlight, (i) =>
        distributedRun(stack!.client, AGENT, `warm ${i}`, k.runTimeoutMs),
      );
      const offMem0 = await prefixMemory(redis, stack.prefix);
      const off = await batch(stack, k);
      const offMem1 = await prefixMemory(redis, stack.prefix);
      await stack.stop();
      stack = undefined;
      ctx.log(`archive off: ${off.runsPerSec} runs/s`);

      // With it.
      db = await createTestDatabase('bench_archive', process.env['BENCH_ARCHIVE_PG_URL']);
      const on = { ...env, ARCHIVE_URL: db.url, ARCHIVE_INTERVAL_MS: '100' };
      stack = await startStack(ctx, url, {
        label: 'arch-on',
        logLevel: k.logLevel,
        startTimeoutMs: k.startTimeoutMs,
        apiEnv: { ...on, SSE_MAX_PER_TENANT: String(k.inFlight * 4) },
        workerEnv: on,
        maxSockets: k.inFlight * 2 + 8,
      });
      const s = stack;
      // Before the warm-up: after the retention its runs are gone as well as the batch's.
      const onMem0 = await prefixMemory(redis, s.prefix);
      await lanes(Math.min(50, k.runs), k.inFlight, (i) =>
        distributedRun(s.client, AGENT, `warm ${i}`, k.runTimeoutMs),
      );
      pg = new PgArchive({ url: db.url, logger: silentLogger });
      const drainDeadline = Date.now() + 120_000;
      const pending = async (): Promise<number> =>
        (await metricValue(s.client, 'baton_archive_pending_runs', {}, k.runTimeoutMs)) ?? 0;
      while ((await pending()) > 0 && Date.now() < drainDeadline)
        await new Promise((r) => setTimeout(r, 100));
      const pg0 = await pg.usage();
      const lags: number[] = [];
      let maxPending = 0;
      ctx.log(
        `archive on: ${k.runs} runs, ${k.inFlight} in flight, Redis retention ${k.retentionSeconds} s`,
      );
      const t0 = performance.now();
      // Sampled from Redis directly (what baton_archive_* read), not through GET /metrics: a
      // scrape every 200 ms would cost the archive-on side work the off side does not do.
      const pendingKey = `${s.prefix}:archive:pending`;
      const onSide = await batch(s, k, async () => {
        const [count, oldest] = await Promise.all([
          redis.zcard(pendingKey),
          redis.zrange(pendingKey, '0', '0', 'WITHSCORES'),
        ]);
        lags.push(oldest[1] === undefined ? 0 : Math.max(0, Date.now() - Number(oldest[1])) / 1000);
        maxPending = Math.max(maxPending, count);
      });
      const hotMem = await prefixMemory(redis, s.prefix);
      // Hot reads (Redis), then the whole batch is drained into the archive.
      // The newest runs: still in Redis when read hot, whatever the retention.
      const sample = onSide.runIds.slice(-k.readSamples);
      const hotGet: number[] = [];
      const hotReplay: number[] = [];
      const hotBodies = new Map<string, string>();
      const hotThreads = new Map<string, string>();
      for (const runId of sample) {
        const g = await getRun(s.client, runId, k.runTimeoutMs);
        hotGet.push(g.ms);
        hotBodies.set(runId, g.text);
        hotThreads.set(runId, await getThread(s.client, runId, onSide.live, k.runTimeoutMs));
        hotReplay.push((await replay(s.client, runId, k.runTimeoutMs)).ms);
      }
      while ((await pending()) > 0 && Date.now() < drainDeadline + 600_000)
        await new Promise((r) => setTimeout(r, 50));
      const drainedMs = performance.now() - t0;
      const pg1 = await pg.usage();
      ctx.log(
        `archive on: ${onSide.runsPerSec} runs/s; archive drained ${k.runs} runs in ${round(drainedMs / 1000, 1)} s`,
      );
      // Redis lets the archived runs go after the retention (the gc drops their index entries).
      ctx.log(`waiting ${k.retentionSeconds} s retention for Redis to let the runs go`);
      const gone = async (): Promise<boolean> =>
        (await redis.exists(`${s.prefix}:{run:${onSide.runIds.at(-1)!}}:cp`)) === 0;
      const goneDeadline = Date.now() + k.retentionSeconds * 1000 + 120_000;
      while (!(await gone()) && Date.now() < goneDeadline)
        await new Promise((r) => setTimeout(r, 250));
      await new Promise((r) => setTimeout(r, 1000));
      const coldMem = await prefixMemory(redis, s.prefix);
      // Archived reads, one at a time as the hot ones were: latency, and the same bodies.
      const coldGet: number[] = [];
      const coldReplay: number[] = [];
      let bodyMismatches = 0;
      let threadMismatches = 0;
      for (const runId of sample) {
        const g = await getRun(s.client, runId, k.runTimeoutMs);
        coldGet.push(g.ms);
        if (g.text !== hotBodies.get(runId)) bodyMismatches += 1;
        const thread = await getThread(s.client, runId, onSide.live, k.runTimeoutMs);
        if (thread !== hotThreads.get(runId)) threadMismatches += 1;
        coldReplay.push((await replay(s.client, runId, k.runTimeoutMs)).ms);
      }
      // Every run: its events read back from the archive are the ones seen live.
      let eventMismatches = 0;
      let checked = 0;
      await lanes(onSide.runIds.length, 8, async (i) => {
        const runId = onSide.runIds[i]!;
        const r = await replay(s.client, runId, k.runTimeoutMs);
        if (JSON.stringify(r.events) !== JSON.stringify(onSide.live.get(runId)))
          eventMismatches += 1;
        checked += 1;
      });
      const perRun = (a: number, b: number): number => round((b - a) / k.runs, 1);
      return {
        config: {
          agent: AGENT,
          runs: k.runs,
          runsInFlight: k.inFlight,
          redisRetentionSeconds: k.retentionSeconds,
          archiveOff: 'default retention (EVENT_RETENTION_SECONDS 86400)',
          measured:
            'both sides: one API + one worker process, closed loop of runsInFlight lanes (POST, SSE to run.finished); archive drain = batch start until baton_archive_pending_runs is 0',
        },
        completionRunsPerSec: {
          archiveOff: off.runsPerSec,
          archiveOn: onSide.runsPerSec,
          ratio: round(onSide.runsPerSec / off.runsPerSec, 3),
        },
        archive: {
          archivedRunsPerSec: round((k.runs / drainedMs) * 1000, 1),
          keepsUp: drainedMs <= onSide.elapsedMs * 1.1 + 2_000,
          drainAfterBatchMs: round(drainedMs - onSide.elapsedMs, 0),
          lagSeconds: lags.length > 0 ? stats(lags) : null,
          maxPending,
        },
        postgres: {
          bytesPerRun: perRun(pg0.bytes, pg1.bytes),
          rowsPerRun: {
            runs: perRun(pg0.runs, pg1.runs),
            events: perRun(pg0.events, pg1.events),
            threadMessages: perRun(pg0.messages, pg1.messages),
          },
        },
        redisBytesPerFinishedRun: {
          archiveOff: perRun(offMem0.bytes, offMem1.bytes),
          // Runs older than the retention are gone already at the batch's end.
          archiveOnAtBatchEnd: perRun(onMem0.bytes, hotMem.bytes),
          archiveOnAfterRetention: perRun(onMem0.bytes, coldMem.bytes),
        },
        readLatencyMs: {
          getRun: { hot: stats(hotGet), archived: stats(coldGet) },
          eventReplay: { hot: stats(hotReplay), archived: stats(coldReplay) },
        },
        identical: {
          checked,
          bodyMismatches,
          threadMismatches,
          eventMismatches,
          bodiesCompared: hotBodies.size,
        },
      };
    } finally {
      await stack?.stop();
      await pg?.close();
      await db?.drop().catch(() => undefined);
      redis.disconnect();
    }
  },
};
