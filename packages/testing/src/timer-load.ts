/**
 * Timer load (issue 36), shared by the faults test (test/integration/timers-volume.test.ts) and
 * the bench scenario `timers` (bench/timers.ts): N runs of the bench agents (`bench-approval`,
 * `bench-sleep`) that wait on a timer, either an approval with a deadline (deny) spread over a window, or a durable sleep.
 * Worker processes are killed with SIGKILL on a period (each replaced at once), Redis may be
 * killed and restarted once. Measures what the issue asks: each timer's lateness (the commit
 * time of its `tool_call.deadline_expired` minus its deadline), BullMQ jobs held and MEMORY USAGE
 * bytes per waiting run while they wait, and exactly one outcome per call.
 */
import { performance } from 'node:perf_hooks';
import { hashKey, loadApiConfig, startApi, type RunningApi } from '@baton/api';
import type { CreateRunResponse, RunEvent, RunSnapshot } from '@baton/protocol';
import { BatonKeys } from '@baton/runtime/internal';
import { ApiClient, eventsOf } from './api-harness.ts';
import { heldJobs } from './held-jobs.ts';
import type { RedisProcess } from './redis-process.ts';
import { testRedis, type AnyRedis } from './redis-client.ts';
import { spawnWorker, type WorkerProcess } from './worker-process.ts';
import { silentLogger, testPrefix } from './worker-harness.ts';

export interface TimerLoadOptions {
  readonly redisUrl: string;
  readonly mode: 'deadline' | 'sleep';
  readonly runs: number;
  /** Timers spread evenly over this window, starting `leadMs` after the (estimated) creates. */
  readonly spreadMs: number;
  /**
   * Time between the end of the creates and the first timer (the waiting runs are measured, and
   * restarts made, in it). A sleep lasts at least this long (from its run's create).
   */
  readonly leadMs: number;
  readonly workers: number;
  /** SIGKILL one worker this often (0: never), and start a replacement at once. */
  readonly killEveryMs: number;
  /** Kill -9 and restart this Redis (a RedisProcess with AOF always) half-way into the timers. */
  readonly redisProcess?: RedisProcess;
  /** Also restart every worker (SIGTERM, then new ones) half-way into the timers. */
  readonly restartWorkers?: boolean;
  readonly parallelism: number;
  readonly workerEnv?: Readonly<Record<string, string>>;
  readonly log: (message: string) => void;
}

export interface TimerLoadResult {
  readonly runs: number;
  /** ms each timer fired after its time, sorted ascending. */
  readonly latenessMs: number[];
  readonly jobsHeldWhileWaiting: number;
  readonly waitingAtMeasure: number;
  /** MEMORY USAGE of a waiting run's keys, its thread's keys and its share of the timer index. */
  readonly bytesPerWaitingRun: number;
  readonly outcomes: { exactlyOne: number; none: number; several: number; notDone: number };
  readonly kills: number;
  readonly createSeconds: number;
}

export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const i = Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1);
  return sorted[Math.max(0, i)] ?? Number.NaN;
}

async function mapLimit<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T, i: number) => Promise<R>,
): Promise<R[]> {
  const out: R[] = new Array<R>(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      for (let i = next++; i < items.length; i = next++) out[i] = await fn(items[i] as T, i);
    }),
  );
  return out;
}

async function memoryUsage(redis: AnyRedis, keys: readonly string[]): Promise<number> {
  let bytes = 0;
  for (const key of keys) {
    const n = (await redis.call('MEMORY', 'USAGE', key, 'SAMPLES', '0')) as number | null;
    bytes += n ?? 0;
  }
  return bytes;
}

/** Bytes a waiting run holds (sampled on up to 50 runs). */
async function bytesPerRun(
  redis: AnyRedis,
  keys: BatonKeys,
  runIds: readonly string[],
): Promise<number> {
  const sample = runIds.filter((_, i) => i % Math.max(1, Math.floor(runIds.length / 50)) === 0);
  let total = 0;
  for (const runId of sample) {
    const rk = keys.run(runId);
    total += await memoryUsage(redis, Object.values(rk));
    const [tenant, thread] = await redis.hmget(rk.cp, 'tenant', 'thread');
    if (tenant && thread)
      total += await memoryUsage(redis, Object.values(keys.thread(tenant, thread)));
  }
  // The timer index: its shards' bytes over their entries.
  let timerBytes = 0;
  let timerEntries = 0;
  for (const key of await redis.keys(`${keys.prefix}:{timers:*`)) {
    timerBytes += await memoryUsage(redis, [key]);
    timerEntries += await redis.zcard(key);
  }
  return total / Math.max(1, sample.length) + (timerEntries > 0 ? timerBytes / timerEntries : 0);
}

export async function runTimerLoad(opts: TimerLoadOptions): Promise<TimerLoadResult> {
  const prefix = testPrefix();
  const keys = new BatonKeys(prefix);
  const key = `timer-load-${prefix}`;
  const workerEnv = {
    TIMER_SWEEP_INTERVAL_MS: '200',
    WORKER_CONCURRENCY: '64',
    ...(opts.redisProcess ? { BATON_DURABILITY: 'strict' } : {}),
    ...opts.workerEnv,
  };
  const spawn = (): Promise<WorkerProcess> =>
    spawnWorker({
      redisUrl: opts.redisUrl,
      prefix,
      agents: 'bench',
      probes: false,
      env: workerEnv,
    });
  const workers: WorkerProcess[] = [];
  for (let i = 0; i < opts.workers; i += 1) workers.push(await spawn());
  const config = loadApiConfig({
    REDIS_URL: opts.redisUrl,
    BATON_PREFIX: prefix,
    API_KEYS: `timers:sha256:${hashKey(key)}`,
    LOG_LEVEL: 'silent',
    ...(opts.redisProcess ? { BATON_DURABILITY: 'strict' } : {}),
  });
  const api: RunningApi = await startApi({
    config,
    port: 0,
    host: '127.0.0.1',
    logger: silentLogger,
  });
  const client = new ApiClient(api.url, key);
  const redis = testRedis(opts.redisUrl);
  let kills = 0;
  let killer: NodeJS.Timeout | undefined;
  try {
    // Every run's timer is due at an absolute instant: the creates take a while, the first timer
    // comes `leadMs` after the estimated end of the creates.
    const t0 = Date.now();
    // ~10 ms a create on a loaded 2-core machine: 15 ms each, so the timers start after them.
    const estimate = Math.max(5_000, opts.runs * 15);
    const firstAt = t0 + estimate + opts.leadMs;
    opts.log(`creating ${opts.runs} ${opts.mode} runs`);
    const c0 = performance.now();
    const runIds = await mapLimit(
      Array.from({ length: opts.runs }, (_, i) => i),
      opts.parallelism,
      async (i) => {
        const dueAt = Math.round(firstAt + (i * opts.spreadMs) / opts.runs);
        const body =
          opts.mode === 'deadline'
            ? {
                agent: 'bench-approval',
                input: { messages: [{ role: 'user', content: '{"deltas":1}' }] },
                options: {
                  deadline: {
                    timeout: Math.max(1, Math.round(dueAt - Date.now())),
                    outcome: { action: 'deny', reason: 'load' },
                  },
                },
              }
            : {
                agent: 'bench-sleep',
                input: { messages: [{ role: 'user', content: `sleep until ${dueAt}` }] },
              };
        const res = await client.post<CreateRunResponse>('/v1/runs', body);
        if (res.status !== 202)
          throw new Error(`create: ${res.status} ${JSON.stringify(res.body)}`);
        return res.body.runId;
      },
    );
    const createSeconds = (performance.now() - c0) / 1000;
    opts.log(`created in ${createSeconds.toFixed(1)} s; waiting for them to park`);
    let waiting = 0;
    const parkBy = firstAt;
    while (Date.now() < parkBy - 500) {
      waiting = Number(await redis.zcard(`${prefix}:runs:waiting`));
      if (waiting >= opts.runs) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    // Counted waiting by the commit that parked it, a run's step job may still be completing.
    let jobsHeldWhileWaiting = await heldJobs(redis, prefix);
    for (let i = 0; i < 20 && jobsHeldWhileWaiting > 0; i += 1) {
      await new Promise((r) => setTimeout(r, 250));
      jobsHeldWhileWaiting = await heldJobs(redis, prefix);
    }
    const bytes = await bytesPerRun(redis, keys, runIds);
    opts.log(`${waiting} waiting, ${jobsHeldWhileWaiting} jobs held, ${Math.round(bytes)} B/run`);

    // Restarts come while every run waits, before the first timer is due: what they test is
    // that the timers outlive them (they are in Redis, on disk in strict mode), not an outage's
    // length.
    if (opts.restartWorkers) {
      opts.log('restarting every worker');
      const old = workers.splice(0);
      for (const w of old) w.kill('SIGTERM');
      await Promise.all(old.map((w) => w.waitForExit(15_000).catch(() => w.kill('SIGKILL'))));
      for (let i = 0; i < opts.workers; i += 1) workers.push(await spawn());
    }
    if (opts.redisProcess) {
      opts.log('kill -9 of Redis, then a restart');
      await opts.redisProcess.kill('SIGKILL');
      await opts.redisProcess.start();
    }
    if (Date.now() >= firstAt)
      opts.log(`the restarts ended ${Date.now() - firstAt} ms after the first timer: raise leadMs`);
    const lastAt = firstAt + opts.spreadMs;
    if (opts.killEveryMs > 0)
      killer = setInterval(() => {
        const victim = workers.shift();
        if (!victim) return;
        victim.kill('SIGKILL');
        kills += 1;
        void spawn().then(
          (w) => workers.push(w),
          (err: unknown) => opts.log(`respawn failed: ${String(err)}`),
        );
      }, opts.killEveryMs);

    // Every run ends (deny, or wake and finish) soon after its timer.
    const deadline = lastAt + 60_000;
    const finished = new Set<string>();
    while (finished.size < runIds.length && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 1_000));
      const open = runIds.filter((id) => !finished.has(id));
      await mapLimit(open, opts.parallelism, async (id) => {
        const status = await redis.hget(keys.run(id).cp, 'status').catch(() => null);
        if (status === 'done') finished.add(id);
      });
    }
    clearInterval(killer);
    opts.log(`${finished.size} of ${runIds.length} done; reading their logs`);
    const outcomes = { exactlyOne: 0, none: 0, several: 0, notDone: runIds.length - finished.size };
    const lateness: number[] = [];
    await mapLimit(runIds, opts.parallelism, async (runId) => {
      if (!finished.has(runId)) return;
      const events: RunEvent[] = eventsOf(await client.stream(`/v1/runs/${runId}/events`));
      const expired = events.filter((e) => e.type === 'tool_call.deadline_expired');
      const snap = (await client.get<RunSnapshot>(`/v1/runs/${runId}`)).body;
      const fromDeadline = snap.decisions.filter((d) => d.source === 'deadline');
      if (expired.length === 1 && fromDeadline.length === 1) outcomes.exactlyOne += 1;
      else if (expired.length === 0) outcomes.none += 1;
      else outcomes.several += 1;
      for (const e of expired)
        if (e.type === 'tool_call.deadline_expired') lateness.push(e.at - e.deadlineAt);
    });
    lateness.sort((a, b) => a - b);
    return {
      runs: opts.runs,
      latenessMs: lateness,
      jobsHeldWhileWaiting,
      waitingAtMeasure: waiting,
      bytesPerWaitingRun: Math.round(bytes),
      outcomes,
      kills,
      createSeconds: Math.round(createSeconds * 10) / 10,
    };
  } finally {
    clearInterval(killer);
    await api.close();
    for (const w of workers) w.kill('SIGKILL');
    await Promise.all(workers.map((w) => w.waitForExit(10_000).catch(() => undefined)));
    redis.disconnect();
  }
}
